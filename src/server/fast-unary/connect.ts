/**
 * The lean door for plain Connect unary calls (for speed: docs/performance.md), on HTTP/1.1 and h2. Why: see
 * grpc.ts — connect-node's per-call machinery was most of a Connect call's cost.
 *
 * Taken: POST to a unary method's exact path (no query string), content type exactly
 * `application/json` or `application/proto`, no `content-encoding` (or identity),
 * `connect-timeout-ms` absent or valid within the ceiling (served as connect-node serves it:
 * `timeoutMs()` counts down, the signal aborts with DEADLINE_EXCEEDED — see shared.ts
 * createLeanContext), `connect-protocol-version` absent or 1. The wrapped implementation
 * (call pipeline) is called directly and the answer is written with connect's own helpers
 * (serialization, compression negotiation, errorToJsonBytes, trailerMux; JSON answers through
 * the compiled writer of json-writer.ts, which writes the same bytes; an error's HTTP status
 * from src/errors/codes.ts, whose table is connect's)
 * through the same writeHead / write / end calls connect-node's adapter makes, so
 * conformProtocolErrors rewrites errors exactly as it does for connect-node.
 *
 * Handed to connect-node (bytes already read are replayed): anything else — GET requests,
 * streaming content types, malformed, repeated or over-the-ceiling `connect-timeout-ms`
 * values (connect-node's own INVALID_ARGUMENT), compressed or oversized bodies, a content-length that does not
 * match the body, bodies that do not decode.
 */
import { create, isMessage } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { httpStatusOf } from "../../errors/codes.js";
import { compressionNegotiate, errorToJsonBytes, parseConnectTimeout as parseTimeout, trailerMux } from "../connect-internals.js";
import {
  ACCEPT_COMPRESSION,
  COMPRESS_MIN_BYTES,
  type Compression,
  createLeanContext,
  type FastUnaryOptions,
  type NodeRequest,
  type NodeResponse,
  parseDeadline,
  readBody,
  type Route,
  serializeJson,
  single,
  toNodeHeaders,
  unaryRoutes,
} from "./shared.js";

/** As createFastGrpcUnary: true = taken (may still call `fallback`), false = untouched. */
export function createFastConnectUnary(options: FastUnaryOptions) {
  const routes = unaryRoutes(options);
  const max = options.readMaxBytes;
  const jsonOptions = options.jsonOptions;
  const maxTimeoutMs = options.maxTimeoutMs;

  return function tryServe(req: NodeRequest, res: NodeResponse, fallback: () => void): boolean {
    const h = req.headers;
    const ct = h["content-type"];
    if (ct !== "application/json" && ct !== "application/proto") return false;
    if (req.method !== "POST") return false;
    const encoding = h["content-encoding"];
    if (encoding !== undefined && encoding !== "identity") return false;
    const version = h["connect-protocol-version"];
    if (version !== undefined && version !== "1") return false;
    const route = routes.get(req.url ?? "");
    if (route === undefined) return false;
    const declared = h["content-length"];
    const declaredLength = declared === undefined ? undefined : Number(declared);
    if (declaredLength !== undefined && !(declaredLength <= max)) return false;
    const deadline = parseDeadline(h["connect-timeout-ms"], parseTimeout, maxTimeoutMs);
    if (deadline === false) return false;
    const binary = ct === "application/proto";
    const context = createLeanContext(route.method, "connect", req, res, options.shutdownSignal, { "content-type": ct }, {}, deadline);
    if (!context) return false;
    const compression = compressionNegotiate(ACCEPT_COMPRESSION, null, single(req, "accept-encoding"), "accept-encoding");
    readBody(
      req,
      res,
      options.onFailure,
      (_chunks, length) => length > max,
      (body) => {
        if (declaredLength !== undefined && body.length !== declaredLength) return false;
        let input: unknown;
        try {
          input = route.serialization.getI(binary).parse(body);
        } catch {
          return false;
        }
        invoke(route, binary, input, context, res, compression.response, jsonOptions).catch((err: unknown) => options.onFailure(req, res, err));
        return true;
      },
      fallback,
    );
    return true;
  };
}

async function invoke(
  route: Route,
  binary: boolean,
  input: unknown,
  context: NonNullable<ReturnType<typeof createLeanContext>>,
  res: NodeResponse,
  responseCompression: Compression | null,
  jsonOptions: FastUnaryOptions["jsonOptions"],
): Promise<void> {
  let status = 200;
  let body: Uint8Array;
  try {
    const out = await route.impl(input, context);
    const message = isMessage(out, route.method.output) ? out : create(route.method.output, out as never);
    body = binary ? route.serialization.getO(true).serialize(message) : serializeJson(route, message);
  } catch (err) {
    const error = err instanceof ConnectError ? err : new ConnectError("internal error", Code.Internal, undefined, undefined, err);
    status = httpStatusOf(error.code);
    context.responseHeader.set("content-type", "application/json");
    error.metadata.forEach((value, key) => {
      context.responseHeader.set(key, value);
    });
    body = errorToJsonBytes(error, jsonOptions ?? {});
  } finally {
    context.cleanup();
  }
  if (responseCompression && body.byteLength >= COMPRESS_MIN_BYTES) {
    body = await responseCompression.compress(body);
    context.responseHeader.set("content-encoding", responseCompression.name);
  }
  const header = trailerMux(context.responseHeader, context.responseTrailer);
  header.set("content-length", body.byteLength.toString(10));
  // The same calls, in the same order, as connect-node's universalResponseToNodeResponse.
  if (res.destroyed) return;
  const out = res as import("node:http").ServerResponse;
  out.writeHead(status, toNodeHeaders(header));
  out.write(body);
  out.end();
}
