/**
 * Tracing off, the default: with no OTLP endpoint in the environment, calls on every door
 * (with a caller's traceparent) send nothing anywhere and the OpenTelemetry SDK is never
 * loaded into the process (the API facade aside, which prom-client loads). Its own file, so no other test's server has loaded the SDK in this
 * process (each test file runs in a fresh worker); tracing.test.ts shows the same module check
 * finding the SDK once tracing is on.
 */
import { createRequire } from "node:module";
import path from "node:path";
import { createClient } from "@connectrpc/connect";
import { afterAll, afterEach, describe, expect, it, vi } from "vitest";
import { GroupsService } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { tracingSdkLoaded } from "../../src/observe/tracing.js";
import { startTestApp } from "../support/app.js";
import { startOtlpReceiver } from "../support/otlp-receiver.js";
import { rest } from "../support/rest.js";
import { closeGrpcClients, rpcTransports } from "../support/transports.js";

afterAll(() => closeGrpcClients());
afterEach(() => {
  vi.unstubAllEnvs();
});

const TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/**
 * The OpenTelemetry SDK modules in the process. The API package (`@opentelemetry/api`, a
 * no-op facade until an SDK registers) is left out: prom-client loads it for exemplars
 * whether or not tracing is on.
 */
function openTelemetrySdkModulesLoaded(): string[] {
  const marker = `${path.sep}@opentelemetry${path.sep}`;
  return Object.keys(createRequire(import.meta.url).cache).filter((k) => k.includes(marker) && !k.includes(`${marker}api${path.sep}`));
}

describe("tracing off", () => {
  it.each([true, false])("no endpoint: nothing is sent and no SDK module is loaded (fast path %s)", async (fastUnary) => {
    const receiver = await startOtlpReceiver();
    // Everything but the endpoint: the endpoint alone is what turns tracing on.
    vi.stubEnv("OTEL_EXPORTER_OTLP_ENDPOINT", "");
    vi.stubEnv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "");
    vi.stubEnv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json");
    vi.stubEnv("OTEL_SERVICE_NAME", "should-not-matter");
    const t = await startTestApp({}, {}, { fastUnary });
    try {
      const created = await rest(t.url, "POST", "/iam/v2beta1/groups", { name: "untraced" }, { traceparent: TRACEPARENT });
      expect(created.status).toBe(200);
      const uid = created.body.uid as string;
      for (const tr of rpcTransports) {
        const group = await createClient(GroupsService, tr.create(t.url)).getGroup({ uid }, { headers: { traceparent: TRACEPARENT } });
        expect(group.uid, tr.name).toBe(uid);
      }
      expect((await rest(t.url, "GET", `/iam/v2beta1/groups/${uid}`, undefined, { traceparent: TRACEPARENT })).status).toBe(200);
    } finally {
      await t.close();
    }
    expect(receiver.requests).toEqual([]);
    await receiver.close();
    expect(tracingSdkLoaded()).toBe(false);
    expect(openTelemetrySdkModulesLoaded()).toEqual([]);
  });
});
