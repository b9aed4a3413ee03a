/**
 * Errors connect-node raises before our pipeline runs still follow docs/published-api.md "Errors" on every RPC door:
 * ErrorInfo first, and hostile bytes are the client's fault (INVALID_ARGUMENT), never INTERNAL.
 * Raw requests, because no well-behaved client sends a corrupt message.
 */
import http from "node:http";
import { gzipSync } from "node:zlib";
import { fromBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { DEFAULT_ERROR_DOMAIN, LIMITS } from "../../src/server/config.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { envelope, grpcCall, grpcWebTrailers, statusOfTrailers } from "../support/raw-rpc.js";
import { defaultAuthHeaders } from "../support/auth.js";

const LIST = "/chainguard.platform.iam.v2beta1.GroupsService/ListGroups";
/** Field 1 (uidp, a message) with a length running past the end: undecodable. */
const CORRUPT = Buffer.from([0x0a, 0x7f, 0x01]);

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t.close());

function post(path: string, headers: Record<string, string>, body: Buffer | string) {
  const u = new URL(t.url);
  return new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
    const withAuth = { ...defaultAuthHeaders(t.url), ...headers };
    const req = http.request({ host: u.hostname, port: u.port, method: "POST", path, headers: withAuth }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** The ErrorInfo inside a base64 google.rpc.Status (gRPC and gRPC-web). */
function errorInfoOfStatus(trailers: Record<string, string>) {
  const { details } = statusOfTrailers(trailers);
  return { code: details?.code, info: details?.info };
}

describe("errors raised inside connect-node", () => {
  it("gRPC: a corrupt message is INVALID_ARGUMENT with ErrorInfo", async () => {
    const trailers = await grpcCall(t.url, LIST, envelope(CORRUPT));
    expect(trailers["grpc-status"]).toBe("3");
    expect(trailers["grpc-message"]).toContain("cannot decode the request message");
    const { code, info } = errorInfoOfStatus(trailers);
    expect(code).toBe(3);
    expect(info).toMatchObject({ reason: "INVALID_ARGUMENT", domain: DEFAULT_ERROR_DOMAIN });
  });

  it("gRPC-web: a corrupt message and a deadline over the ceiling carry ErrorInfo", async () => {
    const corrupt = grpcWebTrailers((await post(LIST, { "content-type": "application/grpc-web+proto" }, envelope(CORRUPT))).body);
    expect(corrupt["grpc-status"]).toBe("3");
    expect(errorInfoOfStatus(corrupt).info?.reason).toBe("INVALID_ARGUMENT");

    const late = await post(LIST, { "content-type": "application/grpc-web+proto", "grpc-timeout": "999999S" }, envelope(Buffer.alloc(0)));
    const trailers = grpcWebTrailers(late.body);
    expect(trailers["grpc-status"]).toBe("3");
    expect(decodeURIComponent(trailers["grpc-message"])).toContain(`<= ${LIMITS.maxTimeoutMs}`);
    expect(errorInfoOfStatus(trailers).info).toMatchObject({ reason: "INVALID_ARGUMENT", domain: DEFAULT_ERROR_DOMAIN });
  });

  it("Connect: corrupt protobuf, an unknown JSON key and a deadline over the ceiling carry ErrorInfo", async () => {
    const cases = [
      await post(LIST, { "content-type": "application/proto" }, CORRUPT),
      await post(LIST, { "content-type": "application/json" }, '{"bogus":1}'),
      await post(LIST, { "content-type": "application/json", "connect-timeout-ms": String(LIMITS.maxTimeoutMs + 1) }, "{}"),
    ];
    for (const res of cases) {
      expect(res.status).toBe(400);
      expect(Number(res.headers["content-length"])).toBe(res.body.length);
      const body = JSON.parse(res.body.toString("utf8"));
      expect(body.code).toBe("invalid_argument");
      expect(body.details[0].type).toBe("google.rpc.ErrorInfo");
      const info = fromBinary(ErrorInfoSchema, Buffer.from(body.details[0].value, "base64"));
      expect(info).toMatchObject({ reason: "INVALID_ARGUMENT", domain: DEFAULT_ERROR_DOMAIN });
    }
  });

  it("leaves errors made by the services untouched (their details come from the pipeline)", async () => {
    const res = await post(
      "/chainguard.platform.iam.v2beta1.GroupsService/GetGroup",
      { "content-type": "application/json" },
      JSON.stringify({ uid: "a".repeat(40) }),
    );
    expect(res.status).toBe(404);
    const body = JSON.parse(res.body.toString("utf8"));
    expect(body.code).toBe("not_found");
    const info = fromBinary(ErrorInfoSchema, Buffer.from(body.details[0].value, "base64"));
    expect(info.reason).toBe("NOT_FOUND");
    expect(body.details.length).toBeGreaterThan(1); // ResourceInfo follows, as the service made it
  });
});

describe("compressed bytes the server cannot read are the client's error", () => {
  /** A gzip stream cut short: zlib's "unexpected end of file", which connect-node calls INTERNAL. */
  const truncatedGzip = gzipSync(Buffer.from("{}")).subarray(0, 12);
  /** An envelope with the compressed flag set. */
  const flagged = (payload: Buffer) => {
    const out = envelope(payload);
    out[0] = 1;
    return out;
  };

  it("gRPC: an envelope flagged compressed without grpc-encoding, and one that does not decompress, are INVALID_ARGUMENT with ErrorInfo", async () => {
    for (const [body, headers] of [
      [flagged(Buffer.alloc(0)), {}],
      [flagged(truncatedGzip), { "grpc-encoding": "gzip" }],
    ] as const) {
      const trailers = await grpcCall(t.url, LIST, body, headers);
      expect(trailers["grpc-status"]).toBe("3");
      expect(errorInfoOfStatus(trailers).info).toMatchObject({ reason: "INVALID_ARGUMENT", domain: DEFAULT_ERROR_DOMAIN });
    }
  });

  it("gRPC-web: an envelope flagged compressed without grpc-encoding, and one that does not decompress, are INVALID_ARGUMENT with ErrorInfo", async () => {
    for (const [body, headers] of [
      [flagged(Buffer.alloc(0)), {}],
      [flagged(truncatedGzip), { "grpc-encoding": "gzip" }],
    ] as const) {
      const res = await post(LIST, { "content-type": "application/grpc-web+proto", ...headers }, body);
      const trailers = grpcWebTrailers(res.body);
      expect(trailers["grpc-status"]).toBe("3");
      expect(errorInfoOfStatus(trailers).info).toMatchObject({ reason: "INVALID_ARGUMENT", domain: DEFAULT_ERROR_DOMAIN });
    }
  });

  it("Connect: a body that does not decompress is INVALID_ARGUMENT (400) with ErrorInfo", async () => {
    const res = await post(LIST, { "content-type": "application/json", "content-encoding": "gzip" }, truncatedGzip);
    expect(res.status).toBe(400);
    const body = JSON.parse(res.body.toString("utf8"));
    expect(body.code).toBe("invalid_argument");
    expect(fromBinary(ErrorInfoSchema, Buffer.from(body.details[0].value, "base64")).reason).toBe("INVALID_ARGUMENT");
  });
});
