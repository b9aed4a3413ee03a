/**
 * Write transactions on PostgreSQL: READ COMMITTED with explicit row locks on the rows an
 * invariant depends on (each repository says which), run again when PostgreSQL aborts one
 * as a deadlock victim or a serialization failure. Those aborts roll everything back and say
 * "try again"; a bounded number of attempts turns a rare collision into a success, and a
 * lasting one into a `conflict` error (ABORTED for the caller) rather than a loop.
 */
import type { StorageStats } from "../engine.js";
import type { PgDb } from "./connection.js";
import { mapPostgresError } from "./errors.js";

export type Tx = Parameters<Parameters<PgDb["transaction"]>[0]>[0];

/** Attempts of one write transaction before its conflict is reported. */
export const MAX_TRANSACTION_ATTEMPTS = 3;

/**
 * The write path's counters of one database handle, read when metrics are scraped (plain
 * numbers: a write pays an addition or two). What each means next to SQLite's group commit:
 * - `transactions`/`transactionSeconds`: every attempt of writeTransaction that got past BEGIN,
 *   committed or not, and its time from its first statement to COMMIT's (or the failure's)
 *   answer. The wait for a pool connection is not in it, as SQLite's wait for the write lock
 *   is not.
 * - `busyRetries`: attempts run again because PostgreSQL aborted them as a deadlock victim or a
 *   serialization failure. Here writers that want the same rows queue inside the database, on
 *   row locks, and are never put back; an abort-and-retry is the one way contention makes a
 *   write start over, which is what SQLite's counter counts.
 * - `busyTimeouts`: calls that failed "busy" (UNAVAILABLE STORAGE_BUSY): a row lock held past
 *   lock_timeout or no pool connection within the acquire timeout. Counted by the engine, where
 *   every repository call's failure is translated (engine.ts).
 */
export type WriteCounters = { -readonly [K in keyof StorageStats]: StorageStats[K] };

const counters = new WeakMap<PgDb, WriteCounters>();

/** The counters of `db` (made on first use: repositories opened by a test count too). */
export function writeCountersOf(db: PgDb): WriteCounters {
  let c = counters.get(db);
  if (c === undefined) {
    c = { transactions: 0, transactionSeconds: 0, busyRetries: 0, busyTimeouts: 0 };
    counters.set(db, c);
  }
  return c;
}

/** Runs `fn` in one transaction, again on a retryable abort; storage failures come out mapped. */
export async function writeTransaction<T>(db: PgDb, fn: (tx: Tx) => Promise<T>): Promise<T> {
  const count = writeCountersOf(db);
  for (let attempt = 1; ; attempt++) {
    // Set once drizzle has sent BEGIN and hands over the transaction; unset if it never got there.
    let begunAt: number | undefined;
    try {
      const value = await db.transaction(
        (tx) => {
          begunAt = performance.now();
          return fn(tx);
        },
        { isolationLevel: "read committed" },
      );
      countTransaction(count, begunAt);
      return value;
    } catch (err) {
      countTransaction(count, begunAt);
      const mapped = mapPostgresError(err);
      if (mapped?.retryable && attempt < MAX_TRANSACTION_ATTEMPTS) {
        count.busyRetries++;
        continue;
      }
      throw mapped ?? err;
    }
  }
}

function countTransaction(count: WriteCounters, begunAt: number | undefined): void {
  if (begunAt === undefined) return;
  count.transactions++;
  count.transactionSeconds += (performance.now() - begunAt) / 1000;
}

/**
 * Runs `fn` in one read-only REPEATABLE READ transaction, so that the statements of a read made
 * of several (a summary, a page and its rows' children) see one snapshot, as SQLite's reads
 * made in one turn of the event loop do. Read-only, it is never aborted for a conflict.
 */
export async function readSnapshot<T>(db: PgDb, fn: (tx: Tx) => Promise<T>): Promise<T> {
  try {
    return await db.transaction(fn, { isolationLevel: "repeatable read", accessMode: "read only" });
  } catch (err) {
    throw mapPostgresError(err) ?? err;
  }
}
