/**
 * The text decoder of every JSON request body connect-node and the fast unary doors read
 * (Connect JSON, gRPC and gRPC-web `+json`). connect's default TextDecoder replaces bytes that
 * are not UTF-8 with U+FFFD, so a description sent with a stray 0xFF byte was stored as
 * something the client never wrote. The protobuf doors (protobuf-es checks UTF-8 in string
 * fields) and REST (bind-request.ts) already refuse such bytes; this makes JSON refuse them too.
 *
 * A fatal TextDecoder validates while it decodes (the same single pass as the lenient one,
 * a few nanoseconds more per body), so the fast path pays no separate scan. One instance is
 * enough: decode() without `stream` starts afresh on every call, also after a failure.
 */
import { Code, ConnectError } from "@connectrpc/connect";

const fatal = new TextDecoder("utf-8", { fatal: true });

export const strictUtf8Decoder = {
  decode(input?: Uint8Array): string {
    try {
      return fatal.decode(input);
    } catch {
      // No field is named: the bytes are refused before the JSON is parsed. ErrorInfo is
      // added on the way out (protocol-errors.ts), as for every error connect-node raises.
      throw new ConnectError("Invalid argument: the request body is not valid UTF-8", Code.InvalidArgument);
    }
  },
};
