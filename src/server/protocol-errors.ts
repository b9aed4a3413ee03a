/**
 * The last word on errors that connect-node makes by itself, on all three of its doors.
 *
 * Errors from our services pass through the call pipeline and arrive with ErrorInfo first
 * (src/errors/to-connect-error.ts). A few are raised inside connect-node before the pipeline
 * runs: a message over the size limit, a deadline over the ceiling, a JSON body with an
 * unknown key, an undecodable protobuf message, a compressed body that does not decompress.
 * Those carry no details, and the last two can come out as INTERNAL ("parse binary: ...",
 * "decompression failed"), which blames the server for the client's bytes.
 * The published API (docs/published-api.md "Errors") says every error starts with google.rpc.ErrorInfo, and hostile bytes must
 * never be answered INTERNAL (the fault is the sender's). So, on the way out:
 *
 * - an error without details gains ErrorInfo {reason: the code name, domain: ours};
 * - INTERNAL whose message starts "parse binary:" becomes INVALID_ARGUMENT (only connect-node
 *   writes that message; our own INTERNAL errors always carry details and are left alone);
 *   so do connect-node's other INTERNAL answers to the client's own bytes: an envelope
 *   flagged compressed with no encoding named ("received compressed envelope, but do not
 *   know how to decompress"; gRPC's compression spec says INTERNAL, but the fault is the
 *   sender's) and a compressed body that does not decompress ("decompression failed", for
 *   zlib errors connect-node does not classify, e.g. a truncated gzip stream).
 *
 * Where each protocol keeps its status:
 * - gRPC: `grpc-status` in the trailers or in a trailers-only header block. Also rewrites
 *   `grpc-message` to the spec's percent-encoding (only bytes outside 0x20-0x7E, and '%'):
 *   connect-node uses encodeURIComponent, and grpc-js, which decodes with decodeURI, then
 *   shows "Invalid argument%3A name%3A …".
 * - gRPC-web: the trailer frame (flag 0x80) that connect-node writes as one chunk, with
 *   `grpc-status` lines inside; the frame is rebuilt with the new lines.
 * - Connect unary: a non-200 `application/json` body `{code, message, details?}` written as
 *   one chunk; writeHead is held back until that chunk is seen so status and length can follow
 *   the rewritten body. Connect streaming errors (an end-stream message) do not occur: the API
 *   is unary.
 */
import type http from "node:http";
import type http2 from "node:http2";
import { create, toBinary } from "@bufbuild/protobuf";
import { anyPack } from "@bufbuild/protobuf/wkt";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { StatusSchema } from "../../gen/google/rpc/status_pb.js";
import { codeFromString, codeToString } from "./connect-internals.js";
import { CODE_NAMES, GrpcCode, httpStatusOf } from "../errors/codes.js";

type Req = http.IncomingMessage | http2.Http2ServerRequest;
type Res = http.ServerResponse | http2.Http2ServerResponse;
type NodeHeaders = Record<string, string | string[] | number | undefined>;
type Write = (chunk: unknown, ...rest: unknown[]) => boolean;
type WriteHead = (status: number, headers?: NodeHeaders) => unknown;

/**
 * connect-node's INTERNAL messages about bytes the client sent (module comment). It calls some
 * zlib failures INVALID_ARGUMENT (bad header, bad data) and others INTERNAL (a stream cut
 * short, a wrong checksum); all of them are the client's bytes.
 */
const NO_DECOMPRESSOR = "received compressed envelope, but do not know how to decompress";
const DECOMPRESSION_FAILED = "decompression failed";

/** The status after our rules: parse and decompression failures are the client's fault. */
function conform(code: number, message: string): { code: number; message: string } {
  if (code === GrpcCode.Internal && message.startsWith("parse binary:")) {
    return { code: GrpcCode.InvalidArgument, message: `Invalid argument: cannot decode the request message (${message.slice(14)})` };
  }
  if ((code === GrpcCode.Internal || code === GrpcCode.InvalidArgument) && message === DECOMPRESSION_FAILED) {
    return { code: GrpcCode.InvalidArgument, message: "Invalid argument: the request body does not decompress with its declared encoding" };
  }
  if (code === GrpcCode.Internal && message === NO_DECOMPRESSOR) {
    return { code: GrpcCode.InvalidArgument, message: `Invalid argument: ${message}` };
  }
  return { code, message };
}

/** The binary google.rpc.Status carrying ErrorInfo, base64 without padding (gRPC `-bin` header). */
function statusDetailsBin(code: number, message: string, errorDomain: string): string {
  const info = create(ErrorInfoSchema, { reason: CODE_NAMES[code] ?? "UNKNOWN", domain: errorDomain });
  const status = create(StatusSchema, { code, message, details: [anyPack(ErrorInfoSchema, info)] });
  return Buffer.from(toBinary(StatusSchema, status)).toString("base64").replace(/=+$/, "");
}

/** Which of connect-node's protocols a request speaks, by content type. */
export function rpcProtocolOf(req: Req): "grpc" | "grpc-web" | "connect" {
  const ct = req.headers["content-type"];
  if (typeof ct === "string" && ct.startsWith("application/grpc-web")) return "grpc-web";
  if (typeof ct === "string" && ct.startsWith("application/grpc")) return "grpc";
  return "connect";
}

/**
 * Patches `res` (about to be handed to connect-node or a fast door) so its errors follow the
 * rules above. A wrapper of Node's response: docs/architecture.md lists it with the others
 * ("What is patched on Node's request and response objects").
 */
export function conformProtocolErrors(req: Req, res: Res, errorDomain: string): void {
  const protocol = rpcProtocolOf(req);
  if (protocol === "grpc") patchGrpc(res, errorDomain);
  else if (protocol === "grpc-web") patchGrpcWeb(res, errorDomain);
  else patchConnect(res, errorDomain);
}

// --- gRPC ------------------------------------------------------------------------------

function patchGrpc(res: Res, errorDomain: string): void {
  const target = res as unknown as { writeHead: WriteHead; addTrailers: (headers: NodeHeaders) => void };
  const writeHead = target.writeHead;
  const addTrailers = target.addTrailers;
  target.writeHead = function (this: unknown, status, headers) {
    if (headers) fixGrpcHeaders(headers, errorDomain);
    return writeHead.call(this, status, headers);
  };
  target.addTrailers = function (this: unknown, headers) {
    fixGrpcHeaders(headers, errorDomain);
    addTrailers.call(this, headers);
  };
}

function fixGrpcHeaders(headers: NodeHeaders, errorDomain: string): void {
  if (headers["grpc-status"] === undefined) return;
  const raw = headers["grpc-message"];
  let text = "";
  if (typeof raw === "string") {
    try {
      text = decodeURIComponent(raw);
    } catch {
      text = raw;
    }
  }
  const fixed = conform(Number(headers["grpc-status"]), text);
  headers["grpc-status"] = String(fixed.code);
  if (typeof raw === "string" || fixed.message !== text) headers["grpc-message"] = encodeGrpcMessage(fixed.message);
  if (fixed.code !== 0 && headers["grpc-status-details-bin"] === undefined) {
    headers["grpc-status-details-bin"] = statusDetailsBin(fixed.code, fixed.message, errorDomain);
  }
}

/** Percent-encodes the UTF-8 bytes outside 0x20-0x7E and '%' (gRPC PROTOCOL-HTTP2). */
export function encodeGrpcMessage(text: string): string {
  let out = "";
  for (const byte of Buffer.from(text, "utf8")) {
    out += byte >= 0x20 && byte <= 0x7e && byte !== 0x25 ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

// --- gRPC-web --------------------------------------------------------------------------

const TRAILER_FLAG = 0x80;

function patchGrpcWeb(res: Res, errorDomain: string): void {
  const target = res as unknown as { write: Write };
  const write = target.write;
  target.write = function (this: unknown, chunk, ...rest) {
    return write.call(this, rewriteTrailerFrame(chunk, errorDomain), ...rest);
  };
}

/** A whole trailer frame with an error status and no details, rebuilt; anything else as is. */
function rewriteTrailerFrame(chunk: unknown, errorDomain: string): unknown {
  if (!(chunk instanceof Uint8Array) || chunk.length < 5 || (chunk[0] & TRAILER_FLAG) === 0) return chunk;
  const buf = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length);
  if (buf.readUInt32BE(1) !== buf.length - 5 || (chunk[0] & 0x01) !== 0) return chunk; // partial or compressed
  const lines = buf
    .subarray(5)
    .toString("latin1")
    .split("\r\n")
    .filter((l) => l !== "");
  const headers: NodeHeaders = {};
  for (const line of lines) {
    const i = line.indexOf(":");
    if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  const before = JSON.stringify(headers);
  fixGrpcHeaders(headers, errorDomain);
  if (JSON.stringify(headers) === before) return chunk;
  const text = Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join("");
  const body = Buffer.from(text, "latin1");
  const frame = Buffer.alloc(5 + body.length);
  frame[0] = chunk[0];
  frame.writeUInt32BE(body.length, 1);
  body.copy(frame, 5);
  return frame;
}

// --- Connect ---------------------------------------------------------------------------

function patchConnect(res: Res, errorDomain: string): void {
  const target = res as unknown as { writeHead: WriteHead; write: Write };
  const writeHead = target.writeHead;
  const write = target.write;
  let held: { status: number; headers: NodeHeaders } | undefined;
  target.writeHead = function (this: unknown, status, headers) {
    const ct = headers?.["content-type"];
    if (status !== 200 && headers && typeof ct === "string" && ct.startsWith("application/json")) {
      held = { status, headers };
      return this;
    }
    return writeHead.call(this, status, headers);
  };
  target.write = function (this: unknown, chunk, ...rest) {
    if (held === undefined) return write.call(this, chunk, ...rest);
    const { status, headers } = held;
    held = undefined;
    const fixed = rewriteConnectError(chunk, status, errorDomain);
    headers["content-length"] = String(fixed.body.length);
    writeHead.call(this, fixed.status, headers);
    return write.call(this, fixed.body, ...rest);
  };
  // An error ended without a body chunk (not seen from connect-node) still gets its head.
  const end = (res as unknown as { end: (...args: unknown[]) => unknown }).end;
  (res as unknown as { end: (...args: unknown[]) => unknown }).end = function (this: unknown, ...args: unknown[]) {
    if (held !== undefined) {
      const { status, headers } = held;
      held = undefined;
      writeHead.call(this, status, headers);
    }
    return end.apply(this, args);
  };
}

function rewriteConnectError(chunk: unknown, status: number, errorDomain: string): { status: number; body: Buffer } {
  const original = Buffer.from(chunk as Uint8Array);
  let parsed: { code?: unknown; message?: unknown; details?: unknown };
  try {
    parsed = JSON.parse(original.toString("utf8"));
  } catch {
    return { status, body: original };
  }
  const codeNumber = codeFromString(String(parsed.code));
  if (codeNumber === undefined) return { status, body: original };
  const fixed = conform(codeNumber, typeof parsed.message === "string" ? parsed.message : "");
  const out: Record<string, unknown> = { ...parsed, code: codeToString(fixed.code), message: fixed.message };
  if (!Array.isArray(parsed.details) || parsed.details.length === 0) {
    const info = create(ErrorInfoSchema, { reason: CODE_NAMES[fixed.code] ?? "UNKNOWN", domain: errorDomain });
    out.details = [
      {
        type: ErrorInfoSchema.typeName,
        value: Buffer.from(toBinary(ErrorInfoSchema, info)).toString("base64").replace(/=+$/, ""),
      },
    ];
  }
  // A code our rules changed takes its own status (codes.ts); otherwise connect-node's stands.
  const newStatus = fixed.code !== codeNumber ? httpStatusOf(fixed.code) : status;
  return { status: newStatus, body: Buffer.from(JSON.stringify(out)) };
}
