/**
 * Raw requests on every door, for inputs no generated client sends (invalid UTF-8, duplicate
 * JSON keys, corrupt compressed bodies, repeated headers), and one reading of the answer
 * whatever the protocol: the gRPC code, the HTTP status, the message and the AIP-193 details
 * (ErrorInfo, BadRequest field violations).
 *
 * Headers are given as [name, value] pairs so a header can be sent twice: on HTTP/1.1 as two
 * header lines, on h2 as two header entries.
 */
import http from "node:http";
import http2 from "node:http2";
import { fromBinary } from "@bufbuild/protobuf";
import { anyUnpack } from "@bufbuild/protobuf/wkt";
import { BadRequestSchema, ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { StatusSchema } from "../../gen/google/rpc/status_pb.js";
import { connectCode, grpcWebTrailers } from "./raw-rpc.js";

export type Door = "connect" | "grpc" | "grpc-web" | "rest";
export type HeaderPairs = ReadonlyArray<readonly [string, string]>;

export interface RawResponse {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly trailers: Record<string, string>;
  readonly body: Buffer;
}

export interface Outcome {
  /** gRPC code (0 = OK). */
  readonly code: number;
  /** HTTP status of the response. */
  readonly status: number;
  readonly message: string;
  readonly reason: string | undefined;
  /** ErrorInfo is the first detail (docs/published-api.md "Errors"). */
  readonly errorInfoFirst: boolean;
  readonly fields: string[];
  /** The response body as text (successful Connect and REST answers are JSON). */
  readonly text: string;
}

/** One request over HTTP/1.1 (`h2: false`) or h2c. Resolves with everything the server sent. */
export function rawRequest(
  baseUrl: string,
  init: { h2: boolean; method?: string; path: string; headers: HeaderPairs; body?: Buffer | string },
): Promise<RawResponse> {
  return init.h2 ? h2Request(baseUrl, init) : h1Request(baseUrl, init);
}

function grouped(headers: HeaderPairs): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of headers) {
    const key = k.toLowerCase();
    const seen = out[key];
    out[key] = seen === undefined ? v : Array.isArray(seen) ? [...seen, v] : [seen, v];
  }
  return out;
}

function flat(h: http.IncomingHttpHeaders | http2.IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) if (v !== undefined) out[k] = Array.isArray(v) ? v.join(", ") : String(v);
  return out;
}

function h1Request(baseUrl: string, init: { method?: string; path: string; headers: HeaderPairs; body?: Buffer | string }): Promise<RawResponse> {
  const u = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, method: init.method ?? "POST", path: init.path, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: flat(res.headers), trailers: flat(res.trailers), body: Buffer.concat(chunks) }));
    });
    // setHeader with an array writes one header line per value.
    for (const [k, v] of Object.entries(grouped(init.headers))) req.setHeader(k, v);
    req.on("error", reject);
    req.end(init.body);
  });
}

function h2Request(baseUrl: string, init: { method?: string; path: string; headers: HeaderPairs; body?: Buffer | string }): Promise<RawResponse> {
  const session = http2.connect(baseUrl);
  return new Promise<RawResponse>((resolve, reject) => {
    session.on("error", reject);
    const req = session.request({ ":method": init.method ?? "POST", ":path": init.path, ...grouped(init.headers) });
    let status = 0;
    const headers: Record<string, string> = {};
    const trailers: Record<string, string> = {};
    req.on("response", (h) => {
      status = Number(h[":status"]);
      Object.assign(headers, flat(h));
    });
    req.on("trailers", (h) => Object.assign(trailers, flat(h)));
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("error", reject);
    req.on("end", () => resolve({ status, headers, trailers, body: Buffer.concat(chunks) }));
    req.end(init.body);
  }).finally(() => session.close());
}

/** Reads the answer of `door` into one shape. */
export function outcomeOf(door: Door, res: RawResponse): Outcome {
  const text = res.body.toString("utf8");
  if (door === "grpc" || door === "grpc-web") {
    const t = door === "grpc" ? { ...res.headers, ...res.trailers } : res.body.length ? safeWebTrailers(res.body) : res.headers;
    const code = Number(t["grpc-status"] ?? NaN);
    const bin = t["grpc-status-details-bin"];
    const status = bin ? fromBinary(StatusSchema, Buffer.from(bin, "base64")) : undefined;
    const details = status?.details ?? [];
    return {
      code,
      status: res.status,
      message: decodeURIComponent(t["grpc-message"] ?? ""),
      ...detailsOf(details.map((d) => ({ typeUrl: d.typeUrl, value: d.value }))),
      text,
    };
  }
  if (res.status === 200) return { code: 0, status: 200, message: "", reason: undefined, errorInfoFirst: false, fields: [], text };
  const body = JSON.parse(text) as { code: string | number; message?: string; details?: Array<Record<string, unknown>> };
  const code = typeof body.code === "number" ? body.code : connectCode(body.code);
  const details = (body.details ?? []).map((d) =>
    door === "connect" ? { typeUrl: `type.googleapis.com/${d.type as string}`, value: Buffer.from(d.value as string, "base64") } : { json: d },
  );
  return { code, status: res.status, message: body.message ?? "", ...detailsOf(details), text };
}

function safeWebTrailers(body: Buffer): Record<string, string> {
  try {
    return grpcWebTrailers(body);
  } catch {
    return {};
  }
}

type Detail = { typeUrl: string; value: Uint8Array } | { json: Record<string, unknown> };

function detailsOf(details: Detail[]): Pick<Outcome, "reason" | "errorInfoFirst" | "fields"> {
  let reason: string | undefined;
  const fields: string[] = [];
  details.forEach((d, i) => {
    if ("json" in d) {
      if (d.json["@type"] === "type.googleapis.com/google.rpc.ErrorInfo" && i === 0) reason = d.json.reason as string;
      if (d.json["@type"] === "type.googleapis.com/google.rpc.BadRequest") {
        for (const v of (d.json.fieldViolations as Array<{ field: string }>) ?? []) fields.push(v.field);
      }
      return;
    }
    const any = { $typeName: "google.protobuf.Any" as const, typeUrl: d.typeUrl, value: d.value };
    const info = anyUnpack(any, ErrorInfoSchema);
    if (info && i === 0) reason = info.reason;
    const bad = anyUnpack(any, BadRequestSchema);
    if (bad) for (const v of bad.fieldViolations) fields.push(v.field);
  });
  return { reason, errorInfoFirst: reason !== undefined, fields };
}
