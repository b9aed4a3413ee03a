/**
 * Raw gRPC and gRPC-web plumbing for tests that send bytes no generated client would:
 * framing, a one-shot HTTP/2 gRPC call, reading status and ErrorInfo out of trailers, and the
 * code of a Connect error body.
 */
import http2 from "node:http2";
import { fromBinary } from "@bufbuild/protobuf";
import { anyUnpack } from "@bufbuild/protobuf/wkt";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { StatusSchema } from "../../gen/google/rpc/status_pb.js";
import { codeFromString } from "../../src/server/connect-internals.js";
import { defaultAuthHeaders } from "./auth.js";

/**
 * The code of a Connect error body's `code` ("invalid_argument" is 3), read as connect reads
 * it; NaN for anything that is no Connect code name.
 */
export function connectCode(name: unknown): number {
  return codeFromString(String(name)) ?? Number.NaN;
}

/** One uncompressed length-prefixed message (gRPC and gRPC-web data frame). */
export function envelope(payload: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt32BE(payload.length, 1);
  return Buffer.concat([head, payload]);
}

/** The trailer frame (flag 0x80) of a gRPC-web response body, as a header map. */
export function grpcWebTrailers(body: Buffer): Record<string, string> {
  for (let at = 0; at + 5 <= body.length; ) {
    const len = body.readUInt32BE(at + 1);
    if (body[at] & 0x80) {
      const out: Record<string, string> = {};
      for (const line of body
        .subarray(at + 5, at + 5 + len)
        .toString("latin1")
        .split("\r\n")) {
        const i = line.indexOf(":");
        if (i > 0) out[line.slice(0, i).trim()] = line.slice(i + 1).trim();
      }
      return out;
    }
    at += 5 + len;
  }
  throw new Error("no trailer frame in the gRPC-web body");
}

/** Code and ErrorInfo from gRPC trailers (`grpc-status`, `grpc-status-details-bin`). */
export function statusOfTrailers(h: Record<string, string>): { code: number; details?: { code: number; info?: ReturnType<typeof unpackInfo> } } {
  const code = Number(h["grpc-status"]);
  const bin = h["grpc-status-details-bin"];
  if (!bin) return { code };
  const status = fromBinary(StatusSchema, Buffer.from(bin, "base64"));
  return { code, details: { code: status.code, info: unpackInfo(status) } };
}

function unpackInfo(status: ReturnType<typeof fromBinary<typeof StatusSchema>>) {
  return status.details[0] ? anyUnpack(status.details[0], ErrorInfoSchema) : undefined;
}

/**
 * One gRPC call over h2c with the given (already framed) body; resolves with every response
 * header and trailer. Reuses `session` when given, else opens and closes its own.
 */
export function grpcCall(
  url: string,
  path: string,
  body: Buffer,
  headers: Record<string, string> = {},
  session?: http2.ClientHttp2Session,
): Promise<Record<string, string>> {
  const s = session ?? http2.connect(url);
  return new Promise((resolve, reject) => {
    s.on("error", reject);
    const req = s.request({
      ":method": "POST",
      ":path": path,
      "content-type": "application/grpc",
      te: "trailers",
      ...defaultAuthHeaders(url),
      ...headers,
    });
    const seen: Record<string, string> = {};
    const take = (h: http2.IncomingHttpHeaders) => {
      for (const [k, v] of Object.entries(h)) if (typeof v === "string") seen[k] = v;
    };
    req.on("response", take);
    req.on("trailers", take);
    req.resume();
    req.on("end", () => {
      s.off("error", reject);
      if (!session) s.close();
      resolve(seen);
    });
    req.on("error", reject);
    req.end(body);
  });
}
