/**
 * The lean door for plain unary gRPC-web calls (for speed: docs/performance.md), on HTTP/1.1 and h2. Why: see
 * grpc.ts — connect-node's per-call machinery was most of a gRPC-web call's server CPU.
 *
 * Taken: POST to a unary method's exact path, content type exactly `application/grpc-web` or
 * `application/grpc-web+proto`, no `grpc-encoding` (or identity), no `grpc-timeout` or a valid
 * one within the ceiling (served as connect-node serves it: `timeoutMs()` counts down, the
 * signal aborts with DEADLINE_EXCEEDED — see shared.ts createLeanContext), and a body that is
 * one uncompressed message within the size limit. The wrapped implementation
 * (call pipeline) is called directly; the answer is what connect-node's gRPC-web handler
 * writes — `writeHead`, the data frame (absent on error), the trailer frame (flag 0x80, the
 * trailers as `name: value\r\n` lines), `end` — through the same response calls, so
 * conformProtocolErrors rewrites the trailer frame exactly as it does for connect-node.
 *
 * Handed to connect-node: `grpc-web-text` and `+json`, malformed, repeated or over-the-ceiling
 * `grpc-timeout` values (connect-node's own INVALID_ARGUMENT), compressed requests, and bodies
 * that are oversized, truncated, repeated or undecodable (replayed).
 */
import type http from "node:http";
import {
  compressionNegotiate,
  encodeEnvelope,
  envelopeCompress,
  parseGrpcWebTimeout as parseTimeout,
  trailerFlag,
  trailerSerialize,
} from "../connect-internals.js";
import {
  ACCEPT_COMPRESSION,
  COMPRESS_MIN_BYTES,
  type Compression,
  createLeanContext,
  type FastUnaryOptions,
  invokeForFrame,
  type NodeRequest,
  parseDeadline,
  type NodeResponse,
  readEnvelopedMessage,
  type Route,
  single,
  toNodeHeaders,
  unaryRoutes,
} from "./shared.js";

/** As createFastGrpcUnary: true = taken (may still call `fallback`), false = untouched. */
export function createFastGrpcWebUnary(options: FastUnaryOptions) {
  const routes = unaryRoutes(options);
  const max = options.readMaxBytes;
  const maxTimeoutMs = options.maxTimeoutMs;

  return function tryServe(req: NodeRequest, res: NodeResponse, fallback: () => void): boolean {
    const h = req.headers;
    const ct = h["content-type"];
    if (ct !== "application/grpc-web" && ct !== "application/grpc-web+proto") return false;
    if (req.method !== "POST") return false;
    const encoding = h["grpc-encoding"];
    if (encoding !== undefined && encoding !== "identity") return false;
    const route = routes.get(req.url ?? "");
    if (route === undefined) return false;
    const deadline = parseDeadline(h["grpc-timeout"], parseTimeout, maxTimeoutMs);
    if (deadline === false) return false;
    // connect-node answers both accepted content types with application/grpc-web+proto.
    const context = createLeanContext(
      route.method,
      "grpc-web",
      req,
      res,
      options.shutdownSignal,
      { "content-type": "application/grpc-web+proto" },
      { "grpc-status": "0" },
      deadline,
    );
    if (!context) return false;
    const compression = compressionNegotiate(ACCEPT_COMPRESSION, null, single(req, "grpc-accept-encoding"), "grpc-accept-encoding");
    readEnvelopedMessage(
      req,
      res,
      options.onFailure,
      route,
      max,
      (input) => {
        invoke(route, input, context, res, compression.response).catch((err: unknown) => options.onFailure(req, res, err));
      },
      fallback,
    );
    return true;
  };
}

async function invoke(
  route: Route,
  input: unknown,
  context: NonNullable<ReturnType<typeof createLeanContext>>,
  res: NodeResponse,
  responseCompression: Compression | null,
): Promise<void> {
  const frame = await invokeForFrame(route, input, context, responseCompression);
  const trailer = await envelopeCompress({ flags: trailerFlag, data: trailerSerialize(context.responseTrailer) }, responseCompression, COMPRESS_MIN_BYTES);
  // The same calls, in the same order, as connect-node's universalResponseToNodeResponse:
  // one write per frame.
  if (res.destroyed) return;
  const out = res as http.ServerResponse;
  out.writeHead(200, toNodeHeaders(context.responseHeader));
  if (frame) out.write(frame);
  out.write(encodeEnvelope(trailer.flags, trailer.data));
  out.end();
}
