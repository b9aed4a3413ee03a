/**
 * A lean door for plain unary gRPC calls (for speed: docs/performance.md).
 *
 * Why it exists: the bench's profile showed most of every gRPC call's server CPU spent in
 * connect-node's own protocol layer (per-call AbortSignals and their DOMException,
 * async-iterable pipelines, event listeners), far more than a @grpc/grpc-js server pays for
 * the same handler (the figures are in docs/performance.md). For the one
 * shape our API really uses — one uncompressed protobuf request, one response — this module
 * reads the request, calls THE SAME wrapped implementation connect-node would call (the call
 * pipeline: auth hooks, error mapping, call log) and writes the answer with connect's own
 * helpers (serialization lookup, compression negotiation, `setTrailerStatus`) through the same
 * `res.writeHead` / `addTrailers` / `end` calls connect-node's adapter makes, so the response
 * passes through the same conformProtocolErrors patch and is byte-for-byte what connect-node
 * sends (test/server/fast-unary.test.ts proves it request by request, with the fast path on
 * and off). connect.ts and grpc-web.ts do the same for Connect and gRPC-web unary; shared.ts
 * holds what they share.
 *
 * Deadlines: a valid `grpc-timeout` within the ceiling (maxTimeoutMs) is served here, as
 * connect-node serves it — `context.timeoutMs()` counts down and `context.signal` aborts with
 * DEADLINE_EXCEEDED when it passes (shared.ts parseDeadline / createLeanContext). The published
 * Go SDK sets a deadline on most calls, so without this real clients never took this door.
 *
 * Anything else falls through to connect-node, which stays the reference: HTTP/1.1, a content
 * type other than application/grpc or application/grpc+proto, a compressed request
 * (`grpc-encoding` other than identity), a malformed, repeated or over-the-ceiling
 * `grpc-timeout` (connect-node's INVALID_ARGUMENT, raised before it reads the body), a path
 * that is not a unary method of ours (streaming, reflection, health),
 * and any request body that is not exactly one well-formed, uncompressed message within the
 * size limit (oversized, truncated, two messages, undecodable bytes). In that last case the
 * bytes already read are replayed to connect-node, which then gives its usual answer.
 */
import type http2 from "node:http2";
import { compressionNegotiate, parseGrpcTimeout as parseTimeout } from "../connect-internals.js";
import {
  ACCEPT_COMPRESSION,
  type Compression,
  createLeanContext,
  type FastUnaryOptions,
  invokeForFrame,
  parseDeadline,
  readEnvelopedMessage,
  type Route,
  single,
  toNodeHeaders,
  unaryRoutes,
} from "./shared.js";

/**
 * Returns a handler that either takes the request (true) or returns false having touched
 * nothing, so the caller hands it to connect-node. After taking it, it may still call
 * `fallback` (connect-node) with the body replayed.
 */
export function createFastGrpcUnary(options: FastUnaryOptions) {
  const routes = unaryRoutes(options);
  const max = options.readMaxBytes;
  const maxTimeoutMs = options.maxTimeoutMs;

  return function tryServe(req: http2.Http2ServerRequest, res: http2.Http2ServerResponse, fallback: () => void): boolean {
    const h = req.headers;
    const ct = h["content-type"];
    if (ct !== "application/grpc" && ct !== "application/grpc+proto") return false;
    if (req.method !== "POST" || req.authority === undefined) return false;
    const encoding = h["grpc-encoding"];
    if (encoding !== undefined && encoding !== "identity") return false;
    const route = routes.get(req.url);
    if (route === undefined) return false;
    // Measured from here, before the body is read, as connect-node starts its clock when its
    // handler starts (createHandlerContext), not when the message has arrived.
    const deadline = parseDeadline(h["grpc-timeout"], parseTimeout, maxTimeoutMs);
    if (deadline === false) return false;
    const compression = compressionNegotiate(ACCEPT_COMPRESSION, null, single(req, "grpc-accept-encoding"), "grpc-accept-encoding");
    readEnvelopedMessage(
      req,
      res,
      options.onFailure,
      route,
      max,
      (input) => {
        invoke(route, input, req, res, compression.response, options.shutdownSignal, deadline).catch((err: unknown) => options.onFailure(req, res, err));
      },
      fallback,
    );
    return true;
  };
}

async function invoke(
  route: Route,
  input: unknown,
  req: http2.Http2ServerRequest,
  res: http2.Http2ServerResponse,
  responseCompression: Compression | null,
  shutdownSignal: AbortSignal,
  deadline: number | undefined,
): Promise<void> {
  // connect-node answers both accepted content types with application/grpc+proto.
  const context = createLeanContext(
    route.method,
    "grpc",
    req,
    res,
    shutdownSignal,
    { "content-type": "application/grpc+proto" },
    { "grpc-status": "0" },
    deadline,
  );
  if (!context) throw new Error("unreachable: authority checked");
  const frame = await invokeForFrame(route, input, context, responseCompression);
  // The same calls, in the same order, as connect-node's universalResponseToNodeResponse.
  if (res.closed || res.stream.destroyed) return;
  res.writeHead(200, toNodeHeaders(context.responseHeader));
  if (frame) res.write(frame);
  res.addTrailers(toNodeHeaders(context.responseTrailer));
  res.end();
}
