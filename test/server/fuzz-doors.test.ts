/**
 * Property-based fuzzing of every door of a real server (port 0, fresh database), with the
 * fast unary path on and off: batches of random requests, and of valid requests mutated,
 * over raw HTTP/1.1 sockets and HTTP/2. What varies: method, path (RPC, REST, health,
 * reflection, issuer documents, junk), Host / :authority, content type, the three
 * compression headers, both deadline headers, Authorization (none, valid, malformed,
 * repeated), CORS headers, random extra headers, and the body (JSON, protobuf, envelopes,
 * gzip, bytes, each possibly mutated).
 *
 * Per request: an answer or a closed connection within the time limit; no INTERNAL or
 * UNKNOWN status and no HTTP 5xx (the deliberate INTERNAL of request-errors.ts is for bugs,
 * and fuzzing must find none); every error that carries a status carries ErrorInfo first;
 * a JSON error body (REST, Connect) comes with its code's HTTP status (src/errors/codes.ts);
 * and a request that was not accepted left the database exactly as it was.
 * After each batch: the server still answers a health check and a GetGroup.
 *
 * Reproducible: a fixed seed by default (CI), TRELLIS_FUZZ_SEED to explore others,
 * TRELLIS_FUZZ_RUNS for more batches; fast-check prints the seed and path of a failure.
 * Bounded: 150 batches (up to 8 requests each) per mode, and a time limit per property
 * after which no new batch starts (about 10 s for the file on a loaded 2-core machine).
 */
import http2 from "node:http2";
import { gzipSync } from "node:zlib";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CreateGroupRequestSchema, GetGroupRequestSchema, ListGroupsRequestSchema } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { StatusSchema } from "../../gen/google/rpc/status_pb.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { snapshotDb } from "../support/db.js";
import { type RawResponse, rawHttp1, rawHttp2 } from "../support/raw-http.js";
import { GrpcCode, httpStatusOf } from "../../src/errors/codes.js";
import { connectCode, envelope } from "../support/raw-rpc.js";
import { rest } from "../support/rest.js";

const SEED = process.env.TRELLIS_FUZZ_SEED ? Number(process.env.TRELLIS_FUZZ_SEED) : 170_001;
const BATCHES = process.env.TRELLIS_FUZZ_RUNS ? Number(process.env.TRELLIS_FUZZ_RUNS) : 150;
/** Per property: fast-check stops starting new batches after this (not a failure). */
const TIME_LIMIT_MS = 12_000;
/** A request without an answer or a close by then is a failure (every request sent is complete). */
const ANSWER_TIMEOUT_MS = 4_000;
const ORIGIN = "https://app.example.test";

const SERVICE = "/chainguard.platform.iam.v2beta1.GroupsService";
const RPC_PATHS = [`${SERVICE}/GetGroup`, `${SERVICE}/CreateGroup`, `${SERVICE}/ListGroups`, `${SERVICE}/UpdateGroup`, `${SERVICE}/DeleteGroup`];
const OTHER_PATHS = [
  "/grpc.health.v1.Health/Check",
  "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
  "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
  "/.well-known/jwks.json",
  "/.well-known/openid-configuration",
  "/openapi.json",
  "/",
  "*",
  "/iam/v2beta1/groups",
  "/iam/v2beta1/groups:count",
  "/iam/v2beta1/groups?access_token=abc",
  "/iam/v2beta1/groups/%zz",
  "/iam/v2beta1/groups/..%2F..",
  "/iam/v2beta1/roles",
  "/iam/v2beta1/identities",
  "/registry/v2beta1/repos",
];
const CONTENT_TYPES = [
  "application/json",
  "application/proto",
  "application/grpc",
  "application/grpc+proto",
  "application/grpc+json",
  "application/grpc-web",
  "application/grpc-web+proto",
  "application/grpc-web+json",
  "application/grpc-web-text",
  "application/connect+json",
  "application/connect+proto",
  "application/json; charset=utf-8",
  "application/x-www-form-urlencoded",
  "text/plain",
  "",
];
const AUTHORITIES_BAD = ["%zz", "a.09", "1.2.3.999", "host:99999", "xn--zz", "[::1", "a@b", "x".repeat(320), "..", "[v1.x]"];
const ENCODINGS = ["gzip", "br", "identity", "deflate", "zstd", "gzip, br", "", "x\u00ff"];
const GRPC_TIMEOUTS = ["1S", "100m", "5000u", "1n", "99999999H", "-1S", "0m", "abc", "10", "1.5S", ""];
const CONNECT_TIMEOUTS = ["100", "0", "-1", "1e9", "abc", "60001", "9999999999", ""];
/**
 * Header names the fuzz may add with random values (hop-by-hop ones excepted: they change
 * framing). `host` makes a second Host line on HTTP/1.1 and a `host` beside `:authority` on h2.
 */
const EXTRA_NAMES = [
  "host",
  "x-test",
  "accept-encoding",
  "grpc-accept-encoding",
  "connect-accept-encoding",
  "te",
  "accept",
  "user-agent",
  "x-forwarded-for",
  "connect-protocol-version",
  "origin",
  "access-control-request-method",
  "cookie",
  "expect",
  "range",
  "if-none-match",
];

interface Spec {
  readonly h2: boolean;
  readonly method: string;
  readonly path: string;
  /** null: no Host at all (HTTP/1.0 on HTTP/1.1; the client's default on h2). */
  readonly authority: string | null;
  readonly headers: ReadonlyArray<readonly [string, string]>;
  readonly body: Uint8Array;
}

/** Group names: some valid, most not; a number keeps valid ones from colliding too often. */
const groupName = fc.tuple(fc.string({ maxLength: 20 }), fc.nat(99_999)).map(([text, n]) => `${text}${n}`);

/** Valid requests of every door, for a group `org` and a token; mutated afterwards. */
function validRequests(org: string, token: string) {
  const auth = ["authorization", `Bearer ${token}`] as const;
  const proto = {
    get: toBinary(GetGroupRequestSchema, create(GetGroupRequestSchema, { uid: org })),
    list: toBinary(ListGroupsRequestSchema, create(ListGroupsRequestSchema, {})),
    create: (name: string) => toBinary(CreateGroupRequestSchema, create(CreateGroupRequestSchema, { parent: org, group: { name } })),
  };
  const json = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
  return fc.oneof(
    fc.constant<Spec>({
      h2: false,
      method: "POST",
      path: `${SERVICE}/GetGroup`,
      authority: "localhost",
      headers: [["content-type", "application/json"], auth],
      body: json({ uid: org }),
    }),
    fc.constant<Spec>({
      h2: true,
      method: "POST",
      path: `${SERVICE}/GetGroup`,
      authority: "localhost",
      headers: [["content-type", "application/proto"], auth],
      body: proto.get,
    }),
    fc.constant<Spec>({
      h2: true,
      method: "POST",
      path: `${SERVICE}/ListGroups`,
      authority: "localhost",
      headers: [["content-type", "application/grpc"], ["te", "trailers"], auth],
      body: envelope(Buffer.from(proto.list)),
    }),
    fc.constant<Spec>({
      h2: false,
      method: "POST",
      path: `${SERVICE}/GetGroup`,
      authority: "localhost",
      headers: [["content-type", "application/grpc-web+proto"], auth],
      body: envelope(Buffer.from(proto.get)),
    }),
    fc.constant<Spec>({
      h2: true,
      method: "POST",
      path: `${SERVICE}/GetGroup`,
      authority: "localhost",
      headers: [["content-type", "application/grpc-web"], auth],
      body: envelope(Buffer.from(proto.get)),
    }),
    fc.constant<Spec>({ h2: false, method: "GET", path: `/iam/v2beta1/groups/${org}`, authority: "localhost", headers: [auth], body: new Uint8Array(0) }),
    fc.constant<Spec>({ h2: true, method: "GET", path: "/iam/v2beta1/groups?pageSize=2", authority: "localhost", headers: [auth], body: new Uint8Array(0) }),
    fc.constant<Spec>({ h2: false, method: "GET", path: "/.well-known/jwks.json", authority: "localhost", headers: [], body: new Uint8Array(0) }),
    fc.constant<Spec>({
      h2: true,
      method: "POST",
      path: "/grpc.health.v1.Health/Check",
      authority: "localhost",
      headers: [["content-type", "application/grpc"]],
      body: envelope(Buffer.alloc(0)),
    }),
    fc.constant<Spec>({
      h2: false,
      method: "OPTIONS",
      path: "/iam/v2beta1/groups",
      authority: "localhost",
      headers: [
        ["origin", ORIGIN],
        ["access-control-request-method", "POST"],
      ],
      body: new Uint8Array(0),
    }),
    groupName.map(
      (name): Spec => ({
        h2: false,
        method: "POST",
        path: `/iam/v2beta1/groups/${org}`,
        authority: "localhost",
        headers: [["content-type", "application/json"], auth],
        body: json({ name }),
      }),
    ),
    groupName.map(
      (name): Spec => ({
        h2: true,
        method: "POST",
        path: `${SERVICE}/CreateGroup`,
        authority: "localhost",
        headers: [["content-type", "application/grpc+proto"], ["te", "trailers"], auth],
        body: envelope(Buffer.from(proto.create(name))),
      }),
    ),
  );
}

/** Printable header text (no CR/LF/NUL, which no parser lets through) with some bytes above 0x7f. */
const headerText = fc.string({
  unit: fc.oneof(fc.integer({ min: 0x20, max: 0x7e }), fc.integer({ min: 0x80, max: 0xff })).map((c) => String.fromCharCode(c)),
  maxLength: 40,
});
const tokenText = fc.stringMatching(/^[a-z0-9-]{1,16}$/);

function headerValueFor(name: string, token: string) {
  switch (name) {
    case "content-type":
      return fc.oneof(fc.constantFrom(...CONTENT_TYPES), headerText);
    case "content-encoding":
    case "grpc-encoding":
    case "connect-content-encoding":
      return fc.oneof(fc.constantFrom(...ENCODINGS), headerText);
    case "grpc-timeout":
      return fc.oneof(fc.constantFrom(...GRPC_TIMEOUTS), headerText);
    case "connect-timeout-ms":
      return fc.oneof(fc.constantFrom(...CONNECT_TIMEOUTS), headerText);
    case "authorization":
      return fc.oneof(
        fc.constantFrom(
          `Bearer ${token}`,
          `bearer ${token}`,
          token,
          "Bearer",
          "Bearer a.b.c",
          `Bearer ${token}x`,
          "Basic YTpi",
          `Bearer ${token}, Bearer ${token}`,
        ),
        headerText,
      );
    default:
      return headerText;
  }
}

const HEADER_NAMES = [
  "content-type",
  "content-encoding",
  "grpc-encoding",
  "connect-content-encoding",
  "grpc-timeout",
  "connect-timeout-ms",
  "authorization",
  ...EXTRA_NAMES,
];

/** One change to a request. */
function mutation(token: string) {
  const setHeader = fc.constantFrom(...HEADER_NAMES).chain((name) =>
    headerValueFor(name, token).map(
      (value) =>
        (s: Spec): Spec => ({ ...s, headers: [...s.headers.filter(([n]) => n !== name), [name, value]] }),
    ),
  );
  const addHeader = fc.oneof(fc.constantFrom(...HEADER_NAMES), tokenText).chain((name) =>
    headerValueFor(name, token).map(
      (value) =>
        (s: Spec): Spec => ({ ...s, headers: [...s.headers, [name, value]] }),
    ),
  );
  const dropHeader = fc.nat().map(
    (i) =>
      (s: Spec): Spec => ({ ...s, headers: s.headers.filter((_, j) => s.headers.length === 0 || j !== i % s.headers.length) }),
  );
  const authority = fc.oneof(fc.constantFrom<string | null>(...AUTHORITIES_BAD, null, "localhost:1", "[::1]:80"), headerText).map(
    (a) =>
      (s: Spec): Spec => ({ ...s, authority: a }),
  );
  const method = fc
    .oneof(fc.constantFrom("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD", "CONNECT", "TRACE", "post"), fc.stringMatching(/^[A-Z]{1,8}$/))
    .map(
      (m) =>
        (s: Spec): Spec => ({ ...s, method: m }),
    );
  const path = fc
    .oneof(
      fc.constantFrom(...RPC_PATHS, ...OTHER_PATHS),
      fc.tuple(fc.constantFrom(...RPC_PATHS, ...OTHER_PATHS), fc.stringMatching(/^[\x21-\x7e]{0,12}$/)).map(([p, tail]) => p + tail),
    )
    .map(
      (p) =>
        (s: Spec): Spec => ({ ...s, path: p }),
    );
  const transport = fc.constant((s: Spec): Spec => ({ ...s, h2: !s.h2 }));
  const bodyBytes = fc.oneof(
    fc.record({ at: fc.nat(), len: fc.nat({ max: 8 }) }).map(({ at, len }) => (b: Uint8Array) => {
      const cut = b.length === 0 ? 0 : at % b.length;
      return b.subarray(0, Math.max(0, cut - len));
    }),
    fc.record({ at: fc.nat(), bits: fc.integer({ min: 1, max: 255 }) }).map(({ at, bits }) => (b: Uint8Array) => {
      if (b.length === 0) return Uint8Array.of(bits);
      const out = Uint8Array.from(b);
      out[at % out.length] ^= bits;
      return out;
    }),
    fc.record({ at: fc.nat(), bytes: fc.uint8Array({ minLength: 1, maxLength: 16 }) }).map(({ at, bytes }) => (b: Uint8Array) => {
      const i = b.length === 0 ? 0 : at % (b.length + 1);
      return Uint8Array.from([...b.subarray(0, i), ...bytes, ...b.subarray(i)]);
    }),
    fc.constant((b: Uint8Array) => envelope(Buffer.from(b))),
    fc.constant((b: Uint8Array) => new Uint8Array(gzipSync(b))),
    fc.constant((b: Uint8Array) => {
      // An envelope flagged compressed, holding gzip of the original payload.
      const z = gzipSync(b.length > 5 ? b.subarray(5) : b);
      const out = envelope(z);
      out[0] = 1;
      return out;
    }),
    // An envelope announcing far more than it holds, or than the limit.
    fc.constantFrom(0x7fffffff, 1 << 20, 1 << 21).map((n) => (b: Uint8Array) => {
      const out = Buffer.from(b.length >= 5 ? b : envelope(Buffer.from(b)));
      out.writeUInt32BE(n, 1);
      return out;
    }),
    fc.jsonValue({ maxDepth: 3 }).map((v) => () => new TextEncoder().encode(JSON.stringify(v))),
    fc.uint8Array({ maxLength: 64 }).map((r) => () => r),
  );
  const body = bodyBytes.map(
    (f) =>
      (s: Spec): Spec => ({ ...s, body: f(s.body) }),
  );
  return fc.oneof(
    { arbitrary: setHeader, weight: 4 },
    { arbitrary: addHeader, weight: 2 },
    { arbitrary: dropHeader, weight: 1 },
    { arbitrary: authority, weight: 2 },
    { arbitrary: method, weight: 1 },
    { arbitrary: path, weight: 1 },
    { arbitrary: transport, weight: 1 },
    { arbitrary: body, weight: 4 },
  );
}

function requests(org: string, token: string) {
  const mutated = fc.tuple(validRequests(org, token), fc.array(mutation(token), { maxLength: 4 })).map(([base, ms]) => ms.reduce((s, m) => m(s), base));
  // Entirely random: every field drawn at once.
  const random = fc
    .record({
      h2: fc.boolean(),
      base: validRequests(org, token),
      ms: fc.array(mutation(token), { minLength: 4, maxLength: 10 }),
    })
    .map(({ h2, base, ms }) => ms.reduce((s, m) => m(s), { ...base, h2 }));
  return fc.oneof({ arbitrary: mutated, weight: 3 }, { arbitrary: random, weight: 1 });
}

/** Sends one spec; h2 requests share the batch's session. */
async function send(t: TestApp, spec: Spec, session: http2.ClientHttp2Session): Promise<RawResponse> {
  if (spec.h2) {
    const headers: http2.OutgoingHttpHeaders = { ":method": spec.method, ":path": spec.path };
    if (spec.authority !== null) headers[":authority"] = spec.authority;
    for (const [name, value] of spec.headers) {
      const prev = headers[name];
      headers[name] = prev === undefined ? value : [...(Array.isArray(prev) ? prev : [String(prev)]), value];
    }
    return rawHttp2(t.url, headers, Buffer.from(spec.body), session, ANSWER_TIMEOUT_MS);
  }
  const lines = [`${spec.method} ${spec.path} HTTP/1.${spec.authority === null ? 0 : 1}`];
  if (spec.authority !== null) lines.push(`host: ${spec.authority}`);
  for (const [name, value] of spec.headers) lines.push(`${name}: ${value}`);
  lines.push(`content-length: ${spec.body.length}`);
  return rawHttp1(t.url, lines.join("\r\n"), Buffer.from(spec.body), ANSWER_TIMEOUT_MS, spec.method === "HEAD");
}

interface Verdict {
  /** The server accepted the call (a write may have happened). */
  readonly accepted: boolean;
  /** What is wrong with the answer; empty when nothing is. */
  readonly problems: string[];
  readonly summary: string;
}

/** The gRPC status in headers, trailers or a gRPC-web trailer frame, if any. */
function grpcStatusOf(res: RawResponse): { code: number; detailsBin: string | undefined } | undefined {
  if (res.headers["grpc-status"] !== undefined) return { code: Number(res.headers["grpc-status"]), detailsBin: res.headers["grpc-status-details-bin"] };
  const ct = res.headers["content-type"] ?? "";
  if (!ct.startsWith("application/grpc-web")) return undefined;
  let body = res.body;
  if (ct.startsWith("application/grpc-web-text")) body = Buffer.from(body.toString("latin1"), "base64");
  for (let at = 0; at + 5 <= body.length; ) {
    const len = body.readUInt32BE(at + 1);
    if (body[at] & 0x80) {
      const fields: Record<string, string> = {};
      for (const line of body
        .subarray(at + 5, at + 5 + len)
        .toString("latin1")
        .split("\r\n")) {
        const i = line.indexOf(":");
        if (i > 0) fields[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
      }
      if (fields["grpc-status"] === undefined) return undefined;
      return { code: Number(fields["grpc-status"]), detailsBin: fields["grpc-status-details-bin"] };
    }
    at += 5 + len;
  }
  return undefined;
}

function judge(spec: Spec, res: RawResponse): Verdict {
  const problems: string[] = [];
  const summary = `HTTP ${res.status} ${res.headers["content-type"] ?? ""} grpc-status ${res.headers["grpc-status"] ?? "-"} ${res.body.subarray(0, 300).toString("latin1")}`;
  if (res.status === 0) return { accepted: false, problems, summary: "no answer (closed or reset)" };
  // The 5xx statuses that are protocol answers, not server faults: connect-node's 505 over
  // HTTP/1.1 to a call that needs HTTP/2 (gRPC, the bidirectional reflection stream), HTTP's
  // own status for refusing the request's protocol version; and 501, which is how Connect and
  // REST write UNIMPLEMENTED (an encoding the server does not support: the code the Connect
  // and gRPC compression specs require, so that clients fall back), checked below to be that
  // code with ErrorInfo.
  const mayBe501 = res.status === 501;
  if (res.status >= 500 && !(res.status === 505 && !spec.h2) && !mayBe501) problems.push(`HTTP ${res.status}`);
  const grpc = grpcStatusOf(res);
  if (grpc) {
    if (grpc.code === GrpcCode.Internal || grpc.code === GrpcCode.Unknown) problems.push(`gRPC status ${grpc.code}`);
    if (grpc.code !== 0) {
      const info = grpc.detailsBin === undefined ? undefined : fromBinary(StatusSchema, Buffer.from(grpc.detailsBin, "base64")).details[0];
      if (info?.typeUrl !== `type.googleapis.com/${ErrorInfoSchema.typeName}`) problems.push("gRPC error without ErrorInfo first");
    }
    return { accepted: res.status === 200 && grpc.code === 0, problems, summary };
  }
  // A HEAD answer has no body to check.
  if (spec.method !== "HEAD" && res.status >= 400 && (res.headers["content-type"] ?? "").startsWith("application/json")) {
    let body: { code?: unknown; details?: { type?: string; value?: string; "@type"?: string; reason?: string }[] } | undefined;
    try {
      body = JSON.parse(res.body.toString("utf8"));
    } catch {
      problems.push("an error body that is not JSON");
    }
    if (body && body.code !== undefined) {
      const code = typeof body.code === "number" ? body.code : connectCode(body.code);
      if (mayBe501 && code !== GrpcCode.Unimplemented) problems.push(`HTTP 501 with code ${String(body.code)}`);
      if (code === GrpcCode.Internal || code === GrpcCode.Unknown) problems.push(`error code ${String(body.code)}`);
      const first = body.details?.[0];
      const type = first?.type ?? first?.["@type"]?.replace("type.googleapis.com/", "");
      if (type !== ErrorInfoSchema.typeName) problems.push("error body without ErrorInfo first");
      // REST writes ErrorInfo as JSON, Connect as base64 protobuf.
      const reason = first?.reason ?? (first?.value === undefined ? undefined : fromBinary(ErrorInfoSchema, Buffer.from(first.value, "base64")).reason);
      if (res.status !== httpStatusOf(code, reason)) problems.push(`HTTP ${res.status} with code ${String(body.code)}`);
    }
  } else if (mayBe501 && spec.method !== "HEAD") {
    problems.push("HTTP 501 without an UNIMPLEMENTED error body");
  }
  return { accepted: res.status >= 200 && res.status < 300, problems, summary };
}

function describeSpec(spec: Spec): string {
  return JSON.stringify({
    ...spec,
    headers: spec.headers.map(([n, v]) => (n === "authorization" ? [n, `${v.slice(0, 12)}…`] : [n, v])),
    body: Buffer.from(spec.body).toString("base64"),
  });
}

for (const fastUnary of [true, false]) {
  const mode = fastUnary ? "fast path on" : "fast path off";

  describe(`fuzzing every door (${mode})`, () => {
    let t: TestApp;
    let org: string;
    beforeAll(async () => {
      t = await startTestApp({ corsOrigins: [ORIGIN] }, {}, { fastUnary });
      org = (await rest(t.url, "POST", "/iam/v2beta1/groups", { name: "fuzz doors" })).body.uid;
      // A child keeps the organization from being deleted by a mutated request, so the
      // after-batch GetGroup has something to find.
      expect((await rest(t.url, "POST", `/iam/v2beta1/groups/${org}`, { name: "keeper" })).status).toBe(200);
    });
    afterAll(async () => t.close());

    /** Health over Connect and GetGroup over REST: the server is up and reading its database. */
    async function expectAnswering(): Promise<void> {
      const health = await rawHttp1(
        t.url,
        "POST /grpc.health.v1.Health/Check HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: 2",
        "{}",
        ANSWER_TIMEOUT_MS,
      );
      expect(health.status, "health check after the batch").toBe(200);
      const got = await rest(t.url, "GET", `/iam/v2beta1/groups/${org}`);
      expect(got.status, "GetGroup after the batch").toBe(200);
    }

    it(`random and mutated requests on every door, HTTP/1.1 and HTTP/2: no server error, ErrorInfo on every error, refusals write nothing, and the server keeps answering (${mode})`, {
      timeout: 60_000,
    }, async () => {
      try {
        await fuzz();
      } catch (err) {
        // fast-check's message names the seed and the failing path; this says how to rerun it.
        (err as Error).message = `reproduce: TRELLIS_FUZZ_SEED=${SEED} npx vitest run test/server/fuzz-doors.test.ts -t "${mode}"\n${(err as Error).message}`;
        throw err;
      }
    });

    function fuzz(): Promise<void> {
      return fc.assert(
        fc.asyncProperty(fc.array(requests(org, t.token), { minLength: 1, maxLength: 8 }), async (batch) => {
          // One HTTP/2 session per batch, replaced if a request made the server end it.
          const sessions = [http2.connect(t.url).on("error", () => {})];
          const live = () => {
            const last = sessions[sessions.length - 1] as http2.ClientHttp2Session;
            if (!last.closed && !last.destroyed) return last;
            sessions.push(http2.connect(t.url).on("error", () => {}));
            return sessions[sessions.length - 1] as http2.ClientHttp2Session;
          };
          try {
            for (const spec of batch) {
              const before = await snapshotDb(t);
              const res = await send(t, spec, live());
              const verdict = judge(spec, res);
              const where = `${describeSpec(spec)}\n→ ${verdict.summary}`;
              expect(verdict.problems, where).toEqual([]);
              if (!verdict.accepted) expect((await snapshotDb(t)) === before, `a refused request changed the database\n${where}`).toBe(true);
            }
          } finally {
            for (const s of sessions) s.destroy();
          }
          await expectAnswering();
        }),
        { seed: SEED, numRuns: BATCHES, interruptAfterTimeLimit: TIME_LIMIT_MS, markInterruptAsFailure: false },
      );
    }
  });
}
