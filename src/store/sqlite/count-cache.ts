/**
 * Remembers the result of a List's `count(*)` until the database changes (for speed, docs/performance.md: a first
 * page of 100 000 children spent 74 % of its 4 ms in the count, on every call).
 *
 * The cache is exact, not time-based: an entry is valid only while the database is
 * byte-for-byte as it was when the count ran. Two numbers tell that without any hook in the
 * write paths:
 * - `total_changes()`: rows inserted, updated or deleted by THIS connection since it opened
 *   (it only grows; a rolled-back write still moves it, which merely costs a recount);
 * - `PRAGMA data_version`: changes whenever ANOTHER connection commits (the import tool, a
 *   second process reading the same file, sqlite3 at the shell).
 * Reading both costs ~3.5 µs, nearly all of it the pragma (it takes SQLite's read lock on the
 * WAL); as two plucked statements it is ~1.5 µs cheaper than one select from the pragma's
 * table-valued function. Any write to any table invalidates every
 * entry: simple and safe; a write-heavy workload simply counts as it did before.
 *
 * Counts run outside write transactions (better-sqlite3 is synchronous, and neither
 * writeTransaction nor a group-commit batch ever yields mid-transaction), so no entry can
 * capture uncommitted rows.
 */
import type { Db } from "./db.js";

export interface CountCache {
  /**
   * The cached count for `key` if the database has not changed since it was taken, else
   * `run()` (whose result is remembered). `key` must identify the query and all its values.
   */
  count(key: string, run: () => number): number;
}

/** At most this many distinct queries are remembered; the map is dropped whole beyond it. */
const MAX_ENTRIES = 1024;

/** A drizzle `select({ n: count() })…` query, not yet run. */
export interface CountQuery {
  toSQL(): { sql: string; params: unknown[] };
  get(): { n: number } | undefined;
}

const perDatabase = new WeakMap<Db, CountCache>();

/** The one cache of a database connection, shared by every repository on it. */
export function countCacheFor(db: Db): CountCache {
  let cache = perDatabase.get(db);
  if (!cache) {
    cache = createCountCache(db);
    perDatabase.set(db, cache);
  }
  return cache;
}

/**
 * Runs a count query through the connection's cache, keyed by its SQL text and values (so
 * two callers with different filters or visibility scopes never share an entry).
 */
export function cachedCount(db: Db, query: CountQuery): number {
  const { sql, params } = query.toSQL();
  const key = `${sql}\n${JSON.stringify(params, (_k, v: unknown) => (typeof v === "bigint" ? `${v}n` : v))}`;
  return countCacheFor(db).count(key, () => query.get()?.n ?? 0);
}

export function createCountCache(db: Db, maxEntries = MAX_ENTRIES): CountCache {
  const changesStmt = db.$client.prepare("SELECT total_changes()").pluck();
  const dataVersionStmt = db.$client.prepare("PRAGMA data_version").pluck();
  const entries = new Map<string, number>();
  let version = "";
  return {
    count(key, run) {
      const current = `${changesStmt.get() as number}:${dataVersionStmt.get() as number}`;
      if (current !== version) {
        entries.clear();
        version = current;
      } else {
        const hit = entries.get(key);
        if (hit !== undefined) return hit;
      }
      const n = run();
      if (entries.size >= maxEntries) entries.clear();
      entries.set(key, n);
      return n;
    },
  };
}
