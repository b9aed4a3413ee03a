/**
 * PostgreSQL ceilings, measured in the raw target like the SQLite ones (raw.ts): what
 * node-postgres alone costs this process for the same rows a Trellis call reads (one prepared
 * query, its rows to JSON), and how many single-row autocommit INSERTs the server takes per
 * second. The runner reads PostgreSQL's own CPU around each task, as around every PostgreSQL
 * scenario, so both sides of the query are reported.
 */
import { createHash } from "node:crypto";
import pg from "pg";
import { RateLimiterPostgres } from "rate-limiter-flexible";
import type { RawResult } from "./control.js";

/** Runs `op` back to back on each of `workers` loops until `seconds` have passed. */
async function timedAsync(seconds: number, workers: number, op: (worker: number) => Promise<void>): Promise<RawResult> {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const until = t0 + seconds * 1000;
  let ops = 0;
  await Promise.all(
    Array.from({ length: workers }, async (_, w) => {
      while (performance.now() < until) {
        await op(w);
        ops++;
      }
    }),
  );
  const cpu = process.cpuUsage(cpu0);
  return { ops, seconds: (performance.now() - t0) / 1000, cpuUs: cpu.user + cpu.system };
}

/**
 * The connections of this process, opened once and kept until it exits: a backend that ended
 * with its connection would take its CPU time out of what the runner reads from /proc.
 */
const clients = new Map<string, pg.Client>();

async function clientFor(url: string, slot: string): Promise<pg.Client> {
  const key = `${slot} ${url}`;
  let client = clients.get(key);
  if (!client) {
    client = new pg.Client({ connectionString: url });
    await client.connect();
    clients.set(key, client);
  }
  return client;
}

/** One client, one named (so prepared once) statement per query, awaited back to back. */
export async function pgQueryJson(sql: string, params: readonly (string | number)[], seconds: number, url: string): Promise<RawResult> {
  const client = await clientFor(url, "query");
  const query = { name: `bench-raw-${createHash("sha1").update(sql).digest("hex").slice(0, 16)}`, text: sql, values: [...params] };
  return timedAsync(seconds, 1, async () => {
    const { rows } = await client.query(query);
    JSON.stringify({ groups: rows });
  });
}

/**
 * INSERTs into a scratch copy of the groups table (same columns and indexes, no foreign key:
 * parentless rows, as the SQLite ceiling writes), each its own transaction, from `connections`
 * clients at once: PostgreSQL flushes concurrent commits together, as a pool of Trellis's would.
 */
export async function pgInsert(connections: number, seconds: number, url: string): Promise<RawResult> {
  const writers = await Promise.all(Array.from({ length: connections }, (_, i) => clientFor(url, `insert-${i}`)));
  await writers[0]?.query("CREATE TABLE IF NOT EXISTS bench_raw_insert (LIKE groups INCLUDING ALL)");
  const prefix = `${process.pid.toString(16)}${Date.now().toString(16)}`;
  let n = 0;
  return timedAsync(seconds, connections, async (w) => {
    const now = Date.now();
    const i = n++;
    await (writers[w] as pg.Client).query({
      name: "bench-raw-insert",
      text: "INSERT INTO bench_raw_insert (uid, parent_uid, name, description, verified, kind, create_time, update_time) VALUES ($1, NULL, $2, '', false, 0, $3, $3)",
      values: [`${prefix}${i.toString(16).padStart(16, "0")}`, `raw-${i}`, now],
    });
  });
}

/**
 * One caller's count kept in PostgreSQL by rate-limiter-flexible's store (one upsert per
 * call), from one connection, back to back: what sharing a rate limit across replicas through
 * the database would add to every limited call (src/server/rate-limits.ts keeps it in memory).
 */
export async function pgLimit(seconds: number, url: string): Promise<RawResult> {
  const client = await clientFor(url, "limit");
  const limiter = await new Promise<RateLimiterPostgres>((resolve, reject) => {
    const made: RateLimiterPostgres = new RateLimiterPostgres(
      { storeClient: client, storeType: "client", tableName: "bench_rate_limits", points: 1e9, duration: 60, keyPrefix: "reads" },
      (err?: Error) => (err ? reject(err) : resolve(made)),
    );
  });
  return timedAsync(seconds, 1, async () => {
    await limiter.consume("identity:bench");
  });
}
