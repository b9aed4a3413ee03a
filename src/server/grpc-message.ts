/**
 * Spec-conformant `grpc-message` on the gRPC door.
 *
 * The gRPC HTTP/2 protocol percent-encodes only the bytes outside 0x20-0x7E, and '%'.
 * connect-node encodes the message with encodeURIComponent, which also encodes ':', ',', '$'
 * and friends; clients that decode exactly what the spec requires (grpc-js uses decodeURI,
 * which leaves %3A alone) then show "Invalid argument%3A name%3A …". This rewrites the
 * header in the trailers (and in trailers-only responses) of gRPC calls before Node sends
 * them. gRPC-web and Connect are untouched: their clients decode with decodeURIComponent.
 */
import type http from "node:http";
import type http2 from "node:http2";

type Req = http.IncomingMessage | http2.Http2ServerRequest;
type Res = http.ServerResponse | http2.Http2ServerResponse;
type NodeHeaders = Record<string, string | string[] | number | undefined>;

/** True for gRPC over HTTP/2 (not gRPC-web). */
export function isGrpcRequest(req: Req): boolean {
  const ct = req.headers["content-type"];
  return typeof ct === "string" && ct.startsWith("application/grpc") && !ct.startsWith("application/grpc-web");
}

/** Patches `res` so any grpc-message it sends is encoded as the gRPC spec says. */
export function conformGrpcMessage(res: Res): void {
  const target = res as unknown as {
    writeHead: (status: number, headers?: NodeHeaders) => unknown;
    addTrailers: (headers: NodeHeaders) => void;
  };
  const writeHead = target.writeHead;
  const addTrailers = target.addTrailers;
  target.writeHead = function (this: unknown, status: number, headers?: NodeHeaders) {
    if (headers) fix(headers);
    return writeHead.call(this, status, headers);
  };
  target.addTrailers = function (this: unknown, headers: NodeHeaders) {
    fix(headers);
    addTrailers.call(this, headers);
  };
}

function fix(headers: NodeHeaders): void {
  const value = headers["grpc-message"];
  if (typeof value !== "string") return;
  let text: string;
  try {
    text = decodeURIComponent(value);
  } catch {
    return;
  }
  headers["grpc-message"] = encodeGrpcMessage(text);
}

/** Percent-encodes the UTF-8 bytes outside 0x20-0x7E and '%' (gRPC PROTOCOL-HTTP2). */
export function encodeGrpcMessage(text: string): string {
  let out = "";
  for (const byte of Buffer.from(text, "utf8")) {
    out +=
      byte >= 0x20 && byte <= 0x7e && byte !== 0x25
        ? String.fromCharCode(byte)
        : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}
