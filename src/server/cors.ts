/**
 * CORS for browser clients (Connect-Web, gRPC-web, fetch against REST). Off unless origins are
 * configured (`--cors-origin`). For an allowed Origin every response carries
 * Access-Control-Allow-Origin (echoing it, with `Vary: Origin`) and exposes the headers RPC
 * clients read; a preflight (OPTIONS + Access-Control-Request-Method) is answered 204 for any
 * path. Header and method lists are connect's published ones plus what REST needs.
 * Credentials are never allowed: tokens travel in the Authorization header, not cookies.
 */
import type http from "node:http";
import type http2 from "node:http2";
import { cors as connectCors } from "@connectrpc/connect";
import { REFRESH_REQUEST_HEADER } from "../auth/refresh-tokens.js";

type Req = http.IncomingMessage | http2.Http2ServerRequest;
type Res = http.ServerResponse | http2.Http2ServerResponse;

const ALLOW_METHODS = [...new Set([...connectCors.allowedMethods, "GET", "POST", "PUT", "PATCH", "DELETE"])].join(", ");
// The refresh-token request header too, so an allowed browser client can sign in with one;
// and the request id and trace context, which every door takes (src/observe/call-meta.ts).
const ALLOW_HEADERS = [...new Set([...connectCors.allowedHeaders, "Authorization", REFRESH_REQUEST_HEADER, "X-Request-Id", "Traceparent"])].join(", ");
// X-Request-Id: every answer carries one, for a browser client to quote in a bug report.
const EXPOSE_HEADERS = [...new Set([...connectCors.exposedHeaders, "WWW-Authenticate", "Allow", "X-Request-Id"])].join(", ");

/**
 * @returns a function that decorates the response and answers preflights (returns true when
 * it answered), or undefined when CORS is off.
 */
export function createCors(origins: readonly string[]): ((req: Req, res: Res) => boolean) | undefined {
  if (origins.length === 0) return undefined;
  const any = origins.includes("*");
  const allowed = new Set(origins);
  return (req, res) => {
    const origin = req.headers.origin;
    if (typeof origin !== "string" || !(any || allowed.has(origin))) return false;
    res.setHeader("access-control-allow-origin", any ? "*" : origin);
    res.setHeader("vary", "Origin");
    if (req.method === "OPTIONS" && req.headers["access-control-request-method"]) {
      (res as http.ServerResponse).writeHead(204, {
        "access-control-allow-methods": ALLOW_METHODS,
        "access-control-allow-headers": ALLOW_HEADERS,
        "access-control-max-age": "7200",
      });
      res.end();
      return true;
    }
    res.setHeader("access-control-expose-headers", EXPOSE_HEADERS);
    return false;
  };
}
