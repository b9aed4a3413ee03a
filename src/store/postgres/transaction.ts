/**
 * Write transactions on PostgreSQL: READ COMMITTED with explicit row locks on the rows an
 * invariant depends on (each repository says which), run again when PostgreSQL aborts one
 * as a deadlock victim or a serialization failure. Those aborts roll everything back and say
 * "try again"; a bounded number of attempts turns a rare collision into a success, and a
 * lasting one into a `conflict` error (ABORTED for the caller) rather than a loop.
 */
import type { PgDb } from "./connection.js";
import { mapPostgresError } from "./errors.js";

export type Tx = Parameters<Parameters<PgDb["transaction"]>[0]>[0];

/** Attempts of one write transaction before its conflict is reported. */
export const MAX_TRANSACTION_ATTEMPTS = 3;

/** Runs `fn` in one transaction, again on a retryable abort; storage failures come out mapped. */
export async function writeTransaction<T>(db: PgDb, fn: (tx: Tx) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await db.transaction(fn, { isolationLevel: "read committed" });
    } catch (err) {
      const mapped = mapPostgresError(err);
      if (mapped?.retryable && attempt < MAX_TRANSACTION_ATTEMPTS) continue;
      throw mapped ?? err;
    }
  }
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
