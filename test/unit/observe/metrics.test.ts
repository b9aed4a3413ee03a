/**
 * The call metrics are kept in our own arrays and handed to prom-client only when scraped
 * (src/observe/metrics.ts). Their exposition must be what prom-client's own Counter and
 * Histogram print for the same calls: the same lines, values and order.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import fc from "fast-check";
import { Counter, Histogram, Registry } from "prom-client";
import { afterAll, describe, expect, it } from "vitest";
import { GroupsService } from "../../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { createMetrics } from "../../../src/observe/metrics.js";
import { openStore } from "../../../src/store/open.js";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-metrics-"));
const opened = await openStore({ dataDir: dir });
afterAll(async () => {
  await opened.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** The text block of one metric family (HELP, TYPE and its lines) in an exposition. */
function family(text: string, name: string): string {
  const blocks = text.split("\n\n").map((b) => b.trim());
  const block = blocks.find((b) => b.startsWith(`# HELP ${name} `));
  if (block === undefined) throw new Error(`no ${name} in the exposition`);
  return block;
}

type Call =
  | { method: 0 | 1; protocol: string; code: string; seconds: number }
  | { unknown: true; protocol: string; code: string }
  | { token: "valid" | "rejected" | "missing" };

const callArb: fc.Arbitrary<Call> = fc.oneof(
  fc.record({
    method: fc.constantFrom(0 as const, 1 as const),
    protocol: fc.constantFrom("grpc", "grpc-web", "connect", "rest"),
    code: fc.constantFrom("OK", "NOT_FOUND", "UNAUTHENTICATED"),
    // Bounds themselves, values between them, beyond the last, zero.
    seconds: fc.oneof(fc.constantFrom(0, ...BUCKETS, 61, 1e6), fc.double({ min: 0, max: 100, noNaN: true })),
  }),
  fc.record({ unknown: fc.constant(true as const), protocol: fc.constantFrom("rest", "grpc"), code: fc.constantFrom("NOT_FOUND", "UNIMPLEMENTED") }),
  fc.record({ token: fc.constantFrom("valid" as const, "rejected" as const, "missing" as const) }),
);

describe("call metrics exposition", () => {
  it("is byte for byte what prom-client's Counters and Histogram print for the same calls and credentials", async () => {
    const methods = [GroupsService.method.getGroup, GroupsService.method.listGroups];
    await fc.assert(
      fc.asyncProperty(fc.array(callArb, { maxLength: 60 }), async (calls) => {
        const metrics = createMetrics(opened.health);
        const recorders = methods.map((m) => metrics.forMethod(m));
        const reference = new Registry();
        const counter = new Counter({
          name: "trellis_calls_total",
          help: "Finished RPC and REST calls by service, method, protocol and gRPC code.",
          labelNames: ["service", "method", "protocol", "code"],
          registers: [reference],
        });
        const histogram = new Histogram({
          name: "trellis_call_duration_seconds",
          help: "Time from the call entering the pipeline (after its request was decoded) to its answer or error.",
          labelNames: ["service", "method", "protocol"],
          buckets: BUCKETS,
          registers: [reference],
        });
        const tokens = new Counter({
          name: "trellis_token_verifications_total",
          help: "Calls by what their credential turned out to be: valid (a caller), rejected (UNAUTHENTICATED with a credential), missing (UNAUTHENTICATED without one).",
          labelNames: ["outcome"],
          registers: [reference],
        });
        for (const c of calls) {
          if ("token" in c) {
            metrics.tokenVerified(c.token);
            tokens.inc({ outcome: c.token });
            continue;
          }
          if ("unknown" in c) {
            metrics.recordUnknown(c.protocol, c.code);
            counter.inc({ service: "unknown", method: "unknown", protocol: c.protocol, code: c.code });
            continue;
          }
          const m = methods[c.method] as (typeof methods)[number];
          recorders[c.method]?.record(c.protocol, c.code, c.seconds);
          counter.inc({ service: m.parent.typeName, method: m.name, protocol: c.protocol, code: c.code });
          histogram.observe({ service: m.parent.typeName, method: m.name, protocol: c.protocol }, c.seconds);
        }
        const ours = (await metrics.scrape()).body;
        const theirs = await reference.metrics();
        for (const name of ["trellis_calls_total", "trellis_call_duration_seconds", "trellis_token_verifications_total"])
          expect(family(ours, name)).toBe(family(theirs, name));
      }),
      { seed: 22, numRuns: 60 },
    );
    // Not vacuous: a call moves the histogram's lines.
    const metrics = createMetrics(opened.health);
    metrics.forMethod(GroupsService.method.getGroup).record("rest", "OK", 0.003);
    expect((await metrics.scrape()).body).toContain(
      'trellis_call_duration_seconds_bucket{le="0.005",service="chainguard.platform.iam.v2beta1.GroupsService",method="GetGroup",protocol="rest"} 1',
    );
  });
});
