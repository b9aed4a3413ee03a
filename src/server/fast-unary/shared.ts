/**
 * What the lean unary doors (grpc.ts, connect.ts) share: the table of wrapped unary methods,
 * reading a request body with the option to hand it to connect-node after all, and a
 * HandlerContext without connect's per-call AbortSignal. See grpc.ts for why they exist.
 */
import type http from "node:http";
import type http2 from "node:http2";
import type { DescMessage, DescMethod } from "@bufbuild/protobuf";
import { createContextValues, type HandlerContext } from "@connectrpc/connect";
import { compressionBrotli, compressionGzip } from "@connectrpc/connect-node";
import {
  createLinkedAbortController,
  createMethodSerializationLookup,
  type MethodSerializationLookup,
} from "@connectrpc/connect/protocol";

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
  readonly shutdownSignal: AbortSignal;
}

/** connect-node's defaults, which create-app.ts does not override. */
export const ACCEPT_COMPRESSION = [compressionGzip, compressionBrotli];
export const COMPRESS_MIN_BYTES = 1024;
export type Compression = (typeof ACCEPT_COMPRESSION)[number];

export interface Route {
  readonly method: DescMethod;
  readonly impl: Unary;
  readonly serialization: MethodSerializationLookup<DescMessage, DescMessage>;
}

/** "/package.Service/Method" → route, for unary methods only (the paths connect-node serves). */
export function unaryRoutes(options: FastUnaryOptions): Map<string, Route> {
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
  return routes;
}

/**
 * Reads the whole body. `tooBig(chunks, length)` is asked after every chunk; when it says yes,
 * or `onBody` returns false, the bytes read so far are replayed to connect-node (`fallback`),
 * followed by whatever the stream still delivers, so it answers as if it had read them itself.
 */
export function readBody(
  req: NodeRequest,
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
  const onData = (chunk: Buffer) => {
    chunks.push(chunk);
    length += chunk.length;
    if (tooBig(chunks, length)) giveUp();
  };
  const onEnd = () => {
    if (gaveUp) return;
    const body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, length);
    if (!onBody(body)) giveUp();
  };
  req.on("data", onData);
  req.on("end", onEnd);
}

/**
 * Makes connect-node read `consumed` first, then whatever the stream still delivers.
 * connect-node reads the request body with `for await` over the request object.
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

export interface LeanContext extends HandlerContext {
  /** Releases the AbortSignal's listeners if `signal` was ever read. */
  cleanup(): void;
}

/**
 * A HandlerContext like connect's createHandlerContext builds, except that its AbortSignal is
 * only created if someone reads `signal` (no unary method of ours does): creating and then
 * aborting one on every call (a DOMException each time) was the largest single cost in the
 * profile. Returns undefined where connect-node would fail (no authority).
 */
export function createLeanContext(
  method: DescMethod,
  protocolName: string,
  req: NodeRequest,
  res: NodeResponse,
  shutdownSignal: AbortSignal,
  responseHeader: Record<string, string>,
  responseTrailer: Record<string, string>,
): LeanContext | undefined {
  const authority = "authority" in req ? req.authority : req.headers.host;
  if (authority === undefined) return undefined;
  let controller: AbortController | undefined;
  let onClose: (() => void) | undefined;
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
    url: new URL(req.url ?? "", `${secure ? "https" : "http"}://${authority}`).toString(),
    get signal() {
      if (!controller) {
        const requestController = new AbortController();
        onClose = () => requestController.abort();
        closer.once("close", onClose);
        controller = createLinkedAbortController(requestController.signal, shutdownSignal);
      }
      return controller.signal;
    },
    timeoutMs: () => undefined,
    requestHeader,
    responseHeader: new Headers(responseHeader),
    responseTrailer: new Headers(responseTrailer),
    values: createContextValues(),
    abort(reason?: unknown) {
      controller?.abort(reason);
    },
    cleanup() {
      if (!controller) return;
      if (onClose) closer.off("close", onClose);
      controller.abort();
    },
  } as LeanContext;
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
