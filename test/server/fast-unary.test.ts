/**
 * The lean unary gRPC, gRPC-web and Connect doors (src/server/fast-unary/) against connect-node, request
 * by request.
 *
 * Two servers on copies of one seeded data directory (same signing key, same rows) and one
 * issuer URL: one with the fast path disabled (every gRPC call through connect-node, the
 * reference), one with it on. Each case sends the
 * same raw HTTP/2 request to both and requires the same wire result: response headers (all of
 * them but `date`), the body bytes, the trailers (status, message, the exact
 * grpc-status-details-bin bytes, decoded too) and how the stream ended, plus the same
 * call-log line. Cases the fast path hands to connect-node (malformed or over-the-ceiling
 * deadlines, compressed requests, oversized, truncated, undecodable or repeated messages,
 * unknown paths) are here as well, so the hand-over is proven to change nothing either.
 *
 * Deadlines, which the fast path serves itself, also need what the wire does not show: both
 * servers run a call hook (test/support/seams.ts: one more before-call hook) that records the
 * HandlerContext each door built — whether it is the fast path's lean context (LEAN_CONTEXT:
 * the proof that the fast path, not connect-node, served the call), what `timeoutMs()` says,
 * whether `signal` was aborted and why — and, on request (`x-test-hook`), plays a slow handler
 * that is still running when the deadline passes: "honor" waits on `signal` and throws its
 * reason, "ignore <ms>" sleeps past the deadline and answers anyway.
 */
import fs from "node:fs";
import http from "node:http";
import http2 from "node:http2";
import os from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { anyUnpack } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import * as grpc from "@grpc/grpc-js";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { CreateGroupRequestSchema, GetGroupRequestSchema, GroupSchema } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { BadRequestSchema, ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { StatusSchema } from "../../gen/google/rpc/status_pb.js";
import { DEFAULT_ERROR_DOMAIN, LIMITS } from "../../src/server/config.js";
import type { BeforeCallHook } from "../../src/server/call-pipeline.js";
import { type App, startApp } from "../../src/server/create-app.js";
import { LEAN_CONTEXT } from "../../src/server/fast-unary/shared.js";
import { operatorToken } from "../support/auth.js";
import { envelope } from "../support/raw-rpc.js";
import { seamsForNextApp } from "../support/seams.js";

// The test hook below, on both servers (test/support/seams.ts).
vi.mock(import("../../src/server/call-pipeline.js"), async (original) => (await import("../support/seams.js")).withCallHook(await original()));

const SERVICE = "/chainguard.platform.iam.v2beta1.GroupsService";
const GET = `${SERVICE}/GetGroup`;
const CREATE = `${SERVICE}/CreateGroup`;

interface WireResult {
  readonly headers: Record<string, string | string[]>;
  readonly body: string;
  readonly trailers: Record<string, string | string[]>;
  readonly rstCode: number | undefined;
  readonly error: string | undefined;
}

interface Server {
  readonly app: App;
  readonly lines: Record<string, unknown>[];
  /** What the test hook saw, one entry per call that reached the pipeline's hooks. */
  readonly seen: Observation[];
  session?: http2.ClientHttp2Session;
}

interface Observation {
  /** Built by the fast path (createLeanContext), not by connect-node. */
  readonly lean: boolean;
  /** context.timeoutMs() when the hook started. */
  readonly timeoutMs: number | undefined;
  /** context.url (the auth hook reads it for credentials in the query). */
  readonly url: string;
  /** For the slow-handler modes: the signal's state and reason once the handler looked. */
  readonly aborted?: boolean;
  readonly reason?: string;
}

/** The upper bound on "honor"'s wait, so an ignored deadline fails the case instead of hanging it. */
const HONOR_CAP_MS = 2000;

function reasonOf(reason: unknown): string | undefined {
  if (reason === undefined) return undefined;
  return reason instanceof ConnectError ? `ConnectError ${Code[reason.code]}: ${reason.message}` : String(reason);
}

/** The test hook (see the header comment). */
function testHook(seen: Observation[]): BeforeCallHook {
  return async (_method, context) => {
    const base = { lean: LEAN_CONTEXT in context, timeoutMs: context.timeoutMs(), url: context.url };
    const mode = context.requestHeader.get("x-test-hook");
    if (mode === "honor") {
      // Reads the signal at once (so the deadline's timer is what aborts it), then waits.
      const signal = context.signal;
      await new Promise<void>((resolve) => {
        const cap = setTimeout(resolve, HONOR_CAP_MS);
        signal.addEventListener("abort", () => {
          clearTimeout(cap);
          resolve();
        });
      });
      seen.push({ ...base, aborted: signal.aborted, reason: reasonOf(signal.reason) });
      if (signal.aborted) throw signal.reason;
      return;
    }
    if (mode?.startsWith("ignore ")) {
      // Reads the signal only after the deadline has passed (the lazily created signal).
      await sleep(Number(mode.slice("ignore ".length)));
      const signal = context.signal;
      seen.push({ ...base, aborted: signal.aborted, reason: reasonOf(signal.reason) });
      return;
    }
    seen.push(base);
  };
}

let dataDirs: string[];
let reference: Server;
let fast: Server;
let token: string;
let groupUid: string;

async function start(dataDir: string, fastUnary: boolean, issuerUrl: string): Promise<Server> {
  const lines: Record<string, unknown>[] = [];
  const seen: Observation[] = [];
  const sink = { write: (line: string) => void lines.push(JSON.parse(line)) };
  seamsForNextApp({ callHook: testHook(seen) });
  const app = await startApp(
    { host: "127.0.0.1", port: 0, dataDir, errorDomain: DEFAULT_ERROR_DOMAIN, logLevel: "info", issuerUrl },
    { log: pino({ level: "info" }, sink), fastUnary },
  );
  return { app, lines, seen };
}

/** A request id the server generated (the client sent none, or one it refused): a fresh UUID per request. */
const GENERATED_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const sameIfGenerated = (id: unknown) => (typeof id === "string" && GENERATED_ID.test(id) ? "<generated>" : id);

function strip(h: http2.IncomingHttpHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(h)) if (k !== "date" && v !== undefined) out[k] = (k === "x-request-id" ? sameIfGenerated(v) : v) as string | string[];
  return out;
}

/**
 * One raw call. `cancel`: the client resets the stream (CANCEL) after sending `body`.
 * `untilTrailers`: the client resets the stream once the trailers arrived, for answers given
 * before the whole request was read (an oversized upload): whether the server then resets or
 * drains the unread rest is the listener's business (src/server/listener.ts), and that race,
 * the same with and without the fast path, is not what this suite compares.
 */
function call(
  server: Server,
  p: string,
  body: Buffer,
  headers: Record<string, string> = {},
  opts: { cancel?: boolean; untilTrailers?: boolean } = {},
): Promise<WireResult> {
  server.session ??= http2.connect(server.app.url);
  const session = server.session;
  return new Promise((resolve) => {
    const req = session.request({
      ":method": "POST",
      ":path": p,
      "content-type": "application/grpc",
      te: "trailers",
      authorization: `Bearer ${token}`,
      ...headers,
    });
    let head: Record<string, string | string[]> = {};
    let trailers: Record<string, string | string[]> = {};
    const chunks: Buffer[] = [];
    let error: string | undefined;
    req.on("response", (h) => {
      head = strip(h);
    });
    req.on("trailers", (h) => {
      trailers = strip(h);
      if (opts.untilTrailers) req.close(http2.constants.NGHTTP2_CANCEL);
    });
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("error", (e: NodeJS.ErrnoException) => {
      error = e.code;
    });
    req.on("close", () => resolve({ headers: head, body: Buffer.concat(chunks).toString("hex"), trailers, rstCode: req.rstCode, error }));
    if (opts.cancel) {
      req.write(body, () => setTimeout(() => req.close(http2.constants.NGHTTP2_CANCEL), 20));
    } else {
      req.end(body);
    }
  });
}

/** The call-log lines a request produced, without what always differs (time, pid, ms, a generated request id). */
function logSince(server: Server, from: number) {
  return server.lines
    .slice(from)
    .map(({ time, pid, hostname, ms, ...rest }) => ("requestId" in rest ? { ...rest, requestId: sameIfGenerated(rest.requestId) } : rest));
}

/** Sends the same request to both servers; expects the same wire result and log; returns it. */
async function same(p: string, body: Buffer, headers: Record<string, string> = {}, opts = {}) {
  const a0 = reference.lines.length;
  const b0 = fast.lines.length;
  const expected = await call(reference, p, body, headers, opts);
  const actual = await call(fast, p, body, headers, opts);
  expect(actual).toEqual(expected);
  expect(logSince(fast, b0)).toEqual(logSince(reference, a0));
  return expected;
}

function details(result: WireResult) {
  const bin = result.trailers["grpc-status-details-bin"] as string;
  return fromBinary(StatusSchema, Buffer.from(bin, "base64"));
}

/**
 * Runs `send` (one request to each server, compared by the caller) and returns what the test
 * hook saw on each: [reference, fast].
 */
async function observe(send: () => Promise<unknown>): Promise<[Observation[], Observation[]]> {
  const r0 = reference.seen.length;
  const f0 = fast.seen.length;
  await send();
  return [reference.seen.slice(r0), fast.seen.slice(f0)];
}

/**
 * One call each, connect-node's context on the reference and the fast path's on the other,
 * with the same signal state; `withinMs`: both deadlines were still ahead, at most that far.
 */
function expectFastServed([ref, fst]: [Observation[], Observation[]], withinMs?: number) {
  expect(ref).toHaveLength(1);
  expect(fst).toHaveLength(1);
  expect(ref[0].lean).toBe(false);
  expect(fst[0].lean).toBe(true);
  expect({ aborted: fst[0].aborted, reason: fst[0].reason }).toEqual({ aborted: ref[0].aborted, reason: ref[0].reason });
  // The two servers listen on different ports; the URL must be the same otherwise.
  expect(fst[0].url.replace(`:${fast.app.port}/`, ":PORT/")).toBe(ref[0].url.replace(`:${reference.app.port}/`, ":PORT/"));
  if (withinMs !== undefined) {
    for (const o of [ref[0], fst[0]]) {
      expect(typeof o.timeoutMs).toBe("number");
      expect(o.timeoutMs).toBeGreaterThan(0);
      expect(o.timeoutMs).toBeLessThanOrEqual(withinMs);
    }
  }
}

/** connect-node answered before any hook ran (its own INVALID_ARGUMENT), on both servers. */
function expectNoCall([ref, fst]: [Observation[], Observation[]]) {
  expect(ref).toEqual([]);
  expect(fst).toEqual([]);
}

const DEADLINE_REASON = "ConnectError DeadlineExceeded: [deadline_exceeded] the operation timed out";

/** Valid grpc-timeout values the fast path serves, with their length in ms; 1M is the ceiling. */
const GRPC_TIMEOUTS_MET: ReadonlyArray<[string, number]> = [
  ["5S", 5000],
  ["30000m", 30000],
  ["9000000u", 9000],
  ["1M", LIMITS.maxTimeoutMs],
];
/** Malformed: bad unit, no unit, a fraction, a sign, nine digits, empty, two values. */
const GRPC_TIMEOUTS_MALFORMED = ["5s", "5", "1.5S", "-1S", "123456789m", "", "1S, 2S"];
const GRPC_TIMEOUTS_OVER = [`${LIMITS.maxTimeoutMs + 1}m`, "2M", "1H", `${(LIMITS.maxTimeoutMs + 1) * 1000}u`];

const get = (uid: string) => envelope(Buffer.from(toBinary(GetGroupRequestSchema, create(GetGroupRequestSchema, { uid }))));

beforeAll(async () => {
  const seedDir = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-fast-unary-"));
  const copyDir = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-fast-unary-"));
  dataDirs = [seedDir, copyDir];
  const issuer = "http://trellis.test";
  const seeder = await start(seedDir, false, issuer);
  token = await operatorToken(seedDir);
  const created = await call(
    seeder,
    CREATE,
    envelope(Buffer.from(toBinary(CreateGroupRequestSchema, create(CreateGroupRequestSchema, { group: { name: "fast-unary org" } })))),
  );
  expect(created.trailers["grpc-status"]).toBe("0");
  groupUid = fromBinary(GroupSchema, Buffer.from(created.body, "hex").subarray(5)).uid;
  seeder.session?.close();
  await seeder.app.close();
  fs.cpSync(seedDir, copyDir, { recursive: true });
  reference = await start(seedDir, false, issuer);
  fast = await start(copyDir, true, issuer);
});

afterAll(async () => {
  for (const s of [reference, fast]) {
    s?.session?.close();
    await s?.app.close();
  }
  for (const d of dataDirs) fs.rmSync(d, { recursive: true, force: true });
});

describe("fast unary gRPC answers exactly as connect-node", () => {
  it("a valid GetGroup", async () => {
    const r = await same(GET, get(groupUid));
    expect(r.trailers["grpc-status"]).toBe("0");
    expect(fromBinary(GroupSchema, Buffer.from(r.body, "hex").subarray(5)).uid).toBe(groupUid);
    expect(r.headers["content-type"]).toBe("application/grpc+proto");
  });

  it("application/grpc+proto", async () => {
    await same(GET, get(groupUid), { "content-type": "application/grpc+proto" });
  });

  it("a group that does not exist: NOT_FOUND with ErrorInfo", async () => {
    const r = await same(GET, get("0".repeat(40)));
    expect(r.trailers["grpc-status"]).toBe("5");
    expect(anyUnpack(details(r).details[0], ErrorInfoSchema)?.domain).toBe(DEFAULT_ERROR_DOMAIN);
  });

  it("a bad field value: INVALID_ARGUMENT with BadRequest field violations", async () => {
    const r = await same(GET, get("not a uid"));
    expect(r.trailers["grpc-status"]).toBe("3");
    const bad = details(r)
      .details.map((d) => anyUnpack(d, BadRequestSchema))
      .find((d) => d !== undefined);
    expect(bad?.fieldViolations.length).toBeGreaterThan(0);
  });

  it("a bad CreateGroup leaves both answers (and the database) alike", async () => {
    const body = envelope(Buffer.from(toBinary(CreateGroupRequestSchema, create(CreateGroupRequestSchema, { group: { name: "" } }))));
    const r = await same(CREATE, body);
    expect(r.trailers["grpc-status"]).toBe("3");
  });

  it("unauthenticated: no token, and a forged one", async () => {
    const none = await same(GET, get(groupUid), { authorization: "" });
    expect(none.trailers["grpc-status"]).toBe("16");
    const forged = await same(GET, get(groupUid), { authorization: "Bearer eyJhbGciOiJFUzI1NiJ9.e30.AAAA" });
    expect(forged.trailers["grpc-status"]).toBe("16");
  });

  it("metadata and response compression negotiation (grpc-js's accept list, gzip, an unknown one)", async () => {
    await same(GET, get(groupUid), { "x-request-id": "abc", "custom-bin": Buffer.from("hi").toString("base64") });
    const gz = await same(GET, get(groupUid), { "grpc-accept-encoding": "identity,deflate,gzip" });
    expect(gz.headers["grpc-encoding"]).toBe("gzip");
    await same(GET, get(groupUid), { "grpc-accept-encoding": "br" });
    await same(GET, get(groupUid), { "grpc-accept-encoding": "snappy" });
    await same(GET, get(groupUid), { "grpc-encoding": "identity" });
  });

  it("context.url is connect-node's for every form of authority, the first time and again", async () => {
    for (const authority of ["TRELLIS.example:80", "trellis.example:443", "trellis.example:080", "127.0.0.1:9", "[::1]:8080", "Trellis.Example"]) {
      for (let round = 0; round < 2; round++) {
        const seen = await observe(() => same(GET, get(groupUid), { ":authority": authority }));
        expectFastServed(seen);
        if (authority === "TRELLIS.example:80") expect(seen[1][0]?.url).toBe(`http://trellis.example${GET}`);
      }
    }
  });

  it("a valid grpc-timeout that is met: served by the fast path, timeoutMs() counting down", async () => {
    for (const [value, ms] of GRPC_TIMEOUTS_MET) {
      let r: WireResult | undefined;
      expectFastServed(await observe(async () => (r = await same(GET, get(groupUid), { "grpc-timeout": value }))), ms);
      expect(r?.trailers["grpc-status"]).toBe("0");
    }
    // No deadline: timeoutMs() is undefined on both.
    const none = await observe(() => same(GET, get(groupUid)));
    expectFastServed(none);
    expect(none.flat().map((o) => o.timeoutMs)).toEqual([undefined, undefined]);
  });

  it("a zero grpc-timeout: the handler still runs and answers, the deadline already passed", async () => {
    const seen = await observe(() => same(GET, get(groupUid), { "grpc-timeout": "0m", "x-test-hook": "ignore 0" }));
    expectFastServed(seen);
    expect(seen[1][0]).toMatchObject({ aborted: true, reason: DEADLINE_REASON });
    expect(seen[1][0].timeoutMs).toBeLessThanOrEqual(0);
  });

  it("malformed and over-the-ceiling grpc-timeout: connect-node's INVALID_ARGUMENT, before any handler", async () => {
    for (const value of [...GRPC_TIMEOUTS_MALFORMED, ...GRPC_TIMEOUTS_OVER]) {
      let r: WireResult | undefined;
      expectNoCall(await observe(async () => (r = await same(GET, get(groupUid), { "grpc-timeout": value }))));
      expect(r?.trailers["grpc-status"]).toBe("3");
    }
  });

  it("a deadline that passes while the handler runs: the signal aborts with DEADLINE_EXCEEDED", async () => {
    // A handler that honours the signal answers DEADLINE_EXCEEDED (the signal's reason).
    const honored = await observe(async () => {
      const r = await same(GET, get(groupUid), { "grpc-timeout": "50m", "x-test-hook": "honor" });
      expect(r.trailers["grpc-status"]).toBe("4");
    });
    expectFastServed(honored);
    expect(honored[1][0]).toMatchObject({ aborted: true, reason: DEADLINE_REASON });
    // One that ignores it finishes later and its answer is sent as usual.
    const ignored = await observe(async () => {
      const r = await same(GET, get(groupUid), { "grpc-timeout": "20m", "x-test-hook": "ignore 150" });
      expect(r.trailers["grpc-status"]).toBe("0");
    });
    expectFastServed(ignored);
    expect(ignored[1][0]).toMatchObject({ aborted: true, reason: DEADLINE_REASON });
  });

  it("a @grpc/grpc-js call with a deadline succeeds through the fast path", async () => {
    const client = new grpc.Client(new URL(fast.app.url).host, grpc.credentials.createInsecure());
    try {
      const metadata = new grpc.Metadata();
      metadata.set("authorization", `Bearer ${token}`);
      const f0 = fast.seen.length;
      const group = await new Promise<ReturnType<typeof fromBinary<typeof GroupSchema>>>((resolve, reject) => {
        client.makeUnaryRequest(
          GET,
          (m: ReturnType<typeof create<typeof GetGroupRequestSchema>>) => Buffer.from(toBinary(GetGroupRequestSchema, m)),
          (b: Buffer) => fromBinary(GroupSchema, b),
          create(GetGroupRequestSchema, { uid: groupUid }),
          metadata,
          { deadline: Date.now() + 10_000 },
          (err, value) => (err || !value ? reject(err) : resolve(value)),
        );
      });
      expect(group.uid).toBe(groupUid);
      const seen = fast.seen.slice(f0);
      expect(seen).toHaveLength(1);
      expect(seen[0].lean).toBe(true);
      expect(seen[0].timeoutMs).toBeGreaterThan(0);
      expect(seen[0].timeoutMs).toBeLessThanOrEqual(10_000);
    } finally {
      client.close();
    }
  });

  it("an oversized message (> 1 MiB) is refused alike", async () => {
    const r = await same(GET, envelope(Buffer.alloc(LIMITS.maxMessageBytes + 1024, 0x41)), {}, { untilTrailers: true });
    expect(r.trailers["grpc-status"]).toBe("8");
  });

  it("bodies that are not one clean message are handed to connect-node", async () => {
    await same(GET, Buffer.from([0x0a, 0x7f, 0x01]).length ? envelope(Buffer.from([0x0a, 0x7f, 0x01])) : Buffer.alloc(0));
    await same(GET, Buffer.alloc(0)); // no message
    await same(GET, get(groupUid).subarray(0, 8)); // truncated
    await same(GET, Buffer.concat([get(groupUid), get(groupUid)])); // two messages
    const compressed = get(groupUid);
    compressed[0] = 1;
    await same(GET, compressed); // compressed flag without grpc-encoding
    await same(GET, get(groupUid), { "grpc-encoding": "gzip" }); // claims gzip, sends plain bytes
  });

  it("other content types, methods and paths", async () => {
    await same(GET, Buffer.from("{}"), { "content-type": "application/grpc+json" });
    await same(`${SERVICE}/NoSuchMethod`, get(groupUid));
    await same("/grpc.health.v1.Health/Check", envelope(Buffer.alloc(0)));
  });

  it("a cancelled call: no answer, no log line, and the session keeps working", async () => {
    const half = get(groupUid);
    const r = await same(GET, half.subarray(0, 4), {}, { cancel: true });
    expect(r.rstCode).toBe(http2.constants.NGHTTP2_CANCEL);
    const again = await same(GET, get(groupUid));
    expect(again.trailers["grpc-status"]).toBe("0");
  });
});

interface HttpResult {
  readonly status: number;
  readonly headers: Record<string, string | string[]>;
  readonly body: string;
}

/** One Connect request over HTTP/1.1 (a fresh connection) or h2 (the server's session). */
function connectCall(
  server: Server,
  version: "1.1" | "2",
  p: string,
  body: Buffer | string,
  headers: Record<string, string> = {},
  method = "POST",
  opts: { closeOnEnd?: boolean } = {},
): Promise<HttpResult> {
  const all: Record<string, string> = { authorization: `Bearer ${token}`, ...headers };
  if (version === "2") {
    server.session ??= http2.connect(server.app.url);
    const session = server.session;
    return new Promise((resolve, reject) => {
      const req = session.request({ ":method": method, ":path": p, ...all });
      let head: Record<string, string | string[]> = {};
      let status = 0;
      const chunks: Buffer[] = [];
      req.on("response", (h) => {
        status = Number(h[":status"]);
        head = strip(h);
        delete head[":status"];
      });
      req.on("data", (c: Buffer) => chunks.push(c));
      // An answer given before the upload was read: stop sending the rest once it is complete.
      if (opts.closeOnEnd) req.on("end", () => req.close(http2.constants.NGHTTP2_CANCEL));
      req.on("error", reject);
      req.on("close", () => resolve({ status, headers: head, body: Buffer.concat(chunks).toString("hex") }));
      if (method === "GET") req.end();
      else req.end(body);
    });
  }
  const u = new URL(server.app.url);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, method, path: p, headers: all, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: strip(res.headers), body: Buffer.concat(chunks).toString("hex") }));
    });
    req.on("error", reject);
    if (method === "GET") req.end();
    else req.end(body);
  });
}

describe.each(["1.1", "2"] as const)("fast Connect unary over HTTP/%s answers exactly as connect-node", (version) => {
  async function sameConnect(p: string, body: Buffer | string, headers: Record<string, string>, method = "POST") {
    const a0 = reference.lines.length;
    const b0 = fast.lines.length;
    const expected = await connectCall(reference, version, p, body, headers, method);
    const actual = await connectCall(fast, version, p, body, headers, method);
    expect(actual).toEqual(expected);
    expect(logSince(fast, b0)).toEqual(logSince(reference, a0));
    return expected;
  }
  const json = { "content-type": "application/json", "connect-protocol-version": "1" };
  const proto = { "content-type": "application/proto", "connect-protocol-version": "1" };
  const protoGet = (uid: string) => get(uid).subarray(5);
  const text = (r: HttpResult) => Buffer.from(r.body, "hex").toString("utf8");

  it("valid GetGroup in JSON and in binary", async () => {
    const j = await sameConnect(GET, JSON.stringify({ uid: groupUid }), json);
    expect(j.status).toBe(200);
    expect(JSON.parse(text(j)).uid).toBe(groupUid);
    const b = await sameConnect(GET, protoGet(groupUid), proto);
    expect(fromBinary(GroupSchema, Buffer.from(b.body, "hex")).uid).toBe(groupUid);
    await sameConnect(GET, JSON.stringify({ uid: groupUid }), { "content-type": "application/json" }); // no version header
  });

  it("errors from the pipeline: not found, bad field value (details), bad CreateGroup", async () => {
    const nf = await sameConnect(GET, JSON.stringify({ uid: "0".repeat(40) }), json);
    expect(nf.status).toBe(404);
    expect(JSON.parse(text(nf)).details.length).toBeGreaterThan(0);
    const bad = await sameConnect(GET, protoGet("not a uid"), proto);
    expect(JSON.parse(text(bad)).code).toBe("invalid_argument");
    await sameConnect(CREATE, JSON.stringify({ group: { name: "" } }), json);
  });

  it("unauthenticated: no token, and a forged one", async () => {
    const none = await sameConnect(GET, JSON.stringify({ uid: groupUid }), { ...json, authorization: "" });
    expect(none.status).toBe(401);
    await sameConnect(GET, JSON.stringify({ uid: groupUid }), { ...json, authorization: "Bearer x.y.z" });
  });

  it("metadata, response compression and request encodings", async () => {
    await sameConnect(GET, JSON.stringify({ uid: groupUid }), { ...json, "x-request-id": "abc" });
    await sameConnect(GET, JSON.stringify({ uid: groupUid }), { ...json, "accept-encoding": "gzip, br" });
    await sameConnect(GET, JSON.stringify({ uid: groupUid }), { ...json, "content-encoding": "identity" });
    await sameConnect(GET, JSON.stringify({ uid: groupUid }), { ...json, "content-encoding": "gzip" }); // a lie: connect-node
  });

  it("a valid connect-timeout-ms that is met, JSON and binary: served by the fast path", async () => {
    for (const [value, ms] of [
      ["5000", 5000],
      [String(LIMITS.maxTimeoutMs), LIMITS.maxTimeoutMs],
    ] as const) {
      const j = await observe(() => sameConnect(GET, JSON.stringify({ uid: groupUid }), { ...json, "connect-timeout-ms": value }));
      expectFastServed(j, ms);
      const b = await observe(() => sameConnect(GET, protoGet(groupUid), { ...proto, "connect-timeout-ms": value }));
      expectFastServed(b, ms);
    }
    const zero = await observe(() => sameConnect(GET, protoGet(groupUid), { ...proto, "connect-timeout-ms": "0", "x-test-hook": "ignore 0" }));
    expectFastServed(zero);
    expect(zero[1][0]).toMatchObject({ aborted: true, reason: DEADLINE_REASON });
  });

  it("malformed and over-the-ceiling connect-timeout-ms: connect-node's 400, before any handler", async () => {
    const values = ["5s", "-1", "1.5", "12345678901", "", String(LIMITS.maxTimeoutMs + 1), "99999999"];
    for (const value of values) {
      for (const [body, type] of [
        [JSON.stringify({ uid: groupUid }), json],
        [protoGet(groupUid), proto],
      ] as const) {
        let r: HttpResult | undefined;
        expectNoCall(await observe(async () => (r = await sameConnect(GET, body, { ...type, "connect-timeout-ms": value }))));
        expect(r?.status).toBe(400);
      }
    }
  });

  it("a deadline that passes while the handler runs, JSON and binary", async () => {
    for (const type of [json, proto]) {
      const body = type === json ? JSON.stringify({ uid: groupUid }) : protoGet(groupUid);
      const honored = await observe(async () => {
        const r = await sameConnect(GET, body, { ...type, "connect-timeout-ms": "50", "x-test-hook": "honor" });
        expect(JSON.parse(text(r)).code).toBe("deadline_exceeded");
      });
      expectFastServed(honored);
      expect(honored[1][0]).toMatchObject({ aborted: true, reason: DEADLINE_REASON });
      const ignored = await observe(async () => {
        const r = await sameConnect(GET, body, { ...type, "connect-timeout-ms": "20", "x-test-hook": "ignore 150" });
        expect(r.status).toBe(200);
      });
      expectFastServed(ignored);
      expect(ignored[1][0]).toMatchObject({ aborted: true, reason: DEADLINE_REASON });
    }
  });

  it("what connect-node keeps: bad version, GET, unknown fields, undecodable, oversized", async () => {
    await sameConnect(GET, JSON.stringify({ uid: groupUid }), { ...json, "connect-protocol-version": "2" });
    const q = `?connect=v1&encoding=json&message=${encodeURIComponent(JSON.stringify({ uid: groupUid }))}`;
    await sameConnect(`${GET}${q}`, "", {}, "GET");
    const unknown = await sameConnect(GET, JSON.stringify({ uid: groupUid, nope: 1 }), json);
    expect(unknown.status).toBe(400);
    await sameConnect(GET, "{not json", json);
    await sameConnect(GET, Buffer.from([0x0a, 0x7f, 0x01]), proto);
    await sameConnect(GET, "", json);
    const huge = JSON.stringify({ uid: "x".repeat(LIMITS.maxMessageBytes) });
    await sameConnect(GET, huge, json); // HTTP/1.1: with content-length
    if (version === "1.1") await sameConnect(GET, huge, { ...json, "transfer-encoding": "chunked" }); // found while reading
    await sameConnect(`${SERVICE}/NoSuchMethod`, "{}", json);
    await sameConnect(GET, "{}", { "content-type": "application/connect+json" });
  });
});

/** The frames of a gRPC-web body: data frames and the trailer frame's lines. */
function grpcWebFrames(hex: string): { data: Buffer[]; trailer: Record<string, string> } {
  const buf = Buffer.from(hex, "hex");
  const data: Buffer[] = [];
  const trailer: Record<string, string> = {};
  for (let at = 0; at + 5 <= buf.length; ) {
    const len = buf.readUInt32BE(at + 1);
    const payload = buf.subarray(at + 5, at + 5 + len);
    if (buf[at] & 0x80) {
      for (const line of payload.toString("latin1").split("\r\n")) {
        const i = line.indexOf(":");
        if (i > 0) trailer[line.slice(0, i).trim()] = line.slice(i + 1).trim();
      }
    } else data.push(payload);
    at += 5 + len;
  }
  return { data, trailer };
}

describe.each(["1.1", "2"] as const)("fast unary gRPC-web over HTTP/%s answers exactly as connect-node", (version) => {
  const web = { "content-type": "application/grpc-web+proto", "x-grpc-web": "1" };
  async function sameWeb(p: string, body: Buffer, headers: Record<string, string> = {}, closeOnEnd = false) {
    const a0 = reference.lines.length;
    const b0 = fast.lines.length;
    const expected = await connectCall(reference, version, p, body, { ...web, ...headers }, "POST", { closeOnEnd });
    const actual = await connectCall(fast, version, p, body, { ...web, ...headers }, "POST", { closeOnEnd });
    expect(actual).toEqual(expected);
    expect(logSince(fast, b0)).toEqual(logSince(reference, a0));
    return { ...expected, ...grpcWebFrames(expected.body) };
  }
  const statusOf = (r: { trailer: Record<string, string> }) => fromBinary(StatusSchema, Buffer.from(r.trailer["grpc-status-details-bin"], "base64"));

  it("a valid GetGroup, with either content type", async () => {
    const r = await sameWeb(GET, get(groupUid));
    expect(r.status).toBe(200);
    expect(r.headers["content-type"]).toBe("application/grpc-web+proto");
    expect(r.trailer["grpc-status"]).toBe("0");
    expect(fromBinary(GroupSchema, r.data[0]).uid).toBe(groupUid);
    await sameWeb(GET, get(groupUid), { "content-type": "application/grpc-web" });
  });

  it("errors from the pipeline carry their details in the trailer frame", async () => {
    const nf = await sameWeb(GET, get("0".repeat(40)));
    expect(nf.data).toEqual([]);
    expect(nf.trailer["grpc-status"]).toBe("5");
    expect(anyUnpack(statusOf(nf).details[0], ErrorInfoSchema)?.domain).toBe(DEFAULT_ERROR_DOMAIN);
    const bad = await sameWeb(GET, get("not a uid"));
    expect(
      statusOf(bad)
        .details.map((d) => anyUnpack(d, BadRequestSchema))
        .some((d) => (d?.fieldViolations.length ?? 0) > 0),
    ).toBe(true);
    const body = envelope(Buffer.from(toBinary(CreateGroupRequestSchema, create(CreateGroupRequestSchema, { group: { name: "" } }))));
    expect((await sameWeb(CREATE, body)).trailer["grpc-status"]).toBe("3");
  });

  it("unauthenticated: no token, and a forged one", async () => {
    expect((await sameWeb(GET, get(groupUid), { authorization: "" })).trailer["grpc-status"]).toBe("16");
    expect((await sameWeb(GET, get(groupUid), { authorization: "Bearer x.y.z" })).trailer["grpc-status"]).toBe("16");
  });

  it("metadata and response compression negotiation", async () => {
    await sameWeb(GET, get(groupUid), { "x-request-id": "abc", "x-user-agent": "grpc-web-javascript/0.1" });
    const gz = await sameWeb(GET, get(groupUid), { "grpc-accept-encoding": "gzip" });
    expect(gz.headers["grpc-encoding"]).toBe("gzip");
    await sameWeb(GET, get(groupUid), { "grpc-accept-encoding": "snappy" });
    await sameWeb(GET, get(groupUid), { "grpc-encoding": "identity" });
  });

  it("a valid grpc-timeout that is met: served by the fast path, either content type", async () => {
    for (const [value, ms] of GRPC_TIMEOUTS_MET) {
      const seen = await observe(async () => {
        expect((await sameWeb(GET, get(groupUid), { "grpc-timeout": value })).trailer["grpc-status"]).toBe("0");
      });
      expectFastServed(seen, ms);
    }
    expectFastServed(await observe(() => sameWeb(GET, get(groupUid), { "content-type": "application/grpc-web", "grpc-timeout": "5S" })), 5000);
  });

  it("malformed and over-the-ceiling grpc-timeout: connect-node's INVALID_ARGUMENT, before any handler", async () => {
    for (const value of [...GRPC_TIMEOUTS_MALFORMED, ...GRPC_TIMEOUTS_OVER]) {
      let status: string | undefined;
      expectNoCall(await observe(async () => (status = (await sameWeb(GET, get(groupUid), { "grpc-timeout": value })).trailer["grpc-status"])));
      expect(status).toBe("3");
    }
  });

  it("a deadline that passes while the handler runs", async () => {
    const honored = await observe(async () => {
      expect((await sameWeb(GET, get(groupUid), { "grpc-timeout": "50m", "x-test-hook": "honor" })).trailer["grpc-status"]).toBe("4");
    });
    expectFastServed(honored);
    expect(honored[1][0]).toMatchObject({ aborted: true, reason: DEADLINE_REASON });
    const ignored = await observe(async () => {
      expect((await sameWeb(GET, get(groupUid), { "grpc-timeout": "20m", "x-test-hook": "ignore 150" })).trailer["grpc-status"]).toBe("0");
    });
    expectFastServed(ignored);
    expect(ignored[1][0]).toMatchObject({ aborted: true, reason: DEADLINE_REASON });
  });

  it("what connect-node keeps: text and JSON variants, compression, bad bodies, oversized", async () => {
    await sameWeb(GET, Buffer.from(get(groupUid).toString("base64")), { "content-type": "application/grpc-web-text" });
    await sameWeb(GET, envelope(Buffer.from(JSON.stringify({ uid: groupUid }))), { "content-type": "application/grpc-web+json" });
    await sameWeb(GET, get(groupUid), { "grpc-encoding": "gzip" });
    await sameWeb(GET, envelope(Buffer.from([0x0a, 0x7f, 0x01])));
    await sameWeb(GET, Buffer.alloc(0));
    await sameWeb(GET, get(groupUid).subarray(0, 8));
    await sameWeb(GET, Buffer.concat([get(groupUid), get(groupUid)]));
    const flagged = get(groupUid);
    flagged[0] = 1;
    await sameWeb(GET, flagged);
    await sameWeb(`${SERVICE}/NoSuchMethod`, get(groupUid));
    if (version === "2") {
      // Over HTTP/1.1 the unread rest of an oversized upload is the listener's business (a
      // reset race, as for gRPC above); on h2 the answer itself is compared.
      const big = await sameWeb(GET, envelope(Buffer.alloc(LIMITS.maxMessageBytes + 1024, 0x41)), {}, true);
      expect(big.trailer["grpc-status"]).toBe("8");
    }
  });
});
