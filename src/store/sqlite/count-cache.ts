/**
 * Remembers the result of a List's `count(*)` until the database changes (for speed,
 * docs/performance.md: on a large parent the count was most of a first page's time, on every
 * call).
 *
 * The cache is exact for this process's own writes and follows other processes' commits
 * within one turn of the event loop, not time-based: an entry is valid only while the
 * database change check (shared-values.ts `databaseChangeCheck`, shared with the keys and
 * revocation watcher) has not moved. It moves with every row this connection writes
 * (`total_changes()`, asked each time, cheap) and with every commit of ANOTHER connection
 * (`PRAGMA data_version`: the import tool, a second process on the same file, sqlite3 at the
 * shell), which costs a WAL read lock and so is asked at most once per turn. Any write to
 * any table invalidates every entry: simple and safe; a write-heavy workload simply counts
 * as it did before.
 *
 * Counts run outside write transactions (better-sqlite3 is synchronous, and neither
 * writeTransaction nor a group-commit batch ever yields mid-transaction), so no entry can
 * capture uncommitted rows.
 */
import type { Db } from "./db.js";
import { databaseChangeCheck } from "./shared-values.js";

export interface CountCache {
  /**
   * The cached count for `key` if the database has not changed since it was taken, else
   * `run()` (whose result is remembered). `key` must identify the query and all its values.
   */
  count(key: string, run: () => number): number;
}

/** At most this many distinct queries are remembered; the map is dropped whole beyond it. */
const MAX_ENTRIES = 1024;

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

export function createCountCache(db: Db, maxEntries = MAX_ENTRIES): CountCache {
  const changeCheck = databaseChangeCheck(db);
  const entries = new Map<string, number>();
  let generation = -1;
  return {
    count(key, run) {
      const current = changeCheck();
      if (current !== generation) {
        entries.clear();
        generation = current;
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
