/**
 * `npm run bench [-- options]`: the benchmark (docs/performance.md) in one process tree and one run.
 *
 *   --quick            tiny seed, one short run per scenario, Node loader when wrk/h2load are
 *                      missing; asserts nothing about speed, fails if any scenario errors (CI)
 *   --runs N           timed runs per scenario (default 3; quick 1), alternating scenarios
 *   --seconds S        length of a timed run (default 8; quick 1)
 *   --warmup S         discarded warm-up per scenario before the first run (default 5; quick 0)
 *   --loader L         auto (wrk/h2load, Node fallback only in quick mode) | node
 *   --only a,b         run only these scenario ids (ceilings they refer to are added)
 *   --profile          after the timed runs, profile the target (V8 sampling profiler, 100 µs)
 *                      for rest-get, grpc-get, rest-list, rest-list-depth-0, rest-create and
 *                      the two peers (with --only: for each chosen Trellis or peer scenario);
 *                      writes <out dir>/profiles/<id>.cpuprofile, prints the top self-time frames
 *   --database URL     also run every Trellis scenario on PostgreSQL (ids pg-…), in the same run:
 *                      a fresh database of the bench's own on that server (it needs CREATEDB;
 *                      dropped at the end) filled by `trellis db copy` from the SQLite seed, two
 *                      Trellis replicas on it, raw node-postgres ceilings; `--database throwaway`
 *                      starts a private cluster (scripts/pg-cluster.mjs) with durability on
 *   --out FILE         JSON results (default bench/results/latest.json)
 *   --help             print this text
 *
 * Every target (Trellis, the grpc-js peer, bare node:http/http2, raw SQLite) is a child
 * process pinned to CPU 0; wrk/h2load run pinned to CPU 1, and their CPU is reported. On
 * PostgreSQL, the database and the first replica are on CPU 0, the second replica (only the
 * two-replica CreateGroup uses it) on CPU 1 with the generator. Server CPU per request comes from
 * the target's own process.cpuUsage() (all threads) over each run; on PostgreSQL, the sum over
 * the replicas that served the scenario, and PostgreSQL's own processes' CPU beside it (/proc).
 */
import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import Database from "better-sqlite3";
import pg from "pg";
import { MAX_API_TOKEN_TTL_S } from "../src/auth/token-lifetime.js";
import { databaseFile } from "../src/store/sqlite/db.js";
import { checkGoals, goalsText } from "./goals.js";
import { h2load } from "./load/h2load.js";
import { nodeLoader, sendOnce, succeeded } from "./load/node-loader.js";
import { generatorCpuUs } from "./load/generator-cpu.js";
import type { LoadGenerator, LoadOptions, LoadResult } from "./load/types.js";
import { wrk } from "./load/wrk.js";
import { topSelfFrames } from "./profile-top.js";
import { type RunFigures, type ScenarioResult, summarize, table, withRatios } from "./report.js";
import { type BenchPostgres, openBenchPostgres } from "./postgres.js";
import {
  type LoadScenario,
  listPath,
  loadScenarios,
  POSTGRES_REPLICAS,
  postgresScenarios,
  type RawScenario,
  rawPostgresScenarios,
  rawScenarios,
  type ScenarioInput,
  type TargetKind,
} from "./scenarios.js";
import { FULL_SEED, QUICK_SEED, seed } from "./seed.js";
import type { Usage } from "./targets/control.js";
import { startTarget, type Target } from "./targets/spawn.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const CREATE_METHOD = "chainguard.platform.iam.v2beta1.GroupsService/CreateGroup";
/** How the bench mints its operator token (docs/auth.md "The operator"). */
const MINT_TOKEN = (dataDir: string, ttlSeconds: number) => [
  "--import",
  "tsx",
  path.join(ROOT, "src/main.ts"),
  "auth",
  "token",
  "--local",
  "--data",
  dataDir,
  "--ttl",
  String(ttlSeconds),
];

const { values: flags } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    runs: { type: "string" },
    seconds: { type: "string" },
    warmup: { type: "string" },
    loader: { type: "string", default: "auto" },
    only: { type: "string" },
    profile: { type: "boolean", default: false },
    database: { type: "string" },
    out: { type: "string", default: path.join(ROOT, "bench/results/latest.json") },
    help: { type: "boolean", default: false },
  },
});
if (flags.help) {
  // The usage is this file's header comment, so the two cannot drift apart.
  const header = /\/\*\*\n([\s\S]*?)\*\//.exec(fs.readFileSync(fileURLToPath(import.meta.url), "utf8"))?.[1] ?? "";
  process.stdout.write(`${header.replace(/^ \* ?/gm, "")}\nscenario ids (--only): see the \`id:\` fields in bench/scenarios.ts\n`);
  process.exit(0);
}
const quick = flags.quick === true;
const RUNS = Number(flags.runs ?? (quick ? 1 : 3));
const SECONDS = Number(flags.seconds ?? (quick ? 1 : 8));
const WARMUP = Number(flags.warmup ?? (quick ? 0 : 5));
const say = (s: string) => process.stdout.write(`${s}\n`);

function has(cmd: string): boolean {
  return spawnSync("sh", ["-c", `command -v ${cmd}`], { stdio: "ignore" }).status === 0;
}

function versionOf(cmd: string, args: string[], re: RegExp): string | undefined {
  const r = spawnSync(cmd, args, { encoding: "utf8" });
  return re.exec(`${r.stdout}${r.stderr}`)?.[1];
}

function pkgVersion(name: string): string {
  return (JSON.parse(fs.readFileSync(path.join(ROOT, "node_modules", name, "package.json"), "utf8")) as { version: string }).version;
}

async function main(): Promise<number> {
  // 1. Preflight: tools, pinning, versions.
  const tools = { wrk: has("wrk"), h2load: has("h2load"), taskset: has("taskset") };
  const cores = os.availableParallelism();
  const pin = tools.taskset && cores >= 2;
  const serverCpu = pin ? "0" : undefined;
  const loadCpu = pin ? "1" : undefined;
  const forceNode = flags.loader === "node";
  const missing: string[] = [];
  if (!tools.wrk) missing.push("wrk (Debian package `wrk`)");
  if (!tools.h2load) missing.push("h2load (Debian package `nghttp2-client`)");
  const generatorFor = (proto: "h1" | "h2"): LoadGenerator | string => {
    if (forceNode) return nodeLoader;
    if (proto === "h1" && tools.wrk) return wrk;
    if (proto === "h2" && tools.h2load) return h2load;
    if (quick) return nodeLoader;
    return `${proto === "h1" ? "wrk" : "h2load"} is not installed: apt-get install -y ${proto === "h1" ? "wrk" : "nghttp2-client"}`;
  };
  const env = {
    date: new Date().toISOString(),
    node: process.version,
    cpu: os.cpus()[0]?.model ?? "?",
    cores,
    pinned: pin
      ? `server CPU ${serverCpu}, generator CPU ${loadCpu}${flags.database === undefined ? "" : `; PostgreSQL and replica 1 on CPU ${serverCpu}, replica 2 on CPU ${loadCpu}`}`
      : "not pinned (needs taskset and 2 cores)",
    wrk: tools.wrk ? (versionOf("wrk", ["-v"], /wrk (?:debian\/)?([\d.]+)/) ?? "installed") : undefined,
    h2load: tools.h2load ? (versionOf("h2load", ["--version"], /nghttp2\/([\d.]+)/) ?? "installed") : undefined,
    libraries: Object.fromEntries(
      ["@connectrpc/connect-node", "@bufbuild/protobuf", "@grpc/grpc-js", "better-sqlite3", "drizzle-orm"].map((n) => [n, pkgVersion(n)]),
    ),
    sqlite: (new Database(":memory:").prepare("select sqlite_version() v").get() as { v: string }).v,
    mode: quick ? "quick" : "full",
    runs: RUNS,
    seconds: SECONDS,
    warmup: WARMUP,
  };
  say(`trellis bench (${env.mode}): node ${env.node}, ${cores} cores (${env.cpu}), ${env.pinned}`);
  say(
    `  wrk ${env.wrk ?? "MISSING"}, h2load ${env.h2load ?? "MISSING"}; ${Object.entries(env.libraries)
      .map(([k, v]) => `${k} ${v}`)
      .join(", ")}; SQLite ${env.sqlite}`,
  );
  if (missing.length > 0)
    say(`  missing: ${missing.join(", ")}${quick || forceNode ? " — using the Node loader (numbers are client-bound)" : " — those scenarios are skipped"}`);

  // 2. The targets run the compiled build, as `npm start` does (bench/targets/spawn.ts).
  const compile = spawnSync("npm", ["run", "--silent", "compile"], { cwd: ROOT, encoding: "utf8" });
  if (compile.status !== 0) {
    process.stderr.write(`npm run compile failed:\n${compile.stdout}${compile.stderr}\n`);
    return 1;
  }

  // 3. Seed a fresh data dir.
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-bench-"));
  const targets: Target[] = [];
  let postgres: BenchPostgres | undefined;
  try {
    const dataDir = path.join(work, "data");
    const fixture = seed(dataDir, quick ? QUICK_SEED : FULL_SEED);
    const deepRows = fixture.size.deepRows;
    const depths = quick ? [0, 1000, deepRows - 100] : [0, 1000, 100_000];
    say(`seeded ${fixture.treeGroups} groups over 3 levels, ${fixture.size.identities} identities, ${deepRows} list rows in ${fixture.seconds.toFixed(1)} s`);

    // 4. Targets, pinned to the server core. The bare servers answer with a real GetGroup body.
    const start = async (kind: string, config: object, cpu = serverCpu) => {
      const t = await startTarget(kind, config, cpu);
      targets.push(t);
      return t;
    };
    const [trellis, raw] = await Promise.all([start("trellis", { dataDir }), start("raw", { dataDir, scratchDir: work })]);
    // PostgreSQL gets the same rows by `trellis db copy`, once the SQLite server has made its
    // keys at start-up: the copy carries them, so the SQLite server's tokens verify there too.
    if (flags.database !== undefined) {
      postgres = await openBenchPostgres(flags.database, dataDir, serverCpu, say);
      say(
        `postgres: ${postgres.version}, ${postgres.describe}; ${Object.entries(postgres.settings)
          .map(([k, v]) => `${k}=${v}`)
          .join(", ")}; ${postgres.cpuNote}`,
      );
    }
    // Every call needs a token: an operator token minted from the data dir, as an operator would.
    // At most 24 hours: no token may live longer (src/auth/token-lifetime.ts), and no run does.
    const auth = mintToken(dataDir, Math.min(MAX_API_TOKEN_TTL_S, Math.max(3600, Math.ceil(40 * (WARMUP + RUNS * SECONDS) + 600))));
    if ("skip" in auth) say(`  no token: ${auth.skip}`);
    const authHeader: Record<string, string> = "token" in auth ? { authorization: `Bearer ${auth.token}` } : {};
    const sample = await sendOnce(trellis.url, {
      proto: "h1",
      method: "GET",
      path: `/iam/v2beta1/groups/${fixture.getUid}`,
      headers: authHeader,
      success: "http",
    });
    if (sample.status !== 200) throw new Error(`GetGroup sample failed: ${sample.status} ${sample.body.toString()}`);
    const bodyFile = path.join(work, "getgroup.json");
    fs.writeFileSync(bodyFile, sample.body);
    const [peer, peerNoAuth, bareH1, bareH2] = await Promise.all([
      start("peer", { dataDir, issuerUrl: trellis.url }),
      start("peer-noauth", { dataDir }),
      start("bare-h1", { bodyFile }),
      start("bare-h2", { bodyFile }),
    ]);
    const byKind: Partial<Record<TargetKind, Target>> = { trellis, peer, "peer-noauth": peerNoAuth, "bare-h1": bareH1, "bare-h2": bareH2 };
    // PostgreSQL: two replicas on the copied database, with the SQLite server's issuer URL, so the
    // one operator token (minted from the SQLite keys, which db copy carried over) serves all.
    let rawPg: Target | undefined;
    if (postgres) {
      const config = { dataDir, databaseUrl: postgres.url, serverIssuerUrl: trellis.url };
      // Placement: replica 1 serves every single-replica PostgreSQL scenario from the server
      // core, with PostgreSQL, as the SQLite server does. Replica 2 serves only the
      // two-replica CreateGroup, from the generator's core, which wrk leaves mostly idle at
      // CreateGroup's rate (the run reports the generator's CPU): on two cores that is the
      // only way a second replica can bring CPU of its own, and the target is about capacity
      // (docs/performance.md "On PostgreSQL" says what the comparison then means).
      const replicas = await Promise.all(POSTGRES_REPLICAS.map((_, i) => start("trellis", config, i === 0 ? serverCpu : loadCpu)));
      POSTGRES_REPLICAS.forEach((kind, i) => {
        byKind[kind] = replicas[i];
      });
      rawPg = await start("raw", { databaseUrl: postgres.url });
    }
    const targetOf = (kind: TargetKind): Target => {
      const t = byKind[kind];
      if (!t) throw new Error(`no ${kind} target in this run`);
      return t;
    };

    // 5. Page tokens for the depth scenarios: walk the chain (200 rows a page; the token does not bind page_size).
    const depthTokens = await walkTokens(
      trellis.url,
      `uidp.children_of=${fixture.deepOrg}`,
      depths.filter((d) => d > 0),
      authHeader,
    );
    const input: ScenarioInput = { ...fixture, depthTokens, depths, auth };
    const only = flags.only?.split(",").filter(Boolean);
    let scenarios = loadScenarios(input);
    let raws: (RawScenario & { pg?: boolean })[] = rawScenarios(input);
    if (postgres) {
      scenarios = [...scenarios, ...postgresScenarios(scenarios)];
      raws = [...raws, ...rawPostgresScenarios(input).map((r) => ({ ...r, pg: true }))];
    }
    if (only) {
      const wanted = new Set(only);
      for (const s of scenarios) if (wanted.has(s.id)) for (const dep of [s.bare, s.ref?.id, s.ref2?.id]) if (dep) wanted.add(dep);
      scenarios = scenarios.filter((s) => wanted.has(s.id));
      raws = raws.filter((s) => wanted.has(s.id));
    }

    // 6. Sample check: every scenario's response must be the real success before it is timed.
    const runnable: { s: LoadScenario; gen: LoadGenerator }[] = [];
    const results = new Map<string, ScenarioResult>();
    for (const s of scenarios) {
      const gen = generatorFor(s.request.proto);
      const skip = s.skip ?? (typeof gen === "string" ? gen : undefined);
      if (skip) {
        results.set(s.id, summarize(s, "load", [], { status: "skipped", note: skip }));
        continue;
      }
      const r = await sendOnce(targetOf(s.target).url, s.request, "sample");
      if (!succeeded(s.request, r) || (s.mustContain && !r.body.includes(s.mustContain))) {
        const note = `sample response: HTTP ${r.status}, grpc-status ${r.grpcStatus ?? "-"}: ${r.body.subarray(0, 300).toString()}`;
        results.set(s.id, summarize(s, "load", [], { status: "failed", note }));
        continue;
      }
      runnable.push({ s, gen: gen as LoadGenerator });
    }
    for (const [id, r] of results) say(`  ${r.status.toUpperCase()} ${id}: ${r.note}`);

    // 7. Warm-up, then RUNS rounds that alternate scenarios.
    let runSeq = 0;
    const options = (seconds: number, proto: "h1" | "h2"): LoadOptions => ({
      seconds,
      connections: proto === "h1" ? (quick ? 8 : 50) : quick ? 2 : 10,
      streams: proto === "h1" ? 1 : quick ? 4 : 5,
      runId: `r${process.pid}x${++runSeq}`,
      workDir: work,
      cpu: loadCpu,
    });
    /**
     * One load run of `s` on its target, or split evenly over its replicas at once; the server
     * CPU and non-OK calls summed over those targets, PostgreSQL's own CPU beside them.
     */
    const timedLoad = async (s: LoadScenario, gen: LoadGenerator, seconds: number) => {
      const serving = (s.replicas ?? [s.target]).map(targetOf);
      const share = (n: number) => Math.max(1, Math.round(n / serving.length));
      const before = await Promise.all(serving.map((t) => t.usage()));
      const db0 = s.target.startsWith("trellis-pg") ? postgres?.cpuUs() : undefined;
      const gen0 = generatorCpuUs();
      const loads = await Promise.all(
        serving.map((t) => {
          const o = options(seconds, s.request.proto);
          return gen.run(t.url, s.request, { ...o, connections: share(o.connections) });
        }),
      );
      const gen1 = generatorCpuUs();
      // Requests the generator gave up on at its deadline may still be running in PostgreSQL
      // (a first page that counts a million rows takes a while): their work belongs to this
      // scenario, not to the next one, so wait until the database is idle before reading.
      if (db0 !== undefined) await postgres?.quiesce();
      const db1 = db0 === undefined ? undefined : postgres?.cpuUs();
      const after = await Promise.all(serving.map((t) => t.usage()));
      let cpu = 0;
      let serverErrors = 0;
      let served = 0;
      serving.forEach((_, i) => {
        cpu += (after[i] as Usage).cpuUs - (before[i] as Usage).cpuUs;
        serverErrors += notOk(after[i] as Usage) - notOk(before[i] as Usage);
        served += callCount(after[i] as Usage) - callCount(before[i] as Usage);
      });
      const load = combined(loads);
      // CPU per request divides by every call the server finished, those the generator stopped
      // waiting for included (the bare servers count none: the generator's count then).
      return {
        load,
        requests: Math.max(load.requests, served),
        cpu,
        serverErrors,
        dbCpu: db1 === undefined || db0 === undefined ? undefined : db1 - db0,
        genCpu: gen1 === undefined || gen0 === undefined ? undefined : gen1 - gen0,
      };
    };
    if (WARMUP > 0) {
      say(`warm-up: ${WARMUP} s per scenario`);
      for (const { s, gen } of runnable) await timedLoad(s, gen, WARMUP);
    }
    const runs = new Map<string, RunFigures[]>();
    const rawRuns = new Map<string, RunFigures[]>();
    const failures = new Map<string, string>();
    for (let round = 1; round <= RUNS; round++) {
      say(`round ${round}/${RUNS}`);
      for (const { s, gen } of runnable) {
        if (failures.has(s.id)) continue;
        try {
          const { load, requests, cpu, serverErrors, dbCpu, genCpu } = await timedLoad(s, gen, SECONDS);
          const errorDetail = [load.errorDetail, serverErrors > 0 ? `server non-OK ${serverErrors}` : undefined].filter(Boolean).join("; ") || undefined;
          const fig: RunFigures = {
            requests: load.requests,
            seconds: load.seconds,
            rps: load.rps,
            p50Ms: load.p50Ms,
            p99Ms: load.p99Ms,
            errors: Math.max(load.errors, serverErrors),
            errorDetail,
            cpuUsPerReq: requests > 0 ? cpu / requests : Number.NaN,
            serverCores: cpu / 1e6 / load.seconds,
            ...(dbCpu === undefined || requests === 0 ? {} : { dbCpuUsPerReq: dbCpu / requests }),
            ...(genCpu === undefined || load.requests === 0
              ? {}
              : { generatorCores: genCpu / 1e6 / load.seconds, generatorCpuUsPerReq: genCpu / load.requests }),
          };
          (runs.get(s.id) ?? runs.set(s.id, []).get(s.id))?.push(fig);
          say(
            `  ${s.id.padEnd(26)} ${fig.rps.toFixed(0).padStart(7)} req/s  ${fig.cpuUsPerReq.toFixed(1).padStart(7)} µs/req${fig.dbCpuUsPerReq === undefined ? "" : ` (+PG ${fig.dbCpuUsPerReq.toFixed(1)})`}  p50 ${fig.p50Ms.toFixed(2)} ms  p99 ${fig.p99Ms.toFixed(2)} ms  gen ${fig.generatorCores?.toFixed(2) ?? "-"} cores  err ${fig.errors}${errorDetail ? ` (${errorDetail})` : ""}`,
          );
        } catch (err) {
          failures.set(s.id, err instanceof Error ? (err.message.split("\n")[0] as string) : String(err));
        }
      }
      for (const r of raws) {
        const db0 = r.pg ? postgres?.cpuUs() : undefined;
        const res = await (r.pg ? (rawPg as Target) : raw).raw(r.task, quick ? 0.3 : SECONDS);
        const db1 = r.pg ? postgres?.cpuUs() : undefined;
        const fig: RunFigures = {
          requests: res.ops,
          seconds: res.seconds,
          rps: res.ops / res.seconds,
          p50Ms: Number.NaN,
          p99Ms: Number.NaN,
          errors: 0,
          cpuUsPerReq: res.cpuUs / res.ops,
          serverCores: res.cpuUs / 1e6 / res.seconds,
          ...(db0 === undefined || db1 === undefined ? {} : { dbCpuUsPerReq: (db1 - db0) / res.ops }),
        };
        (rawRuns.get(r.id) ?? rawRuns.set(r.id, []).get(r.id))?.push(fig);
        say(
          `  ${r.id.padEnd(26)} ${fig.rps.toFixed(0).padStart(7)} op/s   ${fig.cpuUsPerReq.toFixed(1).padStart(7)} µs/op${fig.dbCpuUsPerReq === undefined ? "" : ` (+PG ${fig.dbCpuUsPerReq.toFixed(1)})`}`,
        );
      }
    }

    // 8. CreateGroup: every OK call must be exactly one new row.
    const finalTrellis = await trellis.usage();
    if (runnable.some((x) => x.s.id === "rest-create")) {
      const db = new Database(databaseFile(dataDir), { readonly: true });
      const rows = (db.prepare("SELECT count(*) n FROM groups WHERE parent_uid = ?").get(fixture.writesOrg) as { n: number }).n;
      db.close();
      const ok = finalTrellis.calls[`${CREATE_METHOD} OK`] ?? 0;
      if (rows !== ok) failures.set("rest-create", `${ok} CreateGroup calls answered OK but ${rows} rows were written`);
      else say(`rest-create: ${rows} rows written = ${ok} OK calls`);
    }
    if (postgres && runnable.some((x) => x.s.id.startsWith("pg-rest-create"))) {
      const rows = await countPostgresChildren(postgres.url, fixture.writesOrg);
      let ok = 0;
      for (const kind of POSTGRES_REPLICAS) ok += (await targetOf(kind).usage()).calls[`${CREATE_METHOD} OK`] ?? 0;
      if (rows !== ok) failures.set("pg-rest-create", `${ok} CreateGroup calls answered OK on PostgreSQL but ${rows} rows were written`);
      else say(`pg-rest-create (1 and 2 replicas): ${rows} rows written = ${ok} OK calls`);
    }

    // 9. Results.
    const rssOf = async (t: Target) => (await t.usage()).maxRssKb / 1024;
    const rss = new Map<TargetKind, number>();
    for (const [kind, t] of Object.entries(byKind) as [TargetKind, Target][]) rss.set(kind, await rssOf(t));
    const all: ScenarioResult[] = [];
    for (const s of scenarios) {
      const done = results.get(s.id);
      if (done) {
        all.push(done);
        continue;
      }
      const figs = runs.get(s.id) ?? [];
      const errored = figs.filter((f) => f.errors > 0).map((f) => f.errorDetail ?? String(f.errors));
      const failure = failures.get(s.id) ?? (errored.length > 0 ? `errors during the timed runs: ${errored.join(" | ")}` : undefined);
      const gen = runnable.find((x) => x.s.id === s.id)?.gen.name;
      all.push(summarize(s, "load", figs, { generator: gen, status: failure ? "failed" : "ok", note: failure, peakRssMb: rss.get(s.target) }));
    }
    for (const r of raws) all.push(summarize(r, "raw", rawRuns.get(r.id) ?? [], { generator: "in-process", status: "ok", peakRssMb: undefined }));
    const final = withRatios(all, scenarios);

    // 10. Optional profiles of the Trellis process (and of the peer, for the auth hooks).
    const profiles: Record<string, { file: string; top: ReturnType<typeof topSelfFrames> }> = {};
    if (flags.profile) {
      const dir = path.join(path.dirname(flags.out as string), "profiles");
      fs.mkdirSync(dir, { recursive: true });
      const chosen = only
        ? runnable.filter((r) => only.includes(r.s.id) && r.s.target !== "bare-h1" && r.s.target !== "bare-h2" && !r.s.replicas).map((r) => r.s.id)
        : [];
      const ids =
        chosen.length > 0
          ? chosen
          : [
              "rest-get",
              "grpc-get",
              "rest-list",
              "rest-list-depth-0",
              "rest-create",
              "grpc-peer-get",
              "grpc-peer-get-noauth",
              "pg-rest-get",
              "pg-rest-list-depth-2",
              "pg-rest-create",
            ];
      for (const id of ids) {
        const x = runnable.find((r) => r.s.id === id);
        if (!x) continue;
        const file = path.join(dir, `${id}.cpuprofile`);
        const target = targetOf(x.s.target);
        await target.profileStart();
        await x.gen.run(target.url, x.s.request, options(SECONDS, x.s.request.proto));
        await target.profileStop(file);
        profiles[id] = { file, top: topSelfFrames(file, 15) };
        say(`\nprofile ${id} (${path.relative(ROOT, file)}), top self time:`);
        for (const f of profiles[id].top) say(`  ${f.pct.toFixed(1).padStart(5)}%  ${f.frame}`);
      }
    }

    const goals = checkGoals(final);
    say(`\n${table(final)}`);
    say("\nCPU µs/req is the server process's own CPU (all threads) per completed request: median (min–max) of the runs.");
    say("÷bare = bare-runtime CPU/req ÷ this CPU/req (1.00 = as cheap as a bare server); ÷ref = the same against the named reference (rps: req/s ratio).");
    if (!quick) say(`\n${goalsText(goals)}`);
    fs.mkdirSync(path.dirname(flags.out as string), { recursive: true });
    const database = postgres && { version: postgres.version, server: postgres.describe, settings: postgres.settings, cpu: postgres.cpuNote };
    fs.writeFileSync(flags.out as string, `${JSON.stringify({ env, database, fixture, results: final, goals, profiles }, null, 2)}\n`);
    say(`results: ${path.relative(process.cwd(), flags.out as string)}`);
    const bad = final.filter((r) => r.status === "failed");
    for (const r of bad) say(`FAILED ${r.id}: ${r.note}`);
    return bad.length > 0 ? 1 : 0;
  } finally {
    await Promise.allSettled(targets.map((t) => t.stop()));
    await postgres?.close();
    fs.rmSync(work, { recursive: true, force: true });
  }
}

/** Runs of several generators at once as one: counts and rates add up, latencies are the worst. */
function combined(loads: readonly LoadResult[]): LoadResult {
  if (loads.length === 1) return loads[0] as LoadResult;
  const details = loads.map((l) => l.errorDetail).filter(Boolean);
  return {
    requests: loads.reduce((n, l) => n + l.requests, 0),
    seconds: Math.max(...loads.map((l) => l.seconds)),
    rps: loads.reduce((n, l) => n + l.rps, 0),
    p50Ms: Math.max(...loads.map((l) => l.p50Ms)),
    p99Ms: Math.max(...loads.map((l) => l.p99Ms)),
    errors: loads.reduce((n, l) => n + l.errors, 0),
    ...(details.length > 0 ? { errorDetail: details.join(" | ") } : {}),
  };
}

/** Rows under `parent` in the bench's PostgreSQL database. */
async function countPostgresChildren(url: string, parent: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query("SELECT count(*)::int AS n FROM groups WHERE parent_uid = $1", [parent]);
    return rows[0].n as number;
  } finally {
    await client.end();
  }
}

function callCount(u: Usage): number {
  let n = 0;
  for (const count of Object.values(u.calls)) n += count;
  return n;
}

function notOk(u: Usage): number {
  let n = 0;
  for (const [key, count] of Object.entries(u.calls)) if (!key.endsWith(" OK")) n += count;
  return n;
}

/** Follows next_page_token from the first page and keeps the token that starts at each depth. */
async function walkTokens(url: string, filter: string, depths: readonly number[], headers: Record<string, string>): Promise<Map<number, string>> {
  const out = new Map<number, string>();
  const step = 200;
  let token = "";
  let seen = 0;
  for (const depth of [...depths].sort((a, b) => a - b)) {
    while (seen < depth) {
      const size = Math.min(step, depth - seen);
      const res = await fetch(`${url}${listPath(filter, token).replace("page_size=50", `page_size=${size}`)}`, { headers });
      const body = (await res.json()) as { groups?: unknown[]; nextPageToken?: string };
      if (!res.ok || !body.nextPageToken) return out;
      seen += body.groups?.length ?? 0;
      token = body.nextPageToken;
    }
    out.set(depth, token);
  }
  return out;
}

/** An operator token from `trellis auth token --local`, or why there is none. */
function mintToken(dataDir: string, ttlSeconds: number): { token: string } | { skip: string } {
  try {
    const token = execFileSync(process.execPath, MINT_TOKEN(dataDir, ttlSeconds), { cwd: ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }).trim();
    if (!token) return { skip: "`trellis auth token --local` printed no token" };
    return { token };
  } catch (err) {
    const stderr = String((err as { stderr?: string }).stderr ?? "").split("\n")[0];
    return { skip: `\`trellis auth token --local\` failed: ${stderr || "no output"}` };
  }
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`bench: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exitCode = 1;
  },
);
