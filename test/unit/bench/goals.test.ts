/**
 * The performance targets' lines as the bench prints them: ratios from the same run's medians, the
 * write target with the disk's own ceiling beside it, and the end-to-end token cost reported
 * as noise (no verdict) when the two peers' runs overlap.
 */
import { describe, expect, it } from "vitest";
import { checkGoals, goalsText } from "../../../bench/goals.js";
import type { ScenarioResult } from "../../../bench/report.js";

const run = { rps: 1, p50Ms: 1, p99Ms: 1, errors: 0, cpuUsPerReq: 1, serverCores: 1 };
function result(id: string, cpu: [number, number, number], rps?: number): ScenarioResult {
  const [median, min, max] = cpu;
  return {
    id,
    title: id,
    kind: "load",
    status: "ok",
    runs: [run as never],
    cpuUsPerReq: { median, min, max },
    ...(rps === undefined ? {} : { rps: { median: rps, min: rps, max: rps } }),
  };
}

const base = [
  result("bare-h1", [20, 20, 20]),
  result("rest-get", [50, 50, 50]),
  result("raw-list", [100, 100, 100]),
  result("rest-list", [400, 400, 400]),
  result("rest-create", [300, 300, 300], 1_800),
  result("raw-insert", [60, 60, 60], 2_400),
];

describe("bench goals", () => {
  it("computes each ratio from the same run and marks met and missed", () => {
    const goals = checkGoals([...base, result("grpc-peer-get", [200, 190, 210]), result("grpc-peer-get-noauth", [150, 140, 160])]);
    const by = (prefix: string) => goals.find((g) => g.goal.startsWith(prefix));
    expect(by("REST GetGroup")).toMatchObject({ measured: 0.4, holds: false });
    expect(by("REST List page")).toMatchObject({ measured: 0.25, holds: false });
    expect(by("CreateGroup")).toMatchObject({ measured: 1_800, holds: false, note: "this disk's raw single-row INSERT ceiling: 2,400/s" });
    // Separate runs: the difference is a measurement (50 µs > 15 µs).
    expect(goals.at(-1)).toMatchObject({ measured: 50, holds: false });
    expect(by("Connect JSON")).toMatchObject({ measured: undefined, holds: undefined });
  });

  it("gives no verdict on the end-to-end token cost when the peers' runs overlap", () => {
    const goals = checkGoals([...base, result("grpc-peer-get", [489, 384, 524]), result("grpc-peer-get-noauth", [434, 418, 474])]);
    const e2e = goals.at(-1);
    expect(e2e).toMatchObject({ measured: 55, holds: undefined });
    expect(goalsText(goals)).toContain("~     Token verification adds ≤ 15 µs per call (end to end");
    expect(goalsText(goals)).toContain("(within the two peers' run-to-run spread; see raw-auth)");
  });
});
