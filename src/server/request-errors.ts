/**
 * Errors the front door itself answers, outside the doors and the call pipeline: a request
 * whose authority is refused before any door runs, and a request whose door failed in a way
 * nothing below caught (a throw while routing, building the context or writing the answer).
 *
 * Each is answered in the request's own protocol, as its door would have answered it, with
 * the error made and converted the usual way (src/errors/: ErrorInfo first):
 * - gRPC: a trailers-only response (`grpc-status`, `grpc-message`, `grpc-status-details-bin`);
 * - gRPC-web: 200 with the trailer frame as the body;
 * - Connect: the JSON error body, with the code's HTTP status (src/errors/codes.ts);
 * - REST and the plain GET documents: the google.rpc.Status JSON body, with the same status.
 *
 * When the response has already started, its bytes cannot be taken back: the request alone
 * is cut off (HTTP/2: its stream is reset with INTERNAL_ERROR; HTTP/1.1: its connection is
 * closed), so the client sees a broken response instead of a wrong one, and every other
 * request keeps going.
 */
import type http from "node:http";
import http2 from "node:http2";
import type { ConnectError } from "@connectrpc/connect";
import { encodeEnvelope, errorToJsonBytes, setTrailerStatus, trailerFlag, trailerSerialize } from "./connect-internals.js";
import { ApiError, GrpcCode, internal } from "../errors/api-error.js";
import { httpStatusOf } from "../errors/codes.js";
import { toStatusJson } from "../errors/status-json.js";
import { toConnectError } from "../errors/to-connect-error.js";
import type { Logger } from "../observe/logger.js";
import { encodeGrpcMessage, rpcProtocolOf } from "./protocol-errors.js";

type Req = http.IncomingMessage | http2.Http2ServerRequest;
type Res = http.ServerResponse | http2.Http2ServerResponse;

/** How a request expects its errors: one of connect-node's protocols, or REST's JSON. */
export type ErrorDialect = "grpc" | "grpc-web" | "connect" | "rest";

/**
 * The dialect of a request: gRPC and gRPC-web by content type (as the front door routes
 * them), REST for the paths the REST door or the plain GET documents serve (`isRestPath`),
 * Connect for everything else (connect-node's paths).
 */
export function errorDialectOf(req: Req, isRestPath: (path: string) => boolean): ErrorDialect {
  const protocol = rpcProtocolOf(req);
  if (protocol !== "connect") return protocol;
  const url = req.url ?? "/";
  const q = url.indexOf("?");
  return isRestPath(q < 0 ? url : url.slice(0, q)) ? "rest" : "connect";
}

/** INVALID_ARGUMENT for a request without a usable authority (src/server/authority.ts). */
export function invalidAuthority(present: boolean): ApiError {
  return new ApiError(
    GrpcCode.InvalidArgument,
    present
      ? "Invalid argument: the Host header (HTTP/2 :authority) is not a valid host[:port]"
      : "Invalid argument: the request names no host (Host header or HTTP/2 :authority)",
    { reason: "INVALID_AUTHORITY" },
  );
}

/**
 * Writes `error` as the whole response, natively for `dialect`. The response must not have
 * started. Headers set on it before are dropped, except the CORS ones (every answer to an
 * allowed origin carries them) and `x-request-id` (every answer carries it; the front door
 * set it from a checked or generated value, so it cannot be what Node refused): the others
 * belong to the answer that failed, and one of them may be why it failed (Node keeps a
 * header it refused to send, and would refuse it again).
 */
export function writeError(res: Res, dialect: ErrorDialect, error: ConnectError): void {
  const out = res as http.ServerResponse;
  for (const name of out.getHeaderNames()) {
    if (!name.startsWith("access-control-") && name !== "vary" && name !== "x-request-id") out.removeHeader(name);
  }
  // HTTP/1.1: a writeHead that threw half-way may already have switched the response to
  // chunked framing (a `transfer-encoding` header before the refused one). Node decides the
  // framing afresh from the headers written next; without this reset the body below would be
  // chunk-framed under a content-length header.
  if ("chunkedEncoding" in out) out.chunkedEncoding = false;
  if (dialect === "grpc") {
    const trailer = setTrailerStatus(new Headers(), error);
    const headers: Record<string, string> = { "content-type": "application/grpc+proto" };
    trailer.forEach((value, key) => {
      headers[key] = value;
    });
    // The spec's percent-encoding, as protocol-errors.ts writes it for connect-node's answers.
    headers["grpc-message"] = encodeGrpcMessage(error.rawMessage);
    if ("stream" in res) {
      // Node's compatibility layer sends the head of `writeHead(…); end()` as a HEADERS
      // frame without END_STREAM and ends with an empty DATA frame, so it is not the
      // trailers-only form; grpc-js then waits for trailers that never come and reports
      // "call ended without gRPC status" (INTERNAL). The status goes in real trailers.
      const { "content-type": contentType, ...status } = headers;
      res.writeHead(200, { "content-type": contentType as string });
      res.addTrailers(status);
      res.end();
      return;
    }
    out.writeHead(200, headers);
    out.end();
    return;
  }
  if (dialect === "grpc-web") {
    const trailer = setTrailerStatus(new Headers(), error);
    trailer.set("grpc-message", encodeGrpcMessage(error.rawMessage));
    const body = encodeEnvelope(trailerFlag, trailerSerialize(trailer));
    out.writeHead(200, { "content-type": "application/grpc-web+proto", "content-length": String(body.byteLength) });
    out.end(body);
    return;
  }
  const status = httpStatusOf(error.code);
  const body = dialect === "connect" ? errorToJsonBytes(error, {}) : Buffer.from(JSON.stringify(toStatusJson(error)));
  const headers: Record<string, string> = { "content-type": "application/json", "content-length": String(body.byteLength) };
  if (dialect === "rest" && error.code === GrpcCode.Unauthenticated) headers["www-authenticate"] = "Bearer";
  out.writeHead(status, headers);
  out.end(body);
}

/** Cuts off one request whose response has started: its h2 stream, or its HTTP/1.1 connection. */
export function abandonResponse(req: Req, res: Res): void {
  if ("stream" in req) {
    if (!req.stream.destroyed) req.stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
    return;
  }
  (res as http.ServerResponse).destroy();
}

/** The last line of defence for one request, shared by every door (module comment). */
export interface RequestFailures {
  /**
   * A request that failed outside the call pipeline (routing, building its context, reading
   * its body, writing its answer): logged, then answered INTERNAL, or cut off once started.
   */
  fail(req: Req, res: Res, err: unknown): void;
  /** Answers `err` in the request's dialect (or `dialect`), or cuts it off once started. */
  answer(req: Req, res: Res, err: ApiError, dialect?: ErrorDialect): void;
}

export function createRequestFailures(options: {
  readonly log: Logger;
  readonly errorDomain: string;
  /** True for connect-node's paths: a Connect-protocol request elsewhere is answered as REST. */
  readonly isRpcPath: (path: string) => boolean;
}): RequestFailures {
  const { log, errorDomain, isRpcPath } = options;
  const isRestPath = (path: string) => !isRpcPath(path);
  const answer = (req: Req, res: Res, err: ApiError, dialectOverride?: ErrorDialect): void => {
    if (res.writableEnded) return;
    if (res.headersSent) {
      abandonResponse(req, res);
      return;
    }
    try {
      const dialect = dialectOverride ?? errorDialectOf(req, isRestPath);
      writeError(res, dialect, toConnectError(err, errorDomain).error);
      if ("stream" in req && !req.complete) {
        // Answered before the body was read: tell the client to stop sending (RFC 9113 §8.1).
        res.once("finish", () => {
          if (!req.stream.closed) req.stream.close(http2.constants.NGHTTP2_NO_ERROR);
        });
      }
    } catch (writeErr) {
      log.error({ err: writeErr }, "could not answer a failed request");
      abandonResponse(req, res);
    }
  };
  return {
    answer,
    // The log names the method and path, never the query (it may carry a credential) or headers.
    fail(req, res, err) {
      log.error({ err, method: req.method, path: pathOf(req.url) }, "request failed outside the call pipeline");
      answer(req, res, internal(err));
    },
  };
}

/** The path of a request target, without its query (which may carry a credential). */
function pathOf(url: string | undefined): string {
  const u = url ?? "";
  const q = u.indexOf("?");
  return q < 0 ? u : u.slice(0, q);
}
