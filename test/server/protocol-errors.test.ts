/**
 * Errors connect-node raises before our pipeline runs still follow spec §7 on every RPC door:
 * ErrorInfo first, and hostile bytes are the client's fault (INVALID_ARGUMENT), never INTERNAL.
 * Raw requests, because no well-behaved client sends a corrupt message.
 */
import http from "node:http";
import http2 from "node:http2";
import { fromBinary } from "@bufbuild/protobuf";
import { anyUnpack } from "@bufbuild/protobuf/wkt";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { StatusSchema } from "../../gen/google/rpc/status_pb.js";
import { DEFAULT_ERROR_DOMAIN, LIMITS } from "../../src/server/config.js";
import { startTestApp, type TestApp } from "../support/app.js";

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
    const req = http.request({ host: u.hostname, port: u.port, method: "POST", path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

function grpcPost(path: string, body: Buffer, headers: Record<string, string> = {}) {
  return new Promise<Record<string, string>>((resolve, reject) => {
    const session = http2.connect(t.url);
    session.on("error", reject);
    const req = session.request({ ":method": "POST", ":path": path, "content-type": "application/grpc", te: "trailers", ...headers });
    const seen: Record<string, string> = {};
    const take = (h: http2.IncomingHttpHeaders) => {
      for (const [k, v] of Object.entries(h)) if (typeof v === "string") seen[k] = v;
    };
    req.on("response", take);
    req.on("trailers", take);
    req.resume();
    req.on("end", () => {
      session.close();
      resolve(seen);
    });
    req.on("error", reject);
    req.end(body);
  });
}

const envelope = (payload: Buffer) => Buffer.concat([Buffer.from([0, 0, 0, 0, payload.length]), payload]);

/** The ErrorInfo inside a base64 google.rpc.Status (gRPC and gRPC-web). */
function errorInfoOfStatus(bin: string) {
  const status = fromBinary(StatusSchema, Buffer.from(bin, "base64"));
  return { code: status.code, info: anyUnpack(status.details[0], ErrorInfoSchema) };
}

/** The trailer frame of a gRPC-web response body, as a header map. */
function grpcWebTrailers(body: Buffer): Record<string, string> {
  let at = 0;
  while (at < body.length) {
    const flag = body[at];
    const len = body.readUInt32BE(at + 1);
    if (flag & 0x80) {
      const out: Record<string, string> = {};
      for (const line of body.subarray(at + 5, at + 5 + len).toString("latin1").split("\r\n")) {
        const i = line.indexOf(":");
        if (i > 0) out[line.slice(0, i).trim()] = line.slice(i + 1).trim();
      }
      return out;
    }
    at += 5 + len;
  }
  throw new Error("no trailer frame");
}

describe("errors raised inside connect-node", () => {
  it("gRPC: a corrupt message is INVALID_ARGUMENT with ErrorInfo", async () => {
    const trailers = await grpcPost(LIST, envelope(CORRUPT));
    expect(trailers["grpc-status"]).toBe("3");
    expect(trailers["grpc-message"]).toContain("cannot decode the request message");
    const { code, info } = errorInfoOfStatus(trailers["grpc-status-details-bin"]);
    expect(code).toBe(3);
    expect(info).toMatchObject({ reason: "INVALID_ARGUMENT", domain: DEFAULT_ERROR_DOMAIN });
  });

  it("gRPC-web: a corrupt message and a deadline over the ceiling carry ErrorInfo", async () => {
    const corrupt = grpcWebTrailers((await post(LIST, { "content-type": "application/grpc-web+proto" }, envelope(CORRUPT))).body);
    expect(corrupt["grpc-status"]).toBe("3");
    expect(errorInfoOfStatus(corrupt["grpc-status-details-bin"]).info?.reason).toBe("INVALID_ARGUMENT");

    const late = await post(LIST, { "content-type": "application/grpc-web+proto", "grpc-timeout": "999999S" }, envelope(Buffer.alloc(0)));
    const trailers = grpcWebTrailers(late.body);
    expect(trailers["grpc-status"]).toBe("3");
    expect(decodeURIComponent(trailers["grpc-message"])).toContain(`<= ${LIMITS.maxTimeoutMs}`);
    expect(errorInfoOfStatus(trailers["grpc-status-details-bin"]).info).toMatchObject({ reason: "INVALID_ARGUMENT", domain: DEFAULT_ERROR_DOMAIN });
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
