/**
 * Spec-conformant `grpc-message` and ErrorInfo on the gRPC door.
 *
 * The gRPC HTTP/2 protocol percent-encodes only the bytes outside 0x20-0x7E, and '%'.
 * connect-node encodes the message with encodeURIComponent, which also encodes ':', ',', '$'
 * and friends; clients that decode exactly what the spec requires (grpc-js uses decodeURI,
 * which leaves %3A alone) then show "Invalid argument%3A name%3A …". This rewrites the
 * header in the trailers (and in trailers-only responses) of gRPC calls before Node sends
 * them. gRPC-web and Connect are untouched: their clients decode with decodeURIComponent.
 *
 * Errors raised inside connect-node before our pipeline runs (a message over the size limit,
 * a deadline over the ceiling, an undecodable message) carry no details. Spec §7 says every
 * error starts with google.rpc.ErrorInfo, so a non-OK status without grpc-status-details-bin
 * gets one here: reason = the code name, domain = the configured error domain.
 */
import type http from "node:http";
import { create, toBinary } from "@bufbuild/protobuf";
import { anyPack } from "@bufbuild/protobuf/wkt";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { StatusSchema } from "../../gen/google/rpc/status_pb.js";
import { CODE_NAMES } from "../errors/api-error.js";
import type http2 from "node:http2";

type Req = http.IncomingMessage | http2.Http2ServerRequest;
type Res = http.ServerResponse | http2.Http2ServerResponse;
type NodeHeaders = Record<string, string | string[] | number | undefined>;

/** True for gRPC over HTTP/2 (not gRPC-web). */
export function isGrpcRequest(req: Req): boolean {
  const ct = req.headers["content-type"];
  return typeof ct === "string" && ct.startsWith("application/grpc") && !ct.startsWith("application/grpc-web");
}

/** Patches `res` so its grpc-message is spec-encoded and every error carries ErrorInfo. */
export function conformGrpcMessage(res: Res, errorDomain: string): void {
  const target = res as unknown as {
    writeHead: (status: number, headers?: NodeHeaders) => unknown;
    addTrailers: (headers: NodeHeaders) => void;
  };
  const writeHead = target.writeHead;
  const addTrailers = target.addTrailers;
  target.writeHead = function (this: unknown, status: number, headers?: NodeHeaders) {
    if (headers) fix(headers, errorDomain);
    return writeHead.call(this, status, headers);
  };
  target.addTrailers = function (this: unknown, headers: NodeHeaders) {
    fix(headers, errorDomain);
    addTrailers.call(this, headers);
  };
}

function fix(headers: NodeHeaders, errorDomain: string): void {
  const value = headers["grpc-message"];
  let text = "";
  if (typeof value === "string") {
    try {
      text = decodeURIComponent(value);
      headers["grpc-message"] = encodeGrpcMessage(text);
    } catch {
      text = value;
    }
  }
  const code = Number(headers["grpc-status"] ?? 0);
  if (code !== 0 && Number.isInteger(code) && headers["grpc-status-details-bin"] === undefined) {
    const info = create(ErrorInfoSchema, { reason: CODE_NAMES[code] ?? "UNKNOWN", domain: errorDomain });
    const status = create(StatusSchema, { code, message: text, details: [anyPack(ErrorInfoSchema, info)] });
    headers["grpc-status-details-bin"] = Buffer.from(toBinary(StatusSchema, status)).toString("base64").replace(/=+$/, "");
  }
}

/** Percent-encodes the UTF-8 bytes outside 0x20-0x7E and '%' (gRPC PROTOCOL-HTTP2). */
export function encodeGrpcMessage(text: string): string {
  let out = "";
  for (const byte of Buffer.from(text, "utf8")) {
    out +=
      byte >= 0x20 && byte <= 0x7e && byte !== 0x25
        ? String.fromCharCode(byte)
        : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}
