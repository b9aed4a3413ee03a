/**
 * A lean door for plain unary gRPC calls (issue 8 §3).
 *
 * Why it exists: the bench's profile showed ~180 µs of every gRPC call spent in connect-node's
 * own protocol layer (per-call AbortSignals and their DOMException, async-iterable pipelines,
 * event listeners), twice what a @grpc/grpc-js server pays for the same handler. For the one
 * shape our API really uses — one uncompressed protobuf request, one response — this module
 * reads the request, calls THE SAME wrapped implementation connect-node would call (the call
 * pipeline: auth hooks, error mapping, call log) and writes the answer with connect's own
 * helpers (serialization lookup, compression negotiation, `setTrailerStatus`) through the same
 * `res.writeHead` / `addTrailers` / `end` calls connect-node's adapter makes, so the response
 * passes through the same conformProtocolErrors patch and is byte-for-byte what connect-node
 * sends (test/server/fast-unary.test.ts proves it request by request, with the fast path on
 * and off).
 *
 * Anything else falls through to connect-node, which stays the reference: HTTP/1.1, a content
 * type other than application/grpc or application/grpc+proto, a compressed request
 * (`grpc-encoding` other than identity), a `grpc-timeout` (deadlines and their ceiling stay
 * connect-node's), a path that is not a unary method of ours (streaming, reflection, health),
 * and any request body that is not exactly one well-formed, uncompressed message within the
 * size limit (oversized, truncated, two messages, undecodable bytes). In that last case the
 * bytes already read are replayed to connect-node, which then gives its usual answer.
 */
import type http2 from "node:http2";
import { create, type DescMessage, type DescMethod, isMessage } from "@bufbuild/protobuf";
import { Code, ConnectError, createContextValues, type HandlerContext } from "@connectrpc/connect";
import { compressionBrotli, compressionGzip } from "@connectrpc/connect-node";
import {
  compressionNegotiate,
  createLinkedAbortController,
  createMethodSerializationLookup,
  encodeEnvelope,
  envelopeCompress,
  type MethodSerializationLookup,
} from "@connectrpc/connect/protocol";
import { setTrailerStatus } from "@connectrpc/connect/protocol-grpc";

type Unary = (request: unknown, context: HandlerContext) => unknown;

export interface FastGrpcOptions {
  /** Every unary method with its wrapped (call-pipeline) implementation. */
  readonly methods: ReadonlyArray<{ readonly method: DescMethod; readonly impl: Unary }>;
  /** The same readMaxBytes connect-node is given. */
  readonly readMaxBytes: number;
  /** The same JSON options connect-node is given (the lookup needs them; gRPC uses binary). */
  readonly jsonOptions: Parameters<typeof createMethodSerializationLookup>[2];
  readonly shutdownSignal: AbortSignal;
}

/** connect-node's defaults, which our adapter does not override (create-app.ts). */
const ACCEPT_COMPRESSION = [compressionGzip, compressionBrotli];
const COMPRESS_MIN_BYTES = 1024;

interface Route {
  readonly method: DescMethod;
  readonly impl: Unary;
  readonly serialization: MethodSerializationLookup<DescMessage, DescMessage>;
}

/**
 * Returns a handler that serves the request and returns true, or returns false having
 * touched nothing (the caller then hands the request to connect-node). `fallback` is called
 * instead of returning false once the body has started to be read.
 */
export function createFastGrpcUnary(options: FastGrpcOptions) {
  const routes = new Map<string, Route>();
  for (const { method, impl } of options.methods) {
    if (method.methodKind !== "unary") continue;
    routes.set(`/${method.parent.typeName}/${method.name}`, {
      method,
      impl,
      serialization: createMethodSerializationLookup(method, undefined, options.jsonOptions, {
        readMaxBytes: options.readMaxBytes,
        writeMaxBytes: 0xffffffff,
      }),
    });
  }

  return function tryServe(
    req: http2.Http2ServerRequest,
    res: http2.Http2ServerResponse,
    fallback: () => void,
  ): boolean {
    const h = req.headers;
    const ct = h["content-type"];
    if (ct !== "application/grpc" && ct !== "application/grpc+proto") return false;
    if (req.method !== "POST" || h["grpc-timeout"] !== undefined) return false;
    const encoding = h["grpc-encoding"];
    if (encoding !== undefined && encoding !== "identity") return false;
    const route = routes.get(req.url);
    if (route === undefined) return false;
    const accept = h["grpc-accept-encoding"];
    const compression = compressionNegotiate(
      ACCEPT_COMPRESSION,
      null,
      typeof accept === "string" ? accept : null,
      "grpc-accept-encoding",
    );

    const chunks: Buffer[] = [];
    let length = 0;
    let gaveUp = false;
    const giveUp = () => {
      gaveUp = true;
      req.off("data", onData);
      req.off("end", onEnd);
      req.pause();
      replayTo(req, chunks);
      fallback();
    };
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      length += chunk.length;
      // Oversized: connect-node refuses as soon as the envelope header says so.
      if (length >= 5 && readLength(chunks) > options.readMaxBytes) giveUp();
    };
    const onEnd = () => {
      if (gaveUp) return;
      const body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, length);
      if (body.length < 5 || body[0] !== 0 || body.readUInt32BE(1) !== body.length - 5) {
        giveUp();
        return;
      }
      let input: unknown;
      try {
        input = route.serialization.getI(true).parse(body.subarray(5));
      } catch {
        giveUp();
        return;
      }
      invoke(route, input, req, res, compression.response, options.shutdownSignal);
    };
    req.on("data", onData);
    req.on("end", onEnd);
    return true;
  };
}

/** The payload length in the first envelope header (the chunks hold at least 5 bytes). */
function readLength(chunks: Buffer[]): number {
  const head = chunks[0].length >= 5 ? chunks[0] : Buffer.concat(chunks).subarray(0, 5);
  return head.readUInt32BE(1);
}

/**
 * Makes connect-node read `consumed` first, then whatever the stream still delivers.
 * connect-node reads the request body with `for await` over the request object.
 */
function replayTo(req: http2.Http2ServerRequest, consumed: Buffer[]): void {
  const rest = req.complete ? undefined : (req as unknown as AsyncIterable<Buffer>)[Symbol.asyncIterator].bind(req);
  Object.defineProperty(req, Symbol.asyncIterator, {
    configurable: true,
    value: async function* () {
      try {
        for (const c of consumed) yield c;
        if (rest) yield* { [Symbol.asyncIterator]: rest };
      } finally {
        // What ending Node's own request iterator does (connect-node stops reading at an
        // oversized envelope): destroy the request, so the unread rest cannot pin the stream.
        if (!req.readableEnded) req.destroy();
      }
    },
  });
}

async function invoke(
  route: Route,
  input: unknown,
  req: http2.Http2ServerRequest,
  res: http2.Http2ServerResponse,
  responseCompression: (typeof ACCEPT_COMPRESSION)[number] | null,
  shutdownSignal: AbortSignal,
): Promise<void> {
  const context = createLeanContext(route.method, req, shutdownSignal);
  if (responseCompression) context.responseHeader.set("grpc-encoding", responseCompression.name);
  let frame: Uint8Array | undefined;
  try {
    const out = await route.impl(input, context);
    const message = isMessage(out, route.method.output) ? out : create(route.method.output, out as never);
    const data = route.serialization.getO(true).serialize(message);
    const env = await envelopeCompress({ flags: 0, data }, responseCompression, COMPRESS_MIN_BYTES);
    frame = encodeEnvelope(env.flags, env.data);
  } catch (err) {
    setTrailerStatus(
      context.responseTrailer,
      err instanceof ConnectError ? err : new ConnectError("internal error", Code.Internal, undefined, undefined, err),
    );
  } finally {
    context.cleanup();
  }
  // The same calls, in the same order, as connect-node's universalResponseToNodeResponse.
  if (res.closed || res.stream.destroyed) return;
  res.writeHead(200, toNodeHeaders(context.responseHeader));
  if (frame) res.write(frame);
  res.addTrailers(toNodeHeaders(context.responseTrailer));
  res.end();
}

interface LeanContext extends HandlerContext {
  cleanup(): void;
}

/**
 * A HandlerContext like connect's createHandlerContext builds, except that its AbortSignal is
 * only created if someone reads `signal` (no unary method of ours does): creating and then
 * aborting it on every call was the largest single cost in the profile.
 */
function createLeanContext(method: DescMethod, req: http2.Http2ServerRequest, shutdownSignal: AbortSignal): LeanContext {
  let controller: AbortController | undefined;
  let onClose: (() => void) | undefined;
  const requestHeader = new Headers();
  const nodeHeaders = req.headers;
  for (const k in nodeHeaders) {
    if (k.charCodeAt(0) === 58 /* ":" */) continue;
    const v = nodeHeaders[k];
    if (v === undefined) continue;
    if (Array.isArray(v)) for (const e of v) requestHeader.append(k, e);
    else requestHeader.append(k, String(v));
  }
  const secure = "encrypted" in req.socket && (req.socket as { encrypted?: boolean }).encrypted;
  return {
    service: method.parent,
    method,
    protocolName: "grpc",
    requestMethod: "POST",
    url: new URL(req.url, `${secure ? "https" : "http"}://${req.authority}`).toString(),
    get signal() {
      if (!controller) {
        const requestController = new AbortController();
        onClose = () => requestController.abort();
        req.once("close", onClose);
        controller = createLinkedAbortController(requestController.signal, shutdownSignal);
      }
      return controller.signal;
    },
    timeoutMs: () => undefined,
    requestHeader,
    // connect-node answers both accepted content types with application/grpc+proto.
    responseHeader: new Headers({ "content-type": "application/grpc+proto" }),
    responseTrailer: new Headers({ "grpc-status": "0" }),
    values: createContextValues(),
    abort(reason?: unknown) {
      controller?.abort(reason);
    },
    cleanup() {
      if (!controller) return;
      if (onClose) req.off("close", onClose);
      controller.abort();
    },
  } as LeanContext;
}

function toNodeHeaders(headers: Headers): Record<string, string | string[]> {
  const o: Record<string, string | string[]> = Object.create(null);
  headers.forEach((value, key) => {
    // Headers.forEach joins repeated values with ", " as connect's webHeaderToNodeHeaders
    // does (set-cookie aside, which gRPC never carries).
    o[key] = value;
  });
  return o;
}
