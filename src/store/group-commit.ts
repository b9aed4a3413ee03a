/**
 * Group commit: the API's write transactions that arrive together share one
 * `BEGIN IMMEDIATE … COMMIT`, so one fsync makes N requests durable instead of one.
 *
 * Why: with `synchronous=FULL` every COMMIT waits for an fsync of the WAL, and the event loop
 * waits with it (better-sqlite3 is synchronous). CreateGroup managed 339–1 021 writes/s on
 * the bench's shared disk, idle 75 % of the time (docs/performance.md); issue 8 asks for
 * 2 500/s. While one commit blocks the loop, the next requests pile up in the sockets; they
 * are all parsed and authorized in the following turn of the loop and now commit together.
 *
 * What stays exactly as before, for each request:
 * - its check-then-write runs whole, under the write lock, after the writes queued before it
 *   (the batch runs them one after another, each seeing the ones before — the same order and
 *   the same result as separate transactions in that order);
 * - a request whose work fails (a precondition, a constraint) is rolled back to a savepoint
 *   taken just before it, so it changes nothing and the others in the batch are unaffected;
 * - its promise settles only after the COMMIT returned: a success is durable before it is
 *   reported. If the COMMIT fails, or SQLite abandons the whole transaction (SQLITE_FULL,
 *   SQLITE_IOERR may do that mid-batch), every request whose work was lost gets that error
 *   (UNAVAILABLE "nothing was changed", src/errors/to-connect-error.ts), which is true.
 * Nothing is delayed on purpose: the batch is flushed by `setImmediate`, right after the I/O
 * callbacks of the current turn, so a lone request commits as soon as it would have.
 *
 * `fn` must be synchronous (like writeTransaction's) and must not start its own transaction.
 * Start-up writes that need the result synchronously keep using `writeTransaction` (db.ts).
 */
import type { Db } from "./db.js";

interface Job {
  readonly fn: (tx: Db) => unknown;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
}

interface Queue {
  jobs: Job[];
  scheduled: boolean;
}

/**
 * The most requests one transaction carries: bounds how long the write lock is held and the
 * loop is blocked by one flush (the rest go in the next one, scheduled at once).
 */
export const MAX_BATCH = 256;

const queues = new WeakMap<Db, Queue>();

/** Runs `fn` in a write transaction shared with the other writes queued in this turn. */
export function groupCommit<T>(db: Db, fn: (tx: Db) => T): Promise<T> {
  let queue = queues.get(db);
  if (!queue) {
    queue = { jobs: [], scheduled: false };
    queues.set(db, queue);
  }
  const q = queue;
  return new Promise<T>((resolve, reject) => {
    q.jobs.push({ fn, resolve: resolve as (value: unknown) => void, reject });
    if (!q.scheduled) {
      q.scheduled = true;
      setImmediate(() => flush(db, q));
    }
  });
}

/** Commits whatever is queued now (the database's close() calls it before closing). */
export function flushGroupCommit(db: Db): void {
  const q = queues.get(db);
  while (q && q.jobs.length > 0) runBatch(db, q.jobs.splice(0, MAX_BATCH));
}

function flush(db: Db, q: Queue): void {
  q.scheduled = false;
  const jobs = q.jobs.splice(0, MAX_BATCH);
  if (q.jobs.length > 0) {
    q.scheduled = true;
    setImmediate(() => flush(db, q));
  }
  if (jobs.length > 0) runBatch(db, jobs);
}

function runBatch(db: Db, jobs: readonly Job[]): void {
  const sqlite = db.$client;
  if (!sqlite.open) {
    const closed = new Error("the database is closed (the server is shutting down)");
    for (const job of jobs) job.reject(closed);
    return;
  }
  /** Jobs whose work is in the open transaction, waiting for its COMMIT. */
  let pending: { job: Job; value: unknown }[] = [];
  const loseTransaction = (error: unknown) => {
    for (const p of pending) p.job.reject(error);
    pending = [];
  };

  for (let i = 0; i < jobs.length; i++) {
    const job = jobs[i] as Job;
    if (!sqlite.inTransaction) {
      try {
        sqlite.exec("BEGIN IMMEDIATE");
      } catch (error) {
        // Typically SQLITE_BUSY: another connection holds the write lock past the busy timeout.
        for (const rest of jobs.slice(i)) rest.reject(error);
        return;
      }
    }
    try {
      sqlite.exec("SAVEPOINT group_commit_job");
    } catch (error) {
      // Cannot isolate this job (out of memory, say): give up the whole transaction rather
      // than throw out of a setImmediate callback.
      job.reject(error);
      rollback(sqlite);
      loseTransaction(error);
      continue;
    }
    try {
      const value = job.fn(db);
      sqlite.exec("RELEASE group_commit_job");
      pending.push({ job, value });
    } catch (error) {
      job.reject(error);
      if (!undoJob(sqlite)) {
        // SQLite rolled the whole transaction back (or could not undo just this job): the
        // earlier jobs' work is gone too.
        loseTransaction(error);
      }
    }
  }

  if (!sqlite.inTransaction) return;
  try {
    sqlite.exec("COMMIT");
  } catch (error) {
    rollback(sqlite);
    loseTransaction(error);
    return;
  }
  for (const p of pending) p.job.resolve(p.value);
}

/**
 * Undoes the failed job's writes, keeping the earlier jobs' ones. False when the transaction
 * is gone (SQLite abandoned it, or the undo itself failed and we rolled everything back).
 */
function undoJob(sqlite: Db["$client"]): boolean {
  if (!sqlite.inTransaction) return false;
  try {
    sqlite.exec("ROLLBACK TO group_commit_job");
    sqlite.exec("RELEASE group_commit_job");
    return true;
  } catch {
    rollback(sqlite);
    return false;
  }
}

/** Ends the transaction without keeping anything; never throws (a failed ROLLBACK leaves
 * SQLite to roll back on its own, as it does when the connection next writes). */
function rollback(sqlite: Db["$client"]): void {
  try {
    if (sqlite.inTransaction) sqlite.exec("ROLLBACK");
  } catch {
    // nothing more to do here; the callers report the original error
  }
}
