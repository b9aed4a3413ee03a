/**
 * OpenTelemetry traces through the real server and a real OTLP/HTTP receiver: with
 * OTEL_EXPORTER_OTLP_ENDPOINT set, every call on every door (fast path on and off) is a
 * server span that continues the caller's `traceparent`, with children for authentication,
 * authorization and each repository call; errors are recorded; the last spans are exported on
 * graceful shutdown. (tracing-off.test.ts proves the other half: without the variable nothing
 * is sent and the SDK is never loaded; it runs in its own file so this file's loading of the
 * SDK cannot hide a load there.)
 */
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { createClient } from "@connectrpc/connect";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { GroupsService } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { tracingSdkLoaded, tracingSettings } from "../../src/observe/tracing.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { createUserIdentity, identityToken } from "../support/auth.js";
import { TEST_ENGINE } from "../support/postgres.js";
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from "../support/otlp-receiver.js";
import { rest } from "../support/rest.js";
import { closeGrpcClients, rpcTransports } from "../support/transports.js";

const GET_GROUP = "chainguard.platform.iam.v2beta1.GroupsService/GetGroup";
const NOT_FOUND = 5;

let receiver: OtlpReceiver;
beforeAll(async () => {
  receiver = await startOtlpReceiver();
});
afterAll(async () => {
  closeGrpcClients();
  await receiver.close();
});
afterEach(() => {
  vi.unstubAllEnvs();
});

function traceOn(extra: Record<string, string> = {}): void {
  vi.stubEnv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url);
  vi.stubEnv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json");
  vi.stubEnv("OTEL_BSP_SCHEDULE_DELAY", "20");
  vi.stubEnv("OTEL_SERVICE_NAME", "trellis-under-test");
  for (const [k, v] of Object.entries(extra)) vi.stubEnv(k, v);
}

/** A fresh W3C traceparent per call, so each call's spans can be told apart. */
let seq = 0;
function newTraceparent(): { header: string; traceId: string; parentId: string } {
  seq++;
  const traceId = `4bf92f3577b34da6a3ce929d${seq.toString(16).padStart(8, "0")}`;
  const parentId = `00f067aa${seq.toString(16).padStart(8, "0")}`;
  return { header: `00-${traceId}-${parentId}-01`, traceId, parentId };
}

function subjectOf(token: string): string {
  return JSON.parse(Buffer.from(token.split(".")[1] as string, "base64url").toString()).sub;
}

async function createGroup(t: TestApp, name: string): Promise<string> {
  const res = await rest(t.url, "POST", "/iam/v2beta1/groups", { name });
  expect(res.status).toBe(200);
  return res.body.uid;
}

type Door = readonly [name: string, protocol: string, call: (uid: string, traceparent: string) => Promise<unknown>];

function doors(t: TestApp): Door[] {
  const protocolOf = (name: string) => (name.startsWith("grpc-web") ? "grpc-web" : name.startsWith("grpc") ? "grpc" : "connect");
  return [
    ...rpcTransports.map(
      (tr): Door => [
        tr.name,
        protocolOf(tr.name),
        (uid, traceparent) =>
          createClient(GroupsService, tr.create(t.url))
            .getGroup({ uid }, { headers: { traceparent } })
            .catch((e: unknown) => e),
      ],
    ),
    ["rest", "rest", (uid, traceparent) => rest(t.url, "GET", `/iam/v2beta1/groups/${uid}`, undefined, { traceparent })],
  ];
}

/** The spans of one trace once its server span and `children` (by name) have arrived. */
async function traceOf(traceId: string, children: string[]): Promise<ReceivedSpan[]> {
  const of = (spans: ReceivedSpan[]) => spans.filter((s) => s.traceId === traceId);
  const spans = await receiver.waitFor((all) => {
    const mine = of(all);
    return mine.some((s) => s.name === GET_GROUP) && children.every((c) => mine.some((s) => s.name === c));
  });
  return of(spans);
}

describe.each([
  { fastUnary: true, label: "lean doors" },
  { fastUnary: false, label: "connect-node doors" },
])("spans on every door ($label)", ({ fastUnary }) => {
  it("the call is a server span under the caller's traceparent, with authenticate, authorize and store children", async () => {
    traceOn();
    const t = await startTestApp({}, {}, { fastUnary });
    try {
      const uid = await createGroup(t, "traced");
      for (const [name, protocol, call] of doors(t)) {
        const tp = newTraceparent();
        await call(uid, tp.header);
        const spans = await traceOf(tp.traceId, ["authenticate", "authorize", "store groups.get"]);
        const server = spans.find((s) => s.name === GET_GROUP) as ReceivedSpan;
        expect(server.parentSpanId, name).toBe(tp.parentId);
        expect(server.kind, name).toBe(2);
        expect(server.attributes, name).toMatchObject({
          "rpc.system": protocol === "connect" ? "connect_rpc" : protocol === "rest" ? "http" : "grpc",
          "rpc.service": "chainguard.platform.iam.v2beta1.GroupsService",
          "rpc.method": "GetGroup",
          "trellis.protocol": protocol,
          "rpc.grpc.status_code": 0,
          "rpc.response.status_code": "OK",
          "enduser.id": subjectOf(t.token),
        });
        expect(server.status.code ?? 0, name).toBe(0);
        expect(server.resource["service.name"], name).toBe("trellis-under-test");
        for (const child of ["authenticate", "authorize", "store groups.get"]) {
          const span = spans.find((s) => s.name === child) as ReceivedSpan;
          expect([span.parentSpanId, span.kind], `${name} ${child}`).toEqual([server.spanId, 1]);
        }
        // Nothing of the token reaches the collector.
        expect(JSON.stringify(spans), name).not.toContain(t.token.split(".")[2]);
      }
    } finally {
      await t.close();
    }
  });

  it("an error is an exception event with its code on the server span; a client's error leaves the status unset", async () => {
    traceOn();
    const t = await startTestApp({}, {}, { fastUnary });
    try {
      const missing = `${await createGroup(t, "parent")}/0123456789abcdef`;
      for (const [name, , call] of doors(t)) {
        const tp = newTraceparent();
        await call(missing, tp.header);
        const spans = await traceOf(tp.traceId, ["authorize"]);
        const server = spans.find((s) => s.name === GET_GROUP) as ReceivedSpan;
        expect(server.parentSpanId, name).toBe(tp.parentId);
        expect([server.attributes["rpc.grpc.status_code"], server.attributes["rpc.response.status_code"]], name).toEqual([NOT_FOUND, "NOT_FOUND"]);
        expect(server.events.find((e) => e.name === "exception")?.attributes["exception.type"], name).toBe("NOT_FOUND");
        expect(server.status.code ?? 0, name).toBe(0);
      }
    } finally {
      await t.close();
    }
  });
});

describe("tracing set-up", () => {
  it("without a traceparent the call starts its own trace; a refused token is recorded on authenticate with status ERROR", async () => {
    traceOn();
    const t = await startTestApp();
    try {
      const res = await rest(t.url, "GET", "/iam/v2beta1/groups/0123456789abcdef0123456789abcdef01234567", undefined, {
        authorization: "Bearer not-a-token",
      });
      expect(res.status).toBe(401);
      const spans = await receiver.waitFor((all) => all.some((s) => s.name === "authenticate" && s.status.code === 2));
      const auth = spans.find((s) => s.name === "authenticate" && s.status.code === 2) as ReceivedSpan;
      const server = spans.find((s) => s.spanId === auth.parentSpanId) as ReceivedSpan;
      expect(server.name).toBe(GET_GROUP);
      expect(server.parentSpanId).toBe("");
      expect(server.attributes["rpc.response.status_code"]).toBe("UNAUTHENTICATED");
      expect(server.attributes["enduser.id"]).toBeUndefined();
      expect(auth.events[0]?.attributes["exception.type"]).toBe("UNAUTHENTICATED");
      expect(JSON.stringify(spans)).not.toContain("not-a-token");
    } finally {
      await t.close();
    }
  });

  it("authorization's grant lookup is a store span under authorize; a denial is recorded there, the server span's status stays unset", async () => {
    traceOn();
    const t = await startTestApp();
    try {
      const uid = await createGroup(t, "not-theirs");
      const user = await createUserIdentity(t.dataDir, "someone");
      const token = await identityToken(t.app, user);
      const tp = newTraceparent();
      const res = await rest(t.url, "GET", `/iam/v2beta1/groups/${uid}`, undefined, { traceparent: tp.header, authorization: `Bearer ${token}` });
      expect(res.status).toBe(403);
      const spans = await traceOf(tp.traceId, ["authorize", "store roleBindings.grantsOf"]);
      const server = spans.find((s) => s.name === GET_GROUP) as ReceivedSpan;
      const authorize = spans.find((s) => s.name === "authorize") as ReceivedSpan;
      const grants = spans.find((s) => s.name === "store roleBindings.grantsOf") as ReceivedSpan;
      expect([authorize.parentSpanId, grants.parentSpanId]).toEqual([server.spanId, authorize.spanId]);
      expect(grants.attributes).toMatchObject({
        "db.system.name": TEST_ENGINE === "postgres" ? "postgresql" : "sqlite",
        "db.operation.name": "roleBindings.grantsOf",
      });
      expect(authorize.status.code).toBe(2);
      expect(authorize.events[0]?.attributes["exception.type"]).toBe("PERMISSION_DENIED");
      expect(server.attributes).toMatchObject({ "rpc.response.status_code": "PERMISSION_DENIED", "enduser.id": user });
      expect(server.status.code ?? 0).toBe(0);
      expect(JSON.stringify(spans)).not.toContain(token.split(".")[2]);
    } finally {
      await t.close();
    }
  });

  it("the spans still buffered are exported by a graceful shutdown", async () => {
    traceOn({ OTEL_BSP_SCHEDULE_DELAY: "600000" });
    const t = await startTestApp();
    const uid = await createGroup(t, "flushed");
    const tp = newTraceparent();
    await rest(t.url, "GET", `/iam/v2beta1/groups/${uid}`, undefined, { traceparent: tp.header });
    expect(receiver.spans.some((s) => s.traceId === tp.traceId)).toBe(false);
    await t.close();
    expect(receiver.spans.filter((s) => s.traceId === tp.traceId).map((s) => s.name)).toContain(GET_GROUP);
  });

  it("the default protocol is http/protobuf to <endpoint>/v1/traces; the SDK is loaded only now", async () => {
    vi.stubEnv("OTEL_EXPORTER_OTLP_ENDPOINT", `${receiver.url}/`);
    vi.stubEnv("OTEL_BSP_SCHEDULE_DELAY", "20");
    const before = receiver.requests.length;
    const t = await startTestApp();
    try {
      expect(tracingSdkLoaded()).toBe(true);
      // The same check tracing-off.test.ts makes, seen to find the SDK once it is loaded.
      expect(Object.keys(createRequire(import.meta.url).cache).some((k) => k.includes(`${path.sep}@opentelemetry${path.sep}sdk-trace${path.sep}`))).toBe(true);
      await createGroup(t, "protobuf");
      await receiver.waitFor(() => receiver.requests.length > before);
      const sent = receiver.requests.slice(before);
      expect(sent.every((r) => r.path === "/v1/traces" && r.contentType === "application/x-protobuf")).toBe(true);
    } finally {
      await t.close();
    }
  });

  it("settings the server cannot honour refuse to start, naming the variable", async () => {
    const base = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" };
    expect(tracingSettings({})).toBeUndefined();
    expect(tracingSettings({ ...base, OTEL_SDK_DISABLED: "true" })).toBeUndefined();
    expect(tracingSettings({ ...base, OTEL_TRACES_EXPORTER: "none" })).toBeUndefined();
    expect(tracingSettings(base)).toMatchObject({ protocol: "http/protobuf", url: "http://collector:4318/v1/traces" });
    expect(tracingSettings({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://c:4318/custom" })?.url).toBe("http://c:4318/custom");
    expect(() => tracingSettings({ ...base, OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" })).toThrow(/OTEL_EXPORTER_OTLP_PROTOCOL=grpc/);
    expect(() => tracingSettings({ ...base, OTEL_TRACES_EXPORTER: "zipkin" })).toThrow(/OTEL_TRACES_EXPORTER=zipkin/);
    expect(() => tracingSettings({ ...base, OTEL_BSP_SCHEDULE_DELAY: "soon" })).toThrow(/OTEL_BSP_SCHEDULE_DELAY/);
    vi.stubEnv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url);
    vi.stubEnv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc");
    await expect(startTestApp()).rejects.toThrow(/OTEL_EXPORTER_OTLP_PROTOCOL=grpc/);
    vi.stubEnv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json");
    vi.stubEnv("OTEL_TRACES_SAMPLER", "sometimes");
    await expect(startTestApp()).rejects.toThrow(/OTEL_TRACES_SAMPLER=sometimes/);
  });
});

describe("the SDK stays behind one file", () => {
  it("no source file but src/observe/tracing-sdk.ts imports an @opentelemetry package", () => {
    const importers: string[] = [];
    const walk = (dir: string) => {
      for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
        const file = path.join(dir, entry.name);
        if (entry.isDirectory()) walk(file);
        else if (file.endsWith(".ts") && /from\s+["']@opentelemetry\//.test(fs.readFileSync(file, "utf8"))) importers.push(file);
      }
    };
    walk("src");
    expect(importers).toEqual([path.join("src", "observe", "tracing-sdk.ts")]);
  });
});
