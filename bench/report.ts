/**
 * Turning timed runs into figures: medians (min–max) per scenario, ratios to the ceilings,
 * and the terminal table.
 */
import type { LoadResult } from "./load/types.js";
import type { LoadScenario, RawScenario } from "./scenarios.js";

/** One timed run: what the generator saw (errors also include the server's non-OK calls), plus server CPU. */
export interface RunFigures extends LoadResult {
  /** Server CPU µs per request (target process, all threads). */
  readonly cpuUsPerReq: number;
  /** Share of one core the server used during the run (well below 1: not server-bound). */
  readonly serverCores: number;
  /** PostgreSQL scenarios: the database server's own CPU µs per request (all its processes), when measured. */
  readonly dbCpuUsPerReq?: number;
  /** The load generator's CPU (wrk/h2load, or the Node loader) as a share of one core, and per request. */
  readonly generatorCores?: number;
  readonly generatorCpuUsPerReq?: number;
}

export interface Spread {
  readonly median: number;
  readonly min: number;
  readonly max: number;
}

export interface ScenarioResult {
  readonly id: string;
  readonly title: string;
  readonly kind: "load" | "raw";
  readonly generator?: string;
  readonly status: "ok" | "skipped" | "failed";
  readonly note?: string;
  readonly runs: RunFigures[];
  readonly cpuUsPerReq?: Spread;
  /** PostgreSQL's own CPU per request, beside the Trellis processes' (cpuUsPerReq). */
  readonly dbCpuUsPerReq?: Spread;
  readonly rps?: Spread;
  readonly p50Ms?: Spread;
  readonly p99Ms?: Spread;
  readonly errors?: number;
  readonly peakRssMb?: number;
  /** ceiling CPU ÷ this CPU: 1.0 = as cheap as the bare runtime. */
  readonly vsBare?: { readonly id: string; readonly ratio: number };
  /** reference ÷ this (CPU), or this ÷ reference (req/s, for write ceilings). */
  readonly vsRef?: { readonly id: string; readonly metric: "cpu" | "rps"; readonly ratio: number };
  /** The same against the scenario's second reference. */
  readonly vsRef2?: { readonly id: string; readonly metric: "cpu" | "rps"; readonly ratio: number };
}

export function spread(values: readonly number[]): Spread | undefined {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return undefined;
  const mid = Math.floor(v.length / 2);
  const median = v.length % 2 ? (v[mid] as number) : ((v[mid - 1] as number) + (v[mid] as number)) / 2;
  return { median, min: v[0] as number, max: v[v.length - 1] as number };
}

export function summarize(
  s: LoadScenario | RawScenario,
  kind: "load" | "raw",
  runs: RunFigures[],
  extra: Pick<ScenarioResult, "generator" | "status" | "note" | "peakRssMb">,
): ScenarioResult {
  return {
    id: s.id,
    title: s.title,
    kind,
    ...extra,
    runs,
    cpuUsPerReq: spread(runs.map((r) => r.cpuUsPerReq)),
    dbCpuUsPerReq: spread(runs.map((r) => r.dbCpuUsPerReq ?? Number.NaN)),
    rps: spread(runs.map((r) => r.rps)),
    p50Ms: spread(runs.map((r) => r.p50Ms)),
    p99Ms: spread(runs.map((r) => r.p99Ms)),
    errors: runs.reduce((a, r) => a + r.errors, 0),
  };
}

/** Fills vsBare / vsRef from the other results of the same run. */
export function withRatios(results: ScenarioResult[], scenarios: readonly LoadScenario[]): ScenarioResult[] {
  const byId = new Map(results.map((r) => [r.id, r]));
  const cpu = (id: string) => byId.get(id)?.cpuUsPerReq?.median;
  const rps = (id: string) => byId.get(id)?.rps?.median;
  return results.map((r) => {
    const s = scenarios.find((x) => x.id === r.id);
    if (!s || r.runs.length === 0) return r;
    const mine = cpu(r.id);
    const out: { -readonly [K in keyof ScenarioResult]: ScenarioResult[K] } = { ...r };
    if (s.bare && mine && cpu(s.bare)) out.vsBare = { id: s.bare, ratio: (cpu(s.bare) as number) / mine };
    const against = (ref: NonNullable<LoadScenario["ref"]>) => {
      const ratio = ref.metric === "cpu" ? (cpu(ref.id) ?? Number.NaN) / (mine ?? Number.NaN) : (rps(r.id) ?? Number.NaN) / (rps(ref.id) ?? Number.NaN);
      return Number.isFinite(ratio) ? { id: ref.id, metric: ref.metric, ratio } : undefined;
    };
    if (s.ref) out.vsRef = against(s.ref);
    if (s.ref2) out.vsRef2 = against(s.ref2);
    return out;
  });
}

const fmt = (x: number | undefined, digits = 0) =>
  x === undefined || !Number.isFinite(x) ? "-" : x.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });
const range = (s: Spread | undefined, digits = 0) =>
  s === undefined ? "-" : s.min === s.max ? fmt(s.median, digits) : `${fmt(s.median, digits)} (${fmt(s.min, digits)}–${fmt(s.max, digits)})`;

export function table(results: readonly ScenarioResult[]): string {
  const withDb = results.some((r) => r.dbCpuUsPerReq !== undefined);
  const head = [
    "scenario",
    "gen",
    "req/s",
    "p50 ms",
    "p99 ms",
    "CPU µs/req",
    ...(withDb ? ["PG µs/req"] : []),
    "cores",
    "gen cores",
    "err",
    "RSS MB",
    "÷bare",
    "÷ref",
  ];
  const refText = (v: ScenarioResult["vsRef"]) => (v ? `${fmt(v.ratio, 2)} ${v.metric === "rps" ? "rps " : ""}${v.id}` : "");
  const rows = results.map((r) => {
    if (r.status === "skipped") return [r.title, "SKIP", "", "", "", "", ...(withDb ? [""] : []), "", "", "", "", "", "(see below)"];
    const cores = spread(r.runs.map((x) => x.serverCores));
    const genCores = spread(r.runs.map((x) => x.generatorCores ?? Number.NaN));
    return [
      r.title,
      r.generator ?? "",
      fmt(r.rps?.median),
      fmt(r.p50Ms?.median, 2),
      fmt(r.p99Ms?.median, 2),
      range(r.cpuUsPerReq, r.cpuUsPerReq && r.cpuUsPerReq.median < 10 ? 1 : 0),
      ...(withDb ? [range(r.dbCpuUsPerReq)] : []),
      fmt(cores?.median, 2),
      fmt(genCores?.median, 2),
      r.status === "failed" ? `FAIL ${r.errors ?? ""}` : String(r.errors ?? 0),
      fmt(r.peakRssMb),
      r.vsBare ? fmt(r.vsBare.ratio, 2) : "",
      [refText(r.vsRef), refText(r.vsRef2)].filter(Boolean).join("; "),
    ];
  });
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] ?? "").length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === 0 || i === 1 || i === head.length - 1 ? c.padEnd(widths[i] as number) : c.padStart(widths[i] as number)))
      .join("  ")
      .trimEnd();
  const notes = results.filter((r) => r.status !== "ok" && r.note).map((r) => `${r.status === "skipped" ? "SKIP" : "FAIL"} ${r.title}: ${r.note}`);
  return [line(head), line(widths.map((w) => "-".repeat(w))), ...rows.map(line), ...(notes.length ? ["", ...notes] : [])].join("\n");
}
