/**
 * What an operator sees, through the real server: the probes (/healthz, /readyz) follow the
 * database and the drain; every answer on every door carries a request id; the per-call log
 * line names the caller, the peer, the request id and the W3C trace id (never the token);
 * start-up and shutdown each write one line; /metrics counts calls by service, method,
 * protocol and code, on the API port or on its own listener, and the storage's own figures
 * (write transactions, their time, the database's size) on either engine: the on-postgres
 * project runs this file again on PostgreSQL (vitest.config.ts).
 */
import { Writable } from "node:stream";
import { createClient } from "@connectrpc/connect";
import pino from "pino";
import { afterAll, describe, expect, it } from "vitest";
import { GroupsService } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { Health, HealthCheckResponse_ServingStatus as ServingStatus } from "../../gen/grpc/health/v1/health_pb.js";
import { sqliteConnectionOf } from "../../src/store/sqlite/engine.js";
import { redactDatabaseUrl } from "../../src/store/target.js";
import { trellisVersion } from "../../src/version.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { rawRequest } from "../support/doors.js";
import { TEST_ENGINE } from "../support/postgres.js";
import { storeOfTestApp } from "../support/store-target.js";
import { rest } from "../support/rest.js";
import { closeGrpcClients, createGrpcJsTransport, rpcTransports } from "../support/transports.js";

afterAll(() => closeGrpcClients());

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const TRACEPARENT = `00-${TRACE_ID}-00f067aa0ba902b7-01`;

/** A logger at info that keeps every line, parsed. */
function capturingLog() {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split("\n")) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  return { log: pino({ level: "info" }, sink), lines, text: () => lines.map((l) => JSON.stringify(l)).join("\n") };
}

function subjectOf(token: string): string {
  return JSON.parse(Buffer.from(token.split(".")[1] as string, "base64url").toString()).sub;
}

async function get(url: string, path: string, h2 = false, headers: [string, string][] = []) {
  const res = await rawRequest(url, { h2, method: "GET", path, headers });
  return { status: res.status, headers: res.headers, body: res.body.toString() };
}

async function createGroup(t: TestApp, name: string): Promise<string> {
  const res = await rest(t.url, "POST", "/iam/v2beta1/groups", { name });
  expect(res.status).toBe(200);
  return res.body.uid;
}

describe("probes", () => {
  it.each([false, true])("/healthz and /readyz answer without a token, tiny JSON, over HTTP/%s", async (h2) => {
    const t = await startTestApp();
    try {
      for (const auth of [[], [["authorization", "Bearer not-a-token"]]] as [string, string][][]) {
        const live = await get(t.url, "/healthz", h2, auth);
        expect([live.status, live.body, live.headers["content-type"], live.headers["cache-control"]]).toEqual([
          200,
          '{"status":"ok"}',
          "application/json",
          "no-store",
        ]);
        const ready = await get(t.url, "/readyz", h2, auth);
        expect([ready.status, ready.body]).toEqual([200, '{"status":"ready"}']);
      }
      // Only GET and HEAD: a POST goes on to the doors like any other path.
      expect((await rawRequest(t.url, { h2, method: "POST", path: "/healthz", headers: [] })).status).toBe(404);
    } finally {
      await t.close();
    }
  });

  // PostgreSQL's unwritable database (a restart) is test/postgres/faults.test.ts.
  it.skipIf(TEST_ENGINE === "postgres")(
    "/readyz fails while the database cannot be written (a full disk; SQLite only: fills the SQLite file) and recovers; /healthz stays live",
    async () => {
      const t = await startTestApp({}, { storageProbeMs: 3_600_000 });
      const db = sqliteConnectionOf(t.app.store);
      try {
        const sqlite = db.$client;
        const room = sqlite.pragma("max_page_count", { simple: true }) as number;
        sqlite.pragma(`max_page_count = ${sqlite.pragma("page_count", { simple: true })}`);
        let refused = false;
        for (let i = 0; i < 500 && !refused; i++) {
          refused = (await rest(t.url, "POST", "/iam/v2beta1/groups", { name: `g ${i}`, description: "y".repeat(400) })).status !== 200;
        }
        expect(refused).toBe(true);
        const ready = await get(t.url, "/readyz");
        // The reason, and nothing of the error behind it.
        expect([ready.status, ready.body]).toEqual([503, '{"status":"not ready","reason":"database not writable"}']);
        expect((await get(t.url, "/healthz")).status).toBe(200);
        sqlite.pragma(`max_page_count = ${room}`);
        await createGroup(t, "room again");
        expect((await get(t.url, "/readyz")).status).toBe(200);
      } finally {
        await t.close();
      }
    },
  );

  it("on close, readiness and gRPC health fail first while calls are still answered; then the listener stops", async () => {
    const t = await startTestApp({ drainMs: 500 });
    const uid = await createGroup(t, "drained");
    const closing = t.app.close();
    try {
      const ready = await get(t.url, "/readyz");
      expect([ready.status, ready.body]).toEqual([503, '{"status":"not ready","reason":"draining"}']);
      expect((await get(t.url, "/healthz")).status).toBe(200);
      const health = createClient(Health, createGrpcJsTransport(t.url));
      expect((await health.check({ service: "" })).status).toBe(ServingStatus.NOT_SERVING);
      // Still serving the API during the drain.
      expect((await rest(t.url, "GET", `/iam/v2beta1/groups/${uid}`)).status).toBe(200);
    } finally {
      closeGrpcClients();
      await closing;
      await t.close();
    }
    await expect(fetch(`${t.url}/healthz`)).rejects.toThrow();
  });
});

describe.each([
  { fastUnary: true, label: "lean doors" },
  { fastUnary: false, label: "connect-node doors" },
])("request id, caller, peer and trace id on every door ($label)", ({ fastUnary }) => {
  it("a sane x-request-id is echoed and logged with caller, peer and trace id; the token never is", async () => {
    const captured = capturingLog();
    const t = await startTestApp({}, {}, { log: captured.log, fastUnary });
    try {
      const uid = await createGroup(t, "seen");
      const doors: [string, (id: string) => Promise<string | null>][] = rpcTransports.map((tr) => [
        tr.name,
        async (id) => {
          let got: string | null = null;
          await createClient(GroupsService, tr.create(t.url)).getGroup(
            { uid },
            {
              headers: { "x-request-id": id, traceparent: TRACEPARENT },
              onHeader: (h) => {
                got = h.get("x-request-id");
              },
            },
          );
          return got;
        },
      ]);
      doors.push([
        "rest",
        async (id) =>
          (await rest(t.url, "GET", `/iam/v2beta1/groups/${uid}`, undefined, { "x-request-id": id, traceparent: TRACEPARENT })).headers.get("x-request-id"),
      ]);
      for (const [name, call] of doors) {
        const id = `req-${name.replace(/[^a-z0-9]/gi, "")}.1:a/b=`;
        expect(await call(id), name).toBe(id);
        const line = captured.lines.find((l) => l.msg === "call" && l.requestId === id);
        expect(line, name).toMatchObject({
          method: "chainguard.platform.iam.v2beta1.GroupsService/GetGroup",
          code: "OK",
          caller: subjectOf(t.token),
          traceId: TRACE_ID,
        });
        expect(String(line?.peer), name).toMatch(/^(::ffff:)?127\.0\.0\.1$/);
      }
      expect(captured.text()).not.toContain(t.token.split(".")[2]);
    } finally {
      await t.close();
    }
  });

  it("an absent or unsafe x-request-id is replaced by a generated one, returned and logged; a bad traceparent is ignored", async () => {
    const captured = capturingLog();
    const t = await startTestApp({}, {}, { log: captured.log, fastUnary });
    try {
      const uid = await createGroup(t, "ids");
      const unsafe = ["", "has space", 'quo"te', "x".repeat(129), "semi;colon", "<script>"];
      for (const sent of [undefined, ...unsafe]) {
        for (const tr of rpcTransports) {
          let got: string | null = null;
          const headers: Record<string, string> = { traceparent: "00-00000000000000000000000000000000-00f067aa0ba902b7-01" };
          if (sent !== undefined) headers["x-request-id"] = sent;
          await createClient(GroupsService, tr.create(t.url)).getGroup(
            { uid },
            {
              headers,
              onHeader: (h) => {
                got = h.get("x-request-id");
              },
            },
          );
          expect(got, `${tr.name} ${sent}`).toMatch(UUID);
          const line = captured.lines.find((l) => l.msg === "call" && l.requestId === got);
          expect(line, `${tr.name} ${sent}`).toBeDefined();
          expect(line?.traceId).toBeUndefined();
        }
      }
      expect(captured.text()).not.toContain("has space");
      expect(captured.text()).not.toContain("x".repeat(129));
    } finally {
      await t.close();
    }
  });
});

describe("every answer carries a request id", () => {
  it("errors, unknown paths, probes and a refused authority too, on HTTP/1.1 and HTTP/2", async () => {
    const t = await startTestApp();
    try {
      for (const h2 of [false, true]) {
        const answers = [
          await get(t.url, "/iam/v2beta1/groups", h2), // no token: 401
          await get(t.url, "/no/such/path", h2),
          await get(t.url, "/healthz", h2),
          await get(t.url, "/readyz", h2, [["x-request-id", "mine-1"]]),
        ];
        expect(answers.map((a) => a.status)).toEqual([401, 404, 200, 200]);
        for (const a of answers.slice(0, 3)) expect(String(a.headers["x-request-id"]), `${h2} ${a.status} ${JSON.stringify(a.headers)}`).toMatch(UUID);
        expect(answers[3]?.headers["x-request-id"]).toBe("mine-1");
      }
      const refused = await get(t.url, "/iam/v2beta1/groups", false, [["host", "%zz"]]);
      expect(refused.status).toBe(400);
      expect(refused.headers["x-request-id"]).toMatch(UUID);
    } finally {
      await t.close();
    }
  });
});

describe("start-up and shutdown lines", () => {
  it("one line each: version, listen address, data location, issuer, trusted IdPs, TLS", async () => {
    const captured = capturingLog();
    const t = await startTestApp({}, {}, { log: captured.log });
    const started = captured.lines.filter((l) => l.msg === "trellis started");
    expect(started).toHaveLength(1);
    expect(started[0]).toMatchObject({
      version: trellisVersion(),
      listen: t.url,
      data: TEST_ENGINE === "postgres" ? redactDatabaseUrl(storeOfTestApp(t.dataDir).databaseUrl as string) : t.dbFile,
      issuer: t.url,
      trustedIdps: [],
      tls: false,
      metrics: `${t.url}/metrics`,
    });
    await t.close();
    expect(captured.lines.filter((l) => l.msg === "trellis stopped")).toHaveLength(1);
  });
});

/** The value of one sample of the Prometheus text whose labels include `labels` (0 when absent). */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  for (const line of text.split("\n")) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have: Record<string, string> = {};
    for (const p of (m[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) have[p[1] as string] = p[2] as string;
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(m[3]);
  }
  return 0;
}

describe("/metrics", () => {
  const getGroup = { service: "chainguard.platform.iam.v2beta1.GroupsService", method: "GetGroup", code: "OK" };

  it("counts calls by service, method, protocol and code on two doors, exactly; no uid in any label", async () => {
    const t = await startTestApp();
    try {
      const uid = await createGroup(t, "counted");
      const scrape = async () => {
        const res = await get(t.url, "/metrics");
        expect(res.status).toBe(200);
        expect(res.headers["content-type"]).toMatch(/^text\/plain; version=0\.0\.4/);
        return res.body;
      };
      const before = await scrape();
      const connect = createClient(GroupsService, (rpcTransports[1] as (typeof rpcTransports)[number]).create(t.url));
      for (let i = 0; i < 3; i++) await connect.getGroup({ uid });
      for (let i = 0; i < 5; i++) expect((await rest(t.url, "GET", `/iam/v2beta1/groups/${uid}`)).status).toBe(200);
      await rest(t.url, "GET", `/iam/v2beta1/groups/${uid}`, undefined, { authorization: "" });
      await rest(t.url, "GET", `/iam/v2beta1/groups/${uid}`, undefined, { authorization: "Bearer nope" });
      await get(t.url, "/no/such/thing");
      const after = await scrape();
      const moved = (name: string, labels: Record<string, string>) => sample(after, name, labels) - sample(before, name, labels);
      expect(moved("trellis_calls_total", { ...getGroup, protocol: "connect" })).toBe(3);
      expect(moved("trellis_calls_total", { ...getGroup, protocol: "rest" })).toBe(5);
      expect(moved("trellis_calls_total", { ...getGroup, protocol: "rest", code: "UNAUTHENTICATED" })).toBe(2);
      expect(moved("trellis_call_duration_seconds_count", { service: getGroup.service, method: "GetGroup", protocol: "rest" })).toBe(7);
      expect(moved("trellis_calls_total", { service: "unknown", method: "unknown", protocol: "rest", code: "NOT_FOUND" })).toBe(1);
      expect(moved("trellis_token_verifications_total", { outcome: "valid" })).toBe(8);
      expect(moved("trellis_token_verifications_total", { outcome: "missing" })).toBe(1);
      expect(moved("trellis_token_verifications_total", { outcome: "rejected" })).toBe(1);
      expect(sample(after, "trellis_calls_in_flight")).toBe(0);
      expect(sample(after, "trellis_db_size_bytes")).toBeGreaterThan(0);
      expect(sample(after, "trellis_db_transactions_total")).toBeGreaterThan(0);
      expect(after).toContain("trellis_log_lines_dropped_total");
      expect(after).toContain("trellis_db_busy_retries_total");
      expect(after).toContain("process_cpu_user_seconds_total");
      expect(after).toContain("nodejs_eventloop_lag_seconds");
      // Bounded labels: neither the group's uid nor the caller's subject nor a raw path.
      expect(after).not.toContain(uid);
      expect(after).not.toContain(subjectOf(t.token));
      expect(after).not.toContain("/no/such/thing");
    } finally {
      await t.close();
    }
  });

  it(`keeps the write path's counters and the database's size (${TEST_ENGINE})`, async () => {
    const t = await startTestApp();
    try {
      const scrape = async () => (await get(t.url, "/metrics")).body;
      const before = await scrape();
      for (let i = 0; i < 3; i++) await createGroup(t, `written ${i}`);
      const after = await scrape();
      const moved = (name: string) => sample(after, name) - sample(before, name);
      // Each create is one write transaction of its own (awaited one after the other); the
      // server may write more (a caller's first call), never fewer.
      expect(moved("trellis_db_transactions_total")).toBeGreaterThanOrEqual(3);
      expect(moved("trellis_db_transaction_seconds_total")).toBeGreaterThan(0);
      // Nothing waited or started over: the counters are there, and still (SQLite's count for
      // the whole process, so by how much they moved, not their value).
      for (const name of ["trellis_db_busy_retries_total", "trellis_db_busy_timeouts_total"]) {
        expect(after).toMatch(new RegExp(`^${name} \\d+$`, "m"));
        expect(moved(name)).toBe(0);
      }
      // The database holds at least the three groups' rows (a real size, not a placeholder).
      expect(sample(after, "trellis_db_size_bytes")).toBeGreaterThan(8192);
      expect(after).toMatch(/^# HELP trellis_db_size_bytes .*PostgreSQL/m);
    } finally {
      await t.close();
    }
  });

  it("--metrics-addr serves it on its own listener; the API port then answers /metrics like any unknown path", async () => {
    const t = await startTestApp({ metricsAddr: { host: "127.0.0.1", port: 0 } });
    try {
      const url = t.app.metricsUrl as string;
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(url).not.toBe(t.url);
      const res = await get(url, "/metrics");
      expect(res.status).toBe(200);
      expect(res.body).toContain("trellis_calls_total");
      expect((await get(url, "/other")).status).toBe(404);
      expect((await get(t.url, "/metrics")).status).toBe(404);
    } finally {
      await t.close();
    }
  });
});
