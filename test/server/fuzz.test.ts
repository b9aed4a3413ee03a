/**
 * Property tests over hostile input (docs/security.md "Hostile input"): random JSON bodies with hostile
 * strings mixed in, on the REST door, and mutated protobuf messages on the gRPC, gRPC-web and
 * Connect doors. Whatever arrives, the server answers with success or a well-formed error
 * that is the client's fault (never INTERNAL or UNKNOWN), with ErrorInfo first, and a refused
 * request leaves the database exactly as it was.
 */
import http from "node:http";
import http2 from "node:http2";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CreateGroupRequestSchema } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { snapshotDb } from "../support/db.js";
import { connectCode, envelope, grpcCall, grpcWebTrailers, statusOfTrailers } from "../support/raw-rpc.js";
import { rest } from "../support/rest.js";

const RUNS = 120;
const CREATE = "/chainguard.platform.iam.v2beta1.GroupsService/CreateGroup";
/** The client's fault or the caller's state; never the server's. */
const CLIENT_CODES = new Set([3, 5, 6, 7, 8, 9, 11, 16]);

let t: TestApp;
let org: string;
beforeAll(async () => {
  t = await startTestApp();
  org = (await rest(t.url, "POST", "/iam/v2beta1/groups", { name: "fuzz root" })).body.uid;
});
afterAll(async () => t.close());

const hostile = fc.constantFrom(
  "..",
  "%2F",
  "a/b",
  "\u0000",
  "\ud800",
  "x".repeat(70_000),
  "__proto__",
  "constructor",
  "'; DROP TABLE groups; --",
  "\u202e\u0301",
  "😀",
  " ",
  ".",
  "",
);
const text = fc.oneof(hostile, fc.string({ maxLength: 80 }), fc.string({ unit: "binary", maxLength: 40 }));
const body = fc.oneof(
  fc.record({ name: text, description: text }, { requiredKeys: [] }),
  fc.dictionary(fc.oneof(text, fc.constantFrom("name", "description", "uid", "verified", "kind")), fc.jsonValue({ maxDepth: 2 }), {
    maxKeys: 4,
  }),
  fc.jsonValue({ maxDepth: 3 }),
);

describe("fuzzing the doors", () => {
  it("REST: random JSON bodies are answered cleanly and refusals write nothing", async () => {
    await fc.assert(
      fc.asyncProperty(body, async (value) => {
        const before = await snapshotDb(t);
        const res = await rest(t.url, "POST", `/iam/v2beta1/groups/${org}`, JSON.stringify(value));
        if (res.status === 200) {
          expect(typeof res.body.uid).toBe("string");
          return;
        }
        expect(res.status).toBeGreaterThanOrEqual(400);
        expect(res.status).toBeLessThan(500);
        expect(CLIENT_CODES.has(res.body.code), JSON.stringify(res.body)).toBe(true);
        expect(res.body.details[0]["@type"]).toBe("type.googleapis.com/google.rpc.ErrorInfo");
        expect(await snapshotDb(t)).toBe(before);
      }),
      { numRuns: RUNS },
    );
  });

  it("RPC: mutated protobuf messages are answered cleanly on every binary door and refusals write nothing", async () => {
    const message = fc
      .record({ name: text, description: text })
      .map((g) => toBinary(CreateGroupRequestSchema, create(CreateGroupRequestSchema, { parent: org, group: g })));
    const mutation = fc.oneof(
      fc.record({ kind: fc.constant("truncate" as const), at: fc.nat() }),
      fc.record({ kind: fc.constant("flip" as const), at: fc.nat(), bits: fc.integer({ min: 1, max: 255 }) }),
      fc.record({ kind: fc.constant("splice" as const), at: fc.nat(), bytes: fc.uint8Array({ minLength: 1, maxLength: 12 }) }),
    );
    const door = fc.constantFrom("connect", "grpc-web", "grpc");
    await fc.assert(
      fc.asyncProperty(message, mutation, door, async (bytes, m, via) => {
        const mutated = mutate(Buffer.from(bytes), m);
        const before = await snapshotDb(t);
        const { code, info } = await send(via, mutated);
        if (code === 0) return;
        expect(CLIENT_CODES.has(code), `${via}: code ${code}`).toBe(true);
        expect(info).toBeDefined();
        expect(await snapshotDb(t)).toBe(before);
      }),
      { numRuns: RUNS },
    );
  });
});

type Mutation = { kind: "truncate"; at: number } | { kind: "flip"; at: number; bits: number } | { kind: "splice"; at: number; bytes: Uint8Array };

function mutate(bytes: Buffer, m: Mutation): Buffer {
  if (bytes.length === 0) return Buffer.from([0xff]);
  const at = m.at % bytes.length;
  if (m.kind === "truncate") return bytes.subarray(0, at);
  if (m.kind === "flip") {
    const out = Buffer.from(bytes);
    out[at] ^= m.bits;
    return out;
  }
  return Buffer.concat([bytes.subarray(0, at), Buffer.from(m.bytes), bytes.subarray(at)]);
}

/** Sends one message through a door; returns the gRPC code and the ErrorInfo (if any). */
async function send(via: string, payload: Buffer): Promise<{ code: number; info?: unknown }> {
  if (via === "grpc") return sendGrpc(payload);
  const u = new URL(t.url);
  const contentType = via === "connect" ? "application/proto" : "application/grpc-web+proto";
  const res = await new Promise<{ status: number; body: Buffer }>((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, method: "POST", path: CREATE, headers: { "content-type": contentType } }, (r) => {
      const chunks: Buffer[] = [];
      r.on("data", (c: Buffer) => chunks.push(c));
      r.on("end", () => resolve({ status: r.statusCode ?? 0, body: Buffer.concat(chunks) }));
    });
    req.on("error", reject);
    req.end(via === "connect" ? payload : envelope(payload));
  });
  if (via === "connect") {
    if (res.status === 200) return { code: 0 };
    const json = JSON.parse(res.body.toString("utf8"));
    const detail = json.details?.[0];
    return {
      code: connectCode(json.code),
      info: detail?.type === "google.rpc.ErrorInfo" ? fromBinary(ErrorInfoSchema, Buffer.from(detail.value, "base64")) : undefined,
    };
  }
  const { code, details } = statusOfTrailers(grpcWebTrailers(res.body));
  return { code, info: details?.info };
}

let session: http2.ClientHttp2Session | undefined;
async function sendGrpc(payload: Buffer): Promise<{ code: number; info?: unknown }> {
  if (!session || session.closed || session.destroyed) {
    session = http2.connect(t.url);
    session.on("error", () => {});
    session.unref();
  }
  const { code, details } = statusOfTrailers(await grpcCall(t.url, CREATE, envelope(payload), {}, session));
  return { code, info: details?.info };
}
