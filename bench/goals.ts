/**
 * The performance targets (docs/performance.md "Against the targets"), computed from one run's medians. Informational: the bench prints
 * and records them but never fails on speed (the machine is shared; see docs/performance.md).
 */
import { type ScenarioResult, spread } from "./report.js";

export interface GoalCheck {
  readonly goal: string;
  /** The measured value, in the goal's unit, or undefined when a scenario is missing. */
  readonly measured?: number;
  readonly unit: string;
  readonly holds?: boolean;
  /** What the reader needs to weigh the figure (e.g. the ceiling it is bounded by). */
  readonly note?: string;
}

export function checkGoals(results: readonly ScenarioResult[]): GoalCheck[] {
  const byId = new Map(results.filter((r) => r.runs.length > 0).map((r) => [r.id, r]));
  const cpu = (id: string) => byId.get(id)?.cpuUsPerReq?.median;
  const spread = (id: string) => byId.get(id)?.cpuUsPerReq;
  const ratio = (num: number | undefined, den: number | undefined) => (num !== undefined && den !== undefined ? num / den : undefined);
  const atLeast = (goal: string, measured: number | undefined, min: number, unit = "×"): GoalCheck => ({
    goal,
    measured,
    unit,
    holds: measured === undefined ? undefined : measured >= min,
  });
  const atMost = (goal: string, measured: number | undefined, max: number, unit: string): GoalCheck => ({
    goal,
    measured,
    unit,
    holds: measured === undefined ? undefined : measured <= max,
  });
  return [
    atLeast("REST GetGroup ≥ 0.50 of bare node:http (CPU)", ratio(cpu("bare-h1"), cpu("rest-get")), 0.5),
    atLeast("REST List page ≥ 0.60 of raw SQLite+JSON for the same page (CPU)", ratio(cpu("raw-list"), cpu("rest-list")), 0.6),
    atLeast("gRPC GetGroup at least as cheap as the grpc-js peer (CPU)", ratio(cpu("grpc-peer-get"), cpu("grpc-get")), 1.0),
    atLeast("Connect JSON (h1) ≥ 0.40 of bare node:http (CPU)", ratio(cpu("bare-h1"), cpu("connect-json-h1-get")), 0.4),
    atLeast("Connect binary (h1) ≥ 0.40 of bare node:http (CPU)", ratio(cpu("bare-h1"), cpu("connect-proto-h1-get")), 0.4),
    atLeast("gRPC-web ≥ 0.25 of bare node:http (CPU)", ratio(cpu("bare-h1"), cpu("grpc-web-get")), 0.25),
    atMost("List at row 100,000 ≤ 1.5× page 1 (CPU)", ratio(cpu("rest-list-depth-2"), cpu("rest-list-depth-0")), 1.5, "×"),
    withNote(
      atLeast("CreateGroup ≥ 2,500 writes/s with synchronous=FULL", byId.get("rest-create")?.rps?.median, 2500, "/s"),
      byId.get("raw-insert")?.rps?.median,
      (raw) => `this disk's raw single-row INSERT ceiling: ${Math.round(raw).toLocaleString("en-US")}/s`,
    ),
    atMost("Token verification adds ≤ 15 µs per call (the auth hooks in-process, raw-auth)", cpu("raw-auth"), 15, "µs"),
    endToEndAuth(
      atMost(
        "Token verification adds ≤ 15 µs per call (end to end: peer with − without the auth hooks; noisy)",
        ratio((cpu("grpc-peer-get") ?? Number.NaN) - (cpu("grpc-peer-get-noauth") ?? Number.NaN), 1),
        15,
        "µs",
      ),
      spread("grpc-peer-get"),
      spread("grpc-peer-get-noauth"),
    ),
    ...postgresGoals(byId),
  ].map((g) => (g.measured !== undefined && Number.isNaN(g.measured) ? { ...g, measured: undefined, holds: undefined } : g));
}

const us = (x: number) => `${Math.round(x).toLocaleString("en-US")} µs`;

/**
 * The PostgreSQL targets, when the run had PostgreSQL scenarios (`--database`). The GetGroup
 * line compares the Trellis processes' own CPU on both engines, with PostgreSQL's own CPU per
 * request beside it (the same machine pays it); the depth line compares what a page costs the
 * whole server (Trellis + PostgreSQL), since a deep page's extra work, if any, is in the
 * database's index seek.
 */
function postgresGoals(byId: ReadonlyMap<string, ScenarioResult>): GoalCheck[] {
  if (![...byId.keys()].some((id) => id.startsWith("pg-"))) return [];
  const cpu = (id: string) => byId.get(id)?.cpuUsPerReq?.median;
  const db = (id: string) => byId.get(id)?.dbCpuUsPerReq?.median;
  const whole = (id: string) => {
    const c = cpu(id);
    return c === undefined ? undefined : c + (db(id) ?? 0);
  };
  const rps = (id: string) => byId.get(id)?.rps?.median;
  const ratio = (num: number | undefined, den: number | undefined) => (num !== undefined && den !== undefined ? num / den : undefined);
  const getRatio = ratio(cpu("pg-rest-get"), cpu("rest-get"));
  const pgGet = db("pg-rest-get");
  const get: GoalCheck = {
    goal: "PostgreSQL: REST GetGroup ≤ 1.5× its SQLite server CPU per request (Trellis processes)",
    measured: getRatio,
    unit: "×",
    holds: getRatio === undefined ? undefined : getRatio <= 1.5,
    ...(pgGet === undefined
      ? {}
      : { note: `PostgreSQL's own processes: ${us(pgGet)} more per request; with them ${ratio(whole("pg-rest-get"), cpu("rest-get"))?.toFixed(2)}×` }),
  };
  const depth = ratio(whole("pg-rest-list-depth-2"), whole("pg-rest-list-depth-0"));
  const twoReplicas = ratio(rps("pg-rest-create-2"), rps("pg-rest-create"));
  // What the generator left of the core the second replica runs on (run.ts places it there).
  const generatorCores = spread(byId.get("pg-rest-create-2")?.runs.map((r) => r.generatorCores ?? Number.NaN) ?? [])?.median;
  const one = rps("pg-rest-create");
  return [
    get,
    {
      goal: "PostgreSQL: List at row 100,000 ≤ 1.5× row 1 (CPU, Trellis + PostgreSQL)",
      measured: depth,
      unit: "×",
      holds: depth === undefined ? undefined : depth <= 1.5,
    },
    {
      goal: "PostgreSQL: CreateGroup writes/s with 2 replicas ≥ 1 replica",
      measured: twoReplicas,
      unit: "×",
      holds: twoReplicas === undefined ? undefined : twoReplicas >= 1,
      ...(one === undefined || rps("pg-rest-create-2") === undefined
        ? {}
        : {
            note: `${Math.round(rps("pg-rest-create-2") as number).toLocaleString("en-US")}/s against ${Math.round(one).toLocaleString("en-US")}/s${
              generatorCores === undefined ? "" : `; the generator, whose core replica 2 shares, used ${generatorCores.toFixed(2)} of it`
            }`,
          }),
    },
  ];
}

function withNote(g: GoalCheck, value: number | undefined, note: (v: number) => string): GoalCheck {
  return value === undefined ? g : { ...g, note: note(value) };
}

/**
 * The end-to-end token cost is the difference of two medians of ~150-500 µs. When the runs of
 * the two peers overlap, that difference is run-to-run noise, not a measurement: say so
 * instead of a verdict (raw-auth is the precise figure).
 */
function endToEndAuth(g: GoalCheck, withHooks?: { min: number; max: number }, without?: { min: number; max: number }): GoalCheck {
  if (g.measured === undefined || Number.isNaN(g.measured) || !withHooks || !without) return g;
  if (withHooks.min > without.max) return g;
  return { ...g, holds: undefined, note: "within the two peers' run-to-run spread; see raw-auth" };
}

export function goalsText(goals: readonly GoalCheck[]): string {
  const lines = goals.map((g) => {
    const mark = g.holds === undefined ? (g.measured === undefined ? "  n/a " : "  ~   ") : g.holds ? "  met " : "  MISS";
    const value =
      g.measured === undefined
        ? "not measured"
        : `${g.measured.toLocaleString("en-US", { maximumFractionDigits: g.unit === "×" ? 2 : 0 })}${g.unit === "×" ? "×" : ` ${g.unit}`}`;
    return `${mark}  ${g.goal}: ${value}${g.note ? ` (${g.note})` : ""}`;
  });
  return ["issue 8 targets (informational, never fails the run):", ...lines].join("\n");
}
