/**
 * What the lean unary doors (grpc.ts, connect.ts, grpc-web.ts) share: the table of wrapped
 * unary methods, reading a request body with the option to hand it to connect-node after all,
 * the client's deadline, and a HandlerContext without connect's per-call AbortSignal (created
 * only if read, with the deadline's timer only then). See grpc.ts for why they exist.
 */
import type http from "node:http";
import type http2 from "node:http2";
import { create, type DescMessage, type DescMethod, isMessage } from "@bufbuild/protobuf";
import { Code, ConnectError, createContextValues, type HandlerContext } from "@connectrpc/connect";
import { CALL_META, callMetaOf } from "../../observe/call-meta.js";
import { compressionBrotli, compressionGzip } from "@connectrpc/connect-node";
import {
  createDeadlineSignal,
  createLinkedAbortController,
  createMethodSerializationLookup,
  encodeEnvelope,
  envelopeCompress,
  type MethodSerializationLookup,
  setTrailerStatus,
} from "../connect-internals.js";
import { type JsonWriter, jsonWriterFor } from "../../json/json-writer.js";

export type Unary = (request: unknown, context: HandlerContext) => unknown;
export type NodeRequest = http.IncomingMessage | http2.Http2ServerRequest;
export type NodeResponse = http.ServerResponse | http2.Http2ServerResponse;

export interface FastUnaryOptions {
  /** Every method with its wrapped (call-pipeline) implementation; non-unary ones are skipped. */
  readonly methods: ReadonlyArray<{ readonly method: DescMethod; readonly impl: Unary }>;
  /** The same readMaxBytes connect-node is given. */
  readonly readMaxBytes: number;
  /** The same JSON options connect-node is given. */
  readonly jsonOptions: Parameters<typeof createMethodSerializationLookup>[2];
  /** The same maxTimeoutMs (deadline ceiling) connect-node is given. */
  readonly maxTimeoutMs: number;
  readonly shutdownSignal: AbortSignal;
  /**
   * A request this door took failed outside the call pipeline (reading, answering): the
   * dispatcher's handler, which logs it and answers INTERNAL or cuts the request off. The
   * pipeline turns the implementation's own errors into answers; this is for the rest.
   */
  readonly onFailure: (req: NodeRequest, res: NodeResponse, err: unknown) => void;
}

/** connect-node's defaults, which create-app.ts does not override. */
export const ACCEPT_COMPRESSION = [compressionGzip, compressionBrotli];
export const COMPRESS_MIN_BYTES = 1024;
export type Compression = (typeof ACCEPT_COMPRESSION)[number];

export interface Route {
  readonly method: DescMethod;
  readonly impl: Unary;
  readonly serialization: MethodSerializationLookup<DescMessage, DescMessage>;
  /**
   * The response's JSON value as protobuf-es `toJson` writes it with the server's JSON
   * options (json-writer.ts, proto3 mode); undefined where no writer is compiled for the
   * type or the options are ones it does not implement.
   */
  readonly writeJson: JsonWriter | undefined;
}

/** "/package.Service/Method" → route, for unary methods only (the paths connect-node serves). */
export function unaryRoutes(options: FastUnaryOptions): Map<string, Route> {
  const routes = new Map<string, Route>();
  for (const { method, impl } of options.methods) {
    if (method.methodKind !== "unary") continue;
    routes.set(`/${method.parent.typeName}/${method.name}`, {
      method,
      impl,
      writeJson: writesProto3Json(options.jsonOptions) ? jsonWriterFor(method.output, "proto3") : undefined,
      serialization: createMethodSerializationLookup(method, undefined, options.jsonOptions, {
        readMaxBytes: options.readMaxBytes,
        writeMaxBytes: 0xffffffff,
      }),
    });
  }
  return routes;
}

/** True when `options` write JSON as json-writer.ts's proto3 mode does (alwaysEmitImplicit only). */
function writesProto3Json(options: FastUnaryOptions["jsonOptions"]): boolean {
  return options?.alwaysEmitImplicit === true && !options.enumAsInteger && !options.useProtoFieldName && options.registry === undefined;
}

const textEncoder = new TextEncoder();

/**
 * The response message as Connect JSON bytes, what connect-node's JSON serialization writes
 * (`toJsonString` with the same options, UTF-8 encoded), through the compiled writer when the
 * route has one. A message the writer refuses goes to connect's own serialization, which
 * answers (or words the error) as connect-node would.
 */
export function serializeJson(route: Route, message: unknown): Uint8Array {
  if (route.writeJson) {
    try {
      return textEncoder.encode(JSON.stringify(route.writeJson(message)));
    } catch {
      // fall through
    }
  }
  return route.serialization.getO(false).serialize(message as never);
}

/**
 * Reads the whole body. `tooBig(chunks, length)` is asked after every chunk; when it says yes,
 * or `onBody` returns false, the bytes read so far are replayed to connect-node (`fallback`),
 * followed by whatever the stream still delivers, so it answers as if it had read them itself.
 */
export function readBody(
  req: NodeRequest,
  res: NodeResponse,
  onFailure: FastUnaryOptions["onFailure"],
  tooBig: (chunks: Buffer[], length: number) => boolean,
  onBody: (body: Buffer) => boolean,
  fallback: () => void,
): void {
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
  // These run as stream listeners: a throw here would escape every caller and stop the
  // process, so it becomes this request's failure instead.
  const onData = (chunk: Buffer) => {
    try {
      chunks.push(chunk);
      length += chunk.length;
      if (tooBig(chunks, length)) giveUp();
    } catch (err) {
      onFailure(req, res, err);
    }
  };
  const onEnd = () => {
    if (gaveUp) return;
    try {
      const body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, length);
      if (!onBody(body)) giveUp();
    } catch (err) {
      onFailure(req, res, err);
    }
  };
  req.on("data", onData);
  req.on("end", onEnd);
}

/**
 * Reads a gRPC or gRPC-web request body that must be exactly one uncompressed enveloped
 * message within `max` bytes, and hands its decoded input to `onMessage`. Anything else
 * (oversized — refused by connect-node as soon as the envelope header announces it — truncated,
 * two messages, the compressed flag, undecodable bytes) is replayed to connect-node.
 */
export function readEnvelopedMessage(
  req: NodeRequest,
  res: NodeResponse,
  onFailure: FastUnaryOptions["onFailure"],
  route: Route,
  max: number,
  onMessage: (input: unknown) => void,
  fallback: () => void,
): void {
  readBody(
    req,
    res,
    onFailure,
    (chunks, length) => length >= 5 && firstEnvelopeLength(chunks) > max,
    (body) => {
      if (body.length < 5 || body[0] !== 0 || body.readUInt32BE(1) !== body.length - 5) return false;
      let input: unknown;
      try {
        input = route.serialization.getI(true).parse(body.subarray(5));
      } catch {
        return false;
      }
      onMessage(input);
      return true;
    },
    fallback,
  );
}

/** The payload length in the first envelope header (the chunks hold at least 5 bytes). */
function firstEnvelopeLength(chunks: Buffer[]): number {
  const head = chunks[0].length >= 5 ? chunks[0] : Buffer.concat(chunks).subarray(0, 5);
  return head.readUInt32BE(1);
}

/**
 * Makes connect-node read `consumed` first, then whatever the stream still delivers.
 * connect-node reads the request body with `for await` over the request object.
 * A wrapper of Node's request: docs/architecture.md lists it with the others ("What is
 * patched on Node's request and response objects").
 */
function replayTo(req: NodeRequest, consumed: Buffer[]): void {
  const rest = req.complete ? undefined : (req as unknown as AsyncIterable<Buffer>)[Symbol.asyncIterator].bind(req);
  Object.defineProperty(req, Symbol.asyncIterator, {
    configurable: true,
    value: async function* () {
      // If connect-node stops early (an oversized message), the unread rest is the
      // listener's business, as without the fast path (listener.ts releaseUnreadRequest).
      for (const c of consumed) yield c;
      if (rest) yield* { [Symbol.asyncIterator]: rest };
    },
  });
}

/** connect's parseTimeout (protocol-grpc's for grpc-timeout, protocol-connect's for connect-timeout-ms). */
type ParseTimeout = (value: string | null, maxTimeoutMs: number) => { timeoutMs?: number; error?: ConnectError };

/**
 * The client's deadline as an absolute time (Date.now() + the timeout, as connect-node's
 * createHandlerContext computes it when the call starts), undefined when there is none, or
 * false when the request must go to connect-node: a malformed value, one over the ceiling, or
 * a repeated header. Those are answered by connect-node before it reads the body (an
 * INVALID_ARGUMENT it raises itself); they are rare, gain nothing from a fast path, and
 * leaving them there keeps that answer (and what happens to the unread body) exactly its own.
 *
 * The value is parsed with connect's own exported parseTimeout, so what counts as valid, the
 * unit arithmetic and the ceiling are connect-node's by construction, not a copy of them.
 */
export function parseDeadline(value: string | string[] | undefined, parse: ParseTimeout, maxTimeoutMs: number): number | undefined | false {
  if (value === undefined) return undefined;
  if (typeof value !== "string") return false;
  const { timeoutMs, error } = parse(value, maxTimeoutMs);
  if (error !== undefined || timeoutMs === undefined) return false;
  return Date.now() + timeoutMs;
}

/** Marks a context built by createLeanContext (tests use it to prove the fast path served a call). */
export const LEAN_CONTEXT = Symbol("trellis.fast-unary.lean-context");

const noTimeout = () => undefined;

export interface LeanContext extends HandlerContext {
  /** Releases the AbortSignal's listeners if `signal` was ever read. */
  cleanup(): void;
}

/**
 * A HandlerContext like connect's createHandlerContext builds, except that its AbortSignal is
 * only created if someone reads `signal` (no unary method of ours does): creating and then
 * aborting one on every call (a DOMException each time) was the largest single cost in the
 * profile. Returns undefined where connect-node would fail (no authority; the dispatcher
 * refuses such requests, and malformed authorities, before any door runs: authority.ts).
 *
 * Deadline (`deadline`: parseDeadline's absolute time, or undefined): `timeoutMs()` returns
 * the milliseconds left, computed as connect's context does (a whole-millisecond deadline
 * minus Date.now(), so it may be 0 or negative once passed). connect-node arms a timer that
 * aborts the call's signal with ConnectError("the operation timed out", DEADLINE_EXCEEDED);
 * that signal is the deadline's ONLY effect there (the answer is still whatever the handler
 * returns or throws, whenever it does). Here the timer is armed only when `signal` is first
 * read, for the time then left (connect's own createDeadlineSignal: at once if none is left),
 * and linked first, as connect-node links it, so the reason is the same. A handler cannot
 * tell the difference — the signal is aborted at the same moment with the same reason — and
 * the common call, which never reads `signal`, pays for no timer at all. cleanup() clears it.
 */
export function createLeanContext(
  method: DescMethod,
  protocolName: string,
  req: NodeRequest,
  res: NodeResponse,
  shutdownSignal: AbortSignal,
  responseHeader: Record<string, string>,
  responseTrailer: Record<string, string>,
  deadline: number | undefined,
): LeanContext | undefined {
  const authority = "authority" in req ? req.authority : req.headers.host;
  if (authority === undefined) return undefined;
  let controller: AbortController | undefined;
  let onClose: (() => void) | undefined;
  let deadlineSignal: ReturnType<typeof createDeadlineSignal> | undefined;
  // connect keeps the deadline as a Date, which drops any fraction of a millisecond (the
  // gRPC units u and n); timeoutMs() then counts from that whole millisecond.
  const deadlineMs = deadline === undefined ? 0 : Math.trunc(deadline);
  // The same conversion as connect-node's nodeHeaderToWebHeader.
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
  // connect-node aborts on the h2 request's or the h1 response's close.
  const closer: NodeRequest | NodeResponse = "stream" in req ? req : res;
  return {
    service: method.parent,
    method,
    protocolName,
    requestMethod: "POST",
    url: absoluteUrl(secure === true, authority, req.url ?? ""),
    get signal() {
      if (!controller) {
        const requestController = new AbortController();
        onClose = () => requestController.abort();
        closer.once("close", onClose);
        if (deadline !== undefined) deadlineSignal = createDeadlineSignal(deadline - Date.now());
        // The order connect-node links them in: deadline, request, shutdown.
        controller = createLinkedAbortController(deadlineSignal?.signal, requestController.signal, shutdownSignal);
      }
      return controller.signal;
    },
    timeoutMs: deadline === undefined ? noTimeout : () => deadlineMs - Date.now(),
    requestHeader,
    responseHeader: new Headers(responseHeader),
    responseTrailer: new Headers(responseTrailer),
    // Request id, peer and trace id for the call log, from the dispatcher (call-meta.ts).
    values: createContextValues().set(CALL_META, callMetaOf(req)),
    abort(reason?: unknown) {
      deadlineSignal?.cleanup();
      controller?.abort(reason);
    },
    cleanup() {
      if (!controller) return;
      deadlineSignal?.cleanup();
      if (onClose) closer.off("close", onClose);
      controller.abort();
    },
    [LEAN_CONTEXT]: true,
  } as LeanContext;
}

const absoluteUrls = new Map<string, string>();

/**
 * `new URL(path, scheme://authority).toString()`, as connect-node's createHandlerContext
 * computes `context.url` (the auth hook reads it on every call), remembered per scheme,
 * authority and path: the fast paths only serve the few paths of the unary methods and a
 * client sends one authority, while parsing the URL on every call showed in the profile
 * (docs/performance.md).
 * Bounded, so a client sending ever new authorities only empties it. The authority was
 * checked by the dispatcher (authority.ts), so `new URL` cannot throw here for the paths
 * the fast doors serve.
 */
function absoluteUrl(secure: boolean, authority: string, path: string): string {
  // A header value cannot hold a line feed, so the key is unambiguous.
  const key = `${secure ? "s" : ""}\n${authority}\n${path}`;
  let url = absoluteUrls.get(key);
  if (url === undefined) {
    url = new URL(path, `${secure ? "https" : "http"}://${authority}`).toString();
    if (absoluteUrls.size >= 512) absoluteUrls.clear();
    absoluteUrls.set(key, url);
  }
  return url;
}

/** Like connect-node's webHeaderToNodeHeaders (repeated values joined with ", "). */
export function toNodeHeaders(headers: Headers): Record<string, string> {
  const o: Record<string, string> = Object.create(null);
  headers.forEach((value, key) => {
    o[key] = value;
  });
  return o;
}

/** A header's single value, or null (absent or repeated: connect-node would see a list). */
export function single(req: NodeRequest, name: string): string | null {
  const v = req.headers[name];
  return typeof v === "string" ? v : null;
}

/**
 * gRPC and gRPC-web: calls the wrapped implementation and returns the response's data frame
 * (compressed as negotiated), or undefined after setting the error status in the context's
 * trailers — what connect-node's envelope pipeline does for one unary message.
 */
export async function invokeForFrame(
  route: Route,
  input: unknown,
  context: LeanContext,
  responseCompression: Compression | null,
): Promise<Uint8Array | undefined> {
  if (responseCompression) context.responseHeader.set("grpc-encoding", responseCompression.name);
  try {
    const out = await route.impl(input, context);
    const message = isMessage(out, route.method.output) ? out : create(route.method.output, out as never);
    const data = route.serialization.getO(true).serialize(message);
    const env = await envelopeCompress({ flags: 0, data }, responseCompression, COMPRESS_MIN_BYTES);
    return encodeEnvelope(env.flags, env.data);
  } catch (err) {
    setTrailerStatus(context.responseTrailer, err instanceof ConnectError ? err : new ConnectError("internal error", Code.Internal, undefined, undefined, err));
    return undefined;
  } finally {
    context.cleanup();
  }
}
