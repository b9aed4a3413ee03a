/**
 * The REST/JSON door: route (route-table.ts) → read the body under the size cap → bind
 * (bind-request.ts) → call the SAME pipeline-wrapped implementation the RPC doors call
 * (`invokeUnary`, built in create-app.ts) → render (render-response.ts).
 *
 * Every error, including routing ones, is a google.rpc.Status JSON body (spec §7; ErrorInfo
 * first) with the HTTP status from http-status.ts, except: 405 (wrong method, with `Allow`),
 * 413 (body over the cap; code RESOURCE_EXHAUSTED) and 415 (non-JSON body; code
 * INVALID_ARGUMENT). UNAUTHENTICATED adds `WWW-Authenticate: Bearer`. Request headers reach
 * the implementation as they would over gRPC; they are never logged or echoed.
 */
import type http from "node:http";
import type http2 from "node:http2";
import { type DescMethodUnary, type DescService, type Message } from "@bufbuild/protobuf";
import { ApiError, GrpcCode, resourceExhausted } from "../errors/api-error.js";
import { toStatusJson } from "../errors/status-json.js";
import { toConnectError } from "../errors/to-connect-error.js";
import { bindRequest, UnsupportedMediaTypeError } from "./bind-request.js";
import { httpStatusFromCode } from "./http-status.js";
import { renderResponse } from "./render-response.js";
import { buildOpenApi } from "./openapi.js";
import { createRouteTable, type RouteTable } from "./route-table.js";

type Req = http.IncomingMessage | http2.Http2ServerRequest;
type Res = http.ServerResponse | http2.Http2ServerResponse;

export interface RestCall {
  readonly httpMethod: string;
  readonly url: string;
  readonly headers: Headers;
  readonly signal: AbortSignal;
}

export interface RestHandlerOptions {
  readonly services: readonly DescService[];
  /** Calls the pipeline-wrapped implementation; resolves to the response message. */
  readonly invokeUnary: (method: DescMethodUnary, request: Message, call: RestCall) => Promise<Message>;
  readonly errorDomain: string;
  readonly maxBodyBytes: number;
}

export interface RestHandler {
  readonly table: RouteTable;
  /** Handles the request when its path belongs to REST; resolves false otherwise. */
  handle(req: Req, res: Res): Promise<boolean>;
}

const HOP_BY_HOP = new Set(["connection", "keep-alive", "transfer-encoding", "upgrade", "host", "te", "content-length", "proxy-connection"]);

class BodyTooLargeError extends ApiError {
  override name = "BodyTooLargeError";
}

export function createRestHandler(options: RestHandlerOptions): RestHandler {
  const table = createRouteTable(options.services);
  const openApi = JSON.stringify(buildOpenApi(table, { title: "Trellis: Identity, Registry and Vulnerability Management API", version: "v2beta1" }));

  function sendError(res: Res, err: unknown, extraHeaders: Record<string, string> = {}, statusOverride?: number) {
    const { error } = toConnectError(err, options.errorDomain);
    const status =
      statusOverride ??
      (err instanceof UnsupportedMediaTypeError ? 415 : err instanceof BodyTooLargeError ? 413 : httpStatusFromCode(error.code));
    const headers: Record<string, string> = { "content-type": "application/json", ...extraHeaders };
    if (error.code === GrpcCode.Unauthenticated) headers["www-authenticate"] = "Bearer";
    if (res.headersSent) {
      res.end();
      return;
    }
    (res as http.ServerResponse).writeHead(status, headers);
    res.end(JSON.stringify(toStatusJson(error)));
  }

  return {
    table,
    async handle(req, res) {
      const url = req.url ?? "/";
      const q = url.indexOf("?");
      const rawPath = q < 0 ? url : url.slice(0, q);
      const httpMethod = (req.method ?? "GET").toUpperCase();
      if (rawPath === "/openapi.json" && httpMethod === "GET") {
        (res as http.ServerResponse).writeHead(200, { "content-type": "application/json" });
        res.end(openApi);
        return true;
      }
      if (!table.handles(rawPath)) return false;
      try {
        const m = table.match(httpMethod, rawPath);
        if (m.kind === "notFound") {
          throw new ApiError(GrpcCode.NotFound, `Not found: no route for ${httpMethod} ${rawPath}`, {
            metadata: { method: httpMethod, path: rawPath },
          });
        }
        if (m.kind === "methodNotAllowed") {
          const e = new ApiError(GrpcCode.Unimplemented, `Method not allowed: ${httpMethod} ${rawPath} (allowed: ${m.allow.join(", ")})`, {
            reason: "METHOD_NOT_ALLOWED",
            metadata: { method: httpMethod, allow: m.allow.join(",") },
          });
          sendError(res, e, { allow: m.allow.join(", ") }, 405);
          return true;
        }
        const body = await readBody(req, options.maxBodyBytes);
        const request = bindRequest(m.route, m.vars, {
          httpMethod,
          query: new URLSearchParams(q < 0 ? "" : url.slice(q + 1)),
          body,
          contentType: header(req, "content-type"),
        });
        const abort = new AbortController();
        res.once("close", () => abort.abort());
        const response = await options.invokeUnary(m.route.method, request, {
          httpMethod,
          url,
          headers: forwardHeaders(req),
          signal: abort.signal,
        });
        const text = renderResponse(m.route, response);
        (res as http.ServerResponse).writeHead(200, { "content-type": "application/json" });
        res.end(text);
      } catch (err) {
        sendError(res, err);
      }
      return true;
    },
  };
}

function header(req: Req, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function forwardHeaders(req: Req): Headers {
  const out = new Headers();
  for (const [k, v] of Object.entries(req.headers)) {
    if (k.startsWith(":") || HOP_BY_HOP.has(k) || v === undefined) continue;
    for (const one of Array.isArray(v) ? v : [v]) out.append(k, one);
  }
  return out;
}

/** Reads the whole body, refusing (before buffering more) once it exceeds `max` bytes. */
function readBody(req: Req, max: number): Promise<Uint8Array> {
  const declared = Number(header(req, "content-length") ?? Number.NaN);
  if (declared > max) return Promise.reject(tooLarge(max));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) {
        req.off("data", onData);
        reject(tooLarge(max));
        return;
      }
      chunks.push(chunk);
    };
    req.on("data", onData);
    req.once("end", () => resolve(Buffer.concat(chunks)));
    req.once("error", reject);
  });
}

function tooLarge(max: number): BodyTooLargeError {
  const e = resourceExhausted(`request body exceeds ${max} bytes`, { metadata: { limit_bytes: String(max) } });
  return new BodyTooLargeError(e.code, e.message, { metadata: e.metadata });
}
