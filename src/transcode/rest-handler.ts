/**
 * The REST/JSON door: route (route-table.ts) → read the body under the byte cap → bind
 * (bind-request.ts) → `invokeUnary` (the caller's way into the implementation; the composition
 * root makes it the same pipeline the RPC doors use) → render (render-response.ts).
 *
 * Contract of the returned handler's `handle`:
 * - It resolves `false`, touching nothing, when the path's first segment is not the first
 *   literal of any REST template (e.g. `/<package.Service>/<Method>`): the caller hands the
 *   request to connect-node. Otherwise it answers and resolves `true`.
 * - Every error, routing errors included, is a google.rpc.Status JSON body (toStatusJson,
 *   ErrorInfo first) with its code's HTTP status (src/errors/codes.ts): no route is NOT_FOUND
 *   (404); a path that matches only under other methods is UNIMPLEMENTED with reason
 *   METHOD_NOT_ALLOWED (405, the one status a reason decides) and `Allow` (no implicit HEAD or
 *   OPTIONS); a body over `maxBodyBytes` is RESOURCE_EXHAUSTED (429; declared lengths are
 *   refused before reading, streamed ones as soon as they cross the cap, and the connection is
 *   closed rather than drained); a body that is not JSON, or is compressed, is
 *   INVALID_ARGUMENT (400). UNAUTHENTICATED adds `WWW-Authenticate: Bearer`.
 * - No CORS here: the server answers preflights and decorates responses for every door in one
 *   place (src/server/cors.ts) before a request reaches this handler. An OPTIONS request that
 *   gets here is an ordinary method, i.e. 405 with `Allow`.
 * - Request headers reach `invokeUnary` as a Headers object without the hop-by-hop ones
 *   (connection and the headers it names, keep-alive, proxy-connection, transfer-encoding,
 *   upgrade, te, host, content-length) and without HTTP/2 pseudo-headers. Nothing here logs
 *   or echoes a header; error messages name the method and path, never header values.
 * - Success is 200 `application/json` (an Empty response is `{}`).
 * - Response headers the call set (`RestCall.setResponseHeaders`: the pipeline's, e.g. v1's
 *   Deprecation and Sunset, a rate limit's Retry-After) go on the answer, success or error;
 *   the door's own (content type and length) win.
 */
import type http from "node:http";
import http2 from "node:http2";
import { create, type DescMessage, type DescMethodUnary, type DescService, isMessage, type Message } from "@bufbuild/protobuf";
import { ApiError, GrpcCode, resourceExhausted } from "../errors/api-error.js";
import { toStatusJson } from "../errors/status-json.js";
import { toConnectError } from "../errors/to-connect-error.js";
import { httpStatusOf } from "../errors/codes.js";
import { bindRequest } from "./bind-request.js";
import { parseFormEncoded } from "./query-params.js";
import { buildOpenApi } from "./openapi.js";
import { renderResponse } from "./render-response.js";
import { createRouteTable } from "./route-table.js";

type Req = http.IncomingMessage | http2.Http2ServerRequest;
type Res = http.ServerResponse | http2.Http2ServerResponse;

/** What `invokeUnary` learns about the HTTP call besides the bound request. */
export interface RestCall {
  /** The HTTP method, upper case. */
  readonly httpMethod: string;
  /** The request target as received (path and query). */
  readonly url: string;
  /** Request headers minus hop-by-hop ones; `authorization` included, as over gRPC. */
  readonly headers: Headers;
  /** Aborted when the client goes away before the response is written. */
  readonly signal: AbortSignal;
  /** The Node request itself, for what the server attached to it before any door (call-meta). */
  readonly nodeRequest: Req;
  /** Headers the call wants on its answer, whether it succeeds or fails. */
  setResponseHeaders(headers: Headers): void;
}

/** Options of createRestHandler; only `services`, `invokeUnary` and `errorDomain` are required. */
export interface RestHandlerOptions {
  /** Services whose unary methods with a google.api.http rule are served. */
  readonly services: readonly DescService[];
  /**
   * Calls the implementation. Resolves to the response message or its init shape (both are
   * accepted); throws ApiError/ConnectError (or anything: unknown errors become INTERNAL).
   */
  readonly invokeUnary: (method: DescMethodUnary, request: Message, call: RestCall) => Promise<Message | object>;
  /** ErrorInfo.domain of every error this door writes. */
  readonly errorDomain: string;
  /** Body size cap in bytes; default 1 MiB. */
  readonly maxBodyBytes?: number;
  /**
   * Serve an OpenAPI 3.1 document of the routes (openapi.ts) at `path`; `false` to serve none.
   * Default: `/openapi.json`, titled for Trellis.
   */
  readonly openApi?: { readonly path: string; readonly title: string; readonly version: string } | false;
  /**
   * The server's public base URL, for the OpenAPI document's `servers` (read at its first
   * request, once the server listens); without it the document names the relative URL `/`.
   */
  readonly serverUrl?: () => string;
  /**
   * Runs on a routed request before its body is read or bound; may throw an ApiError to
   * refuse it (authentication refuses credentials in the URL query this way, before an
   * unknown query parameter could become a 400).
   */
  readonly screen?: (call: { readonly httpMethod: string; readonly url: string }) => void;
  /** Receives causes hidden behind INTERNAL answers (never sent to the client). */
  readonly onUnexpectedError?: (cause: unknown) => void;
}

/** The REST door's request handler. */
export interface RestHandler {
  /** Answers the request (module comment); resolves false, touching nothing, for a path that is not ours. */
  readonly handle: (req: Req, res: Res) => Promise<boolean>;
  /**
   * Whether `handle` would take this request (its path is a route's, or the OpenAPI
   * document's), decided at once and without reading it: the front door asks this before it
   * hands the request over, so a path that is not ours goes on to the next door now.
   */
  readonly takes: (req: Req) => boolean;
}

const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;
const DEFAULT_OPENAPI = {
  path: "/openapi.json",
  title: "Trellis: Identity, Registry and Vulnerability Management API",
  version: "v2",
} as const;
const HOP_BY_HOP = new Set(["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te", "host", "content-length"]);

/** An ApiError answered with HTTP headers of its own (`Allow`, `Connection: close`). */
class WithHeadersError extends ApiError {
  override name = "WithHeadersError";
  headers: Readonly<Record<string, string>> = {};
}

function withHeaders(err: ApiError, headers: Record<string, string>): WithHeadersError {
  const e = new WithHeadersError(err.code, err.message, {
    reason: err.reason,
    metadata: err.metadata,
    fieldViolations: err.fieldViolations,
  });
  e.headers = headers;
  return e;
}

/**
 * Compiles the route table (throwing on bad rules, see route-table.ts) and returns the REST
 * request handler described in the module comment.
 */
export function createRestHandler(options: RestHandlerOptions): RestHandler {
  const table = createRouteTable(options.services);
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const openApiOption = options.openApi ?? DEFAULT_OPENAPI;
  // Built eagerly (a bad descriptor fails start-up, not a request); serialised at its first
  // request, when the server's URL is known.
  const openApiDoc = openApiOption === false ? undefined : buildOpenApi(table, { title: openApiOption.title, version: openApiOption.version });
  let openApiText: string | undefined;
  const openApiBody = (): string =>
    (openApiText ??= JSON.stringify({ ...openApiDoc, servers: [{ url: options.serverUrl?.() ?? "/", description: "this server" }] }));

  function sendError(res: Res, err: unknown, callHeaders?: Headers): void {
    const { error, unexpected } = toConnectError(err, options.errorDomain);
    if (unexpected !== undefined) options.onUnexpectedError?.(unexpected);
    if (res.headersSent) {
      res.end();
      return;
    }
    const status = httpStatusOf(error.code, err instanceof ApiError ? err.reason : undefined);
    const headers: Record<string, string> = { ...headersOf(callHeaders), "content-type": "application/json" };
    if (err instanceof WithHeadersError) Object.assign(headers, err.headers);
    if (error.code === GrpcCode.Unauthenticated) headers["www-authenticate"] = "Bearer";
    const text = JSON.stringify(toStatusJson(error));
    headers["content-length"] = String(Buffer.byteLength(text));
    (res as http.ServerResponse).writeHead(status, headers);
    res.end(text);
  }

  const isOpenApi = (rawPath: string, httpMethod: string): boolean => openApiOption !== false && rawPath === openApiOption.path && httpMethod === "GET";

  function takes(req: Req): boolean {
    const url = req.url ?? "/";
    const q = url.indexOf("?");
    const rawPath = q < 0 ? url : url.slice(0, q);
    return table.handles(rawPath) || isOpenApi(rawPath, (req.method ?? "GET").toUpperCase());
  }

  async function handle(req: Req, res: Res): Promise<boolean> {
    const url = req.url ?? "/";
    const q = url.indexOf("?");
    const rawPath = q < 0 ? url : url.slice(0, q);
    const httpMethod = (req.method ?? "GET").toUpperCase();
    if (isOpenApi(rawPath, httpMethod)) {
      const text = openApiBody();
      (res as http.ServerResponse).writeHead(200, { "content-type": "application/json", "content-length": String(Buffer.byteLength(text)) });
      res.end(text);
      return true;
    }
    if (!table.handles(rawPath)) return false;

    let callHeaders: Headers | undefined;
    try {
      const m = table.match(httpMethod, rawPath);
      if (m.kind === "notFound") {
        throw new ApiError(GrpcCode.NotFound, `Not found: no route for ${httpMethod} ${rawPath}`, {
          metadata: { http_method: httpMethod, path: rawPath },
        });
      }
      if (m.kind === "methodNotAllowed") {
        const allow = m.allow.join(", ");
        throw withHeaders(
          new ApiError(GrpcCode.Unimplemented, `Method not allowed: ${httpMethod} ${rawPath} (allowed: ${allow})`, {
            reason: "METHOD_NOT_ALLOWED",
            metadata: { http_method: httpMethod, allow },
          }),
          { allow },
        );
      }
      options.screen?.({ httpMethod, url });
      const body = await readBody(req, res, maxBodyBytes);
      const request = bindRequest(m.route, m.vars, {
        query: q < 0 ? new URLSearchParams() : parseFormEncoded(url.slice(q + 1), "query"),
        body,
        contentType: header(req, "content-type"),
        contentEncoding: header(req, "content-encoding"),
      });
      // The signal is built only if someone reads it (unary handlers rarely do): an
      // AbortController per call is measurable on a call this short (docs/performance.md).
      let abort: AbortController | undefined;
      let gone = false;
      res.once("close", () => {
        if (res.writableFinished) return;
        gone = true;
        abort?.abort();
      });
      const output = m.route.method.output;
      const out = await options.invokeUnary(m.route.method, request, {
        httpMethod,
        url,
        headers: forwardHeaders(req),
        nodeRequest: req,
        setResponseHeaders(headers) {
          callHeaders = headers;
        },
        get signal() {
          if (abort === undefined) {
            abort = new AbortController();
            if (gone) abort.abort();
          }
          return abort.signal;
        },
      });
      const response = isMessage(out, output) ? out : create(output as DescMessage, out as never);
      const text = renderResponse(m.route, response as Message);
      (res as http.ServerResponse).writeHead(200, {
        ...headersOf(callHeaders),
        "content-type": "application/json",
        "content-length": String(Buffer.byteLength(text)),
      });
      res.end(text);
    } catch (err) {
      sendError(res, err, callHeaders);
    }
    return true;
  }

  return { handle, takes };
}

/** A call's response headers as a Node header record ({} for none). */
function headersOf(headers: Headers | undefined): Record<string, string> {
  return headers ? Object.fromEntries(headers) : {};
}

function header(req: Req, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v.join(", ") : v;
}

function forwardHeaders(req: Req): Headers {
  const out = new Headers();
  const named = new Set((header(req, "connection") ?? "").split(",").map((s) => s.trim().toLowerCase()));
  for (const [k, v] of Object.entries(req.headers)) {
    if (v === undefined || k.startsWith(":") || HOP_BY_HOP.has(k) || named.has(k)) continue;
    for (const one of Array.isArray(v) ? v : [v]) {
      try {
        out.append(k, one);
      } catch {
        // a value Headers refuses (not a ByteString) is dropped, as a gRPC client would
      }
    }
  }
  return out;
}

/**
 * Reads the whole body, refusing it (RESOURCE_EXHAUSTED) once it exceeds `max` bytes (a declared
 * Content-Length over the cap before reading anything). The refused rest is not drained:
 * HTTP/1.1 gets `connection: close`, an HTTP/2 stream is reset with NO_ERROR.
 */
function readBody(req: Req, res: Res, max: number): Promise<Uint8Array> {
  const tooLarge = () => {
    const isH2 = "stream" in req;
    if (isH2) {
      res.once("finish", () => {
        const stream = (req as http2.Http2ServerRequest).stream;
        if (!stream.closed) stream.close(http2.constants.NGHTTP2_NO_ERROR);
      });
    }
    return withHeaders(resourceExhausted(`request body exceeds ${max} bytes`, { metadata: { limit_bytes: String(max) } }), isH2 ? {} : { connection: "close" });
  };
  const declared = Number(header(req, "content-length"));
  if (Number.isFinite(declared) && declared > max) return Promise.reject(tooLarge());
  if (req.readableEnded) return Promise.resolve(new Uint8Array(0));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onFailure);
      req.off("close", onFailure);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) {
        cleanup();
        req.pause();
        reject(tooLarge());
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(Buffer.concat(chunks, size));
    };
    const onFailure = () => {
      cleanup();
      reject(new ApiError(GrpcCode.Canceled, "Canceled: the request body was not received completely"));
    };
    req.on("data", onData);
    req.once("end", onEnd);
    req.once("error", onFailure);
    req.once("close", onFailure);
  });
}
