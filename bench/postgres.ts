/**
 * PostgreSQL for the bench (`--database`): a database of the bench's own on the given server
 * (or on a throwaway cluster, scripts/pg-cluster.mjs), filled with the very rows of the SQLite
 * seed by `trellis db copy` (so uids, keys and the operator token are the same on both
 * engines), and the CPU time of that server's processes.
 *
 * Server CPU on PostgreSQL is two figures: the Trellis processes' own (as on SQLite), and
 * PostgreSQL's (the postmaster and every child: backends, WAL writer, checkpointer, …), read
 * from /proc. Only a server on this machine can be measured that way; for another the bench
 * says so and reports Trellis's share alone.
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import pg from "pg";
import { startCluster, stopCluster } from "../scripts/pg-cluster.mjs";
import { copySqliteToPostgres } from "../src/store/postgres/copy.js";

/** The `--database` value that asks for a throwaway cluster instead of a given server. */
export const THROWAWAY = "throwaway";

export interface BenchPostgres {
  /** The bench's own database (created here, dropped by close()). */
  readonly url: string;
  /** Where the figures come from, for the report (never a password). */
  readonly describe: string;
  /** Settings that decide what a write costs, as the server reports them. */
  readonly settings: Readonly<Record<string, string>>;
  /** The server's version string. */
  readonly version: string;
  /** CPU µs used so far by every process of the server, or undefined when it is not on this machine. */
  cpuUs(): number | undefined;
  /** Why cpuUs() is undefined, or how the processes are pinned. */
  readonly cpuNote: string;
  /** Resolves once no other session runs a query on the bench's database (at most 60 s). */
  quiesce(): Promise<void>;
  close(): Promise<void>;
}

/** Settings whose values the report shows beside the write figures. */
const REPORTED_SETTINGS = ["fsync", "synchronous_commit", "full_page_writes", "shared_buffers", "max_connections"];

/**
 * Opens PostgreSQL for the bench: `database` is a postgres:// URL of a server on which the
 * bench may CREATE DATABASE, or THROWAWAY. `dataDir` (the SQLite seed) is copied into a fresh
 * database; `serverCpu` (a taskset CPU list) pins the server's processes next to Trellis when
 * the bench may.
 */
export async function openBenchPostgres(database: string, dataDir: string, serverCpu: string | undefined, say: (s: string) => void): Promise<BenchPostgres> {
  let cluster: Awaited<ReturnType<typeof startCluster>> | undefined;
  let serverUrl = database;
  if (database === THROWAWAY) {
    // Durable, unlike a test cluster: the bench compares writes with SQLite's synchronous=FULL.
    cluster = await startCluster({ log: say, durable: true });
    serverUrl = cluster.url;
  }
  const name = `trellis_bench_${randomBytes(5).toString("hex")}`;
  let created = false;
  const cleanup = async () => {
    if (created) await adminQuery(serverUrl, [`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`]).catch(() => {});
    if (cluster) await stopCluster(cluster.dir).catch(() => {});
  };
  try {
    await adminQuery(serverUrl, [`CREATE DATABASE ${name}`]);
    created = true;
    const url = withDatabase(serverUrl, name);
    const t0 = performance.now();
    const tables = await copySqliteToPostgres({ fromDir: dataDir, toUrl: url });
    const rows = tables.reduce((n, t) => n + t.rows, 0);
    // A million fresh rows would otherwise meet autovacuum in the middle of a timed run.
    await adminQuery(url, ["VACUUM ANALYZE"]);
    say(`postgres: copied ${rows.toLocaleString("en-US")} rows with trellis db copy, vacuumed, in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

    const info = await adminQuery(
      url,
      [`SELECT name, setting, unit FROM pg_settings WHERE name = ANY('{${REPORTED_SETTINGS.join(",")}}')`, "SELECT version() AS v, pg_backend_pid() AS pid"],
      // While the backend still lives: its parent is the postmaster.
      (results) => postmasterOf(Number(results[1]?.rows[0]?.pid)),
    );
    const settings = Object.fromEntries(
      (info.results[0]?.rows ?? []).map((r: { name: string; setting: string; unit: string | null }) => [
        r.name,
        r.unit === "8kB" ? `${(Number(r.setting) * 8) / 1024}MB` : r.setting,
      ]),
    );
    const version = String(info.results[1]?.rows[0]?.v ?? "?").split(" on ")[0] as string;
    const postmaster = info.found;
    let cpuNote: string;
    if (postmaster === undefined) cpuNote = "PostgreSQL's own CPU not measured: its processes are not on this machine";
    else cpuNote = pinServer(postmaster, serverCpu);
    return {
      url,
      describe: cluster ? `throwaway cluster (scripts/pg-cluster.mjs), durability on` : redact(serverUrl),
      settings,
      version,
      cpuNote,
      cpuUs: () => (postmaster === undefined ? undefined : serverCpuUs(postmaster)),
      quiesce: () => quiesce(url),
      close: cleanup,
    };
  } catch (err) {
    await cleanup();
    throw err;
  }
}

/** Runs `statements` in order on one connection of their own, then `then` on their results before it closes. */
async function adminQuery<T = undefined>(
  url: string,
  statements: readonly string[],
  then?: (results: pg.QueryResult[]) => T,
): Promise<{ results: pg.QueryResult[]; found: T | undefined }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const results: pg.QueryResult[] = [];
    for (const s of statements) results.push(await client.query(s));
    return { results, found: then?.(results) };
  } finally {
    await client.end();
  }
}

async function quiesce(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const until = Date.now() + 60_000;
    while (Date.now() < until) {
      const { rows } = await client.query(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state <> 'idle' AND pid <> pg_backend_pid()",
      );
      if (rows[0].n === 0) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  } finally {
    await client.end();
  }
}

function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

function redact(url: string): string {
  const u = new URL(url);
  if (u.password) u.password = "***";
  return u.toString();
}

const CLOCK_TICKS = 100; // sysconf(_SC_CLK_TCK) on Linux

/** Fields of /proc/PID/stat after the command name (which may hold spaces). */
function statFields(pid: number): string[] | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return undefined;
  }
}

/**
 * The postmaster of the backend `pid` when that backend runs on this machine: its parent,
 * provided both are PostgreSQL processes. (A server elsewhere has its own pid space: the pid
 * here is someone else's process, or none.)
 */
function postmasterOf(pid: number): number | undefined {
  const isPostgres = (p: number) => {
    try {
      return /postgres|postmaster/.test(fs.readFileSync(`/proc/${p}/cmdline`, "utf8"));
    } catch {
      return false;
    }
  };
  if (!Number.isInteger(pid) || !isPostgres(pid)) return undefined;
  const ppid = Number(statFields(pid)?.[1]);
  return Number.isInteger(ppid) && isPostgres(ppid) ? ppid : undefined;
}

/** Children of `pid` now (a scan of /proc: PostgreSQL forks one backend per connection). */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    if (Number(statFields(Number(entry))?.[1]) === pid) out.push(Number(entry));
  }
  return out;
}

/**
 * user + system CPU of the postmaster, of every live child, and of the children it has already
 * reaped (its cutime + cstime): a backend whose connection closed mid-run still counts.
 */
function serverCpuUs(postmaster: number): number | undefined {
  const own = statFields(postmaster);
  if (!own) return undefined;
  // utime, stime, cutime, cstime are fields 14–17 of stat: 11–14 after the name.
  let ticks = Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14]);
  for (const child of childrenOf(postmaster)) {
    const f = statFields(child);
    if (f) ticks += Number(f[11]) + Number(f[12]);
  }
  return (ticks * 1e6) / CLOCK_TICKS;
}

/** Pins the server's processes to `cpu` (new backends inherit the postmaster's affinity). */
function pinServer(postmaster: number, cpu: string | undefined): string {
  if (cpu === undefined) return "PostgreSQL's processes unpinned";
  try {
    for (const pid of [postmaster, ...childrenOf(postmaster)]) execFileSync("taskset", ["-a", "-p", "-c", cpu, String(pid)], { stdio: "ignore" });
    return `PostgreSQL's processes pinned to CPU ${cpu} with the servers`;
  } catch {
    return `PostgreSQL's processes unpinned (taskset refused: not ours to pin)`;
  }
}
