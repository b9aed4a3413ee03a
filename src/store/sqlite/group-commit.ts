/**
 * Group commit: the API's write transactions that arrive together share one
 * `BEGIN IMMEDIATE … COMMIT`, so one fsync makes N requests durable instead of one.
 *
 * Why: with `synchronous=FULL` every COMMIT waits for an fsync of the WAL, and the event loop
 * waits with it (better-sqlite3 is synchronous), so one fsync per write left CreateGroup far
 * below its goal and the server mostly idle (docs/performance.md). While one commit blocks the loop, the next requests pile up in the sockets; they
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
 * Waiting for the write lock never blocks the event loop. The server's connection has a busy
 * timeout of 0 (`waitForWriteLockAsync`): better-sqlite3's busy wait sleeps on the loop, so six
 * writes each waiting 1 s for `trellis import` held every read for 6 s. When BEGIN IMMEDIATE
 * finds the lock taken, the batch goes back to the head of the queue and is retried on a timer
 * (2 ms, doubling to at most 50 ms apart, so the importer's 110 ms pauses are never missed)
 * while reads go on. A write still waiting `busyWaitMs` after it was queued fails with that
 * SQLITE_BUSY (UNAVAILABLE STORAGE_BUSY, nothing written); writes queued behind it keep their
 * order and their own bound.
 *
 * The outcome of every batch says whether the database can be written now (`storageWritable`,
 * read by the health service): a COMMIT that succeeds says yes; a storage failure (busy past
 * the bound, disk full, I/O error, read-only) says no. When no write came for a while, the
 * server writes a probe (`probeStorage`) so the answer stays current.
 *
 * `fn` must be synchronous (like writeTransaction's) and must not start its own transaction.
 * Start-up writes that need the result synchronously keep using `writeTransaction` (db.ts).
 */
import { isUnwritableFailure } from "../../errors/storage-error.js";
import { BUSY_TIMEOUT_MS, type Db } from "./db.js";
import { sqliteFailureKind } from "./errors.js";

interface Job {
  readonly fn: (tx: Db) => unknown;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
  /** performance.now() when it was queued: its wait for the lock is bounded from here. */
  readonly queuedAt: number;
}

interface Queue {
  jobs: Job[];
  scheduled: boolean;
  /** A retry of the head batch is scheduled (the lock was taken): no other flush runs meanwhile. */
  waitingForLock: boolean;
  /** The next retry's delay (ms) while the lock stays taken. */
  retryDelayMs: number;
  busyWaitMs: number;
  /** Whether the last write (or probe) reached the disk; see storageWritable. */
  writable: boolean;
  /** The storage error that made it unwritable, for the log and the health service. */
  lastStorageError: unknown;
  /** performance.now() of the last outcome noted (a commit or a storage failure). */
  lastOutcomeAt: number;
}

/** Where a write stands after the lock was refused: first retry after this many ms, doubling. */
const FIRST_RETRY_MS = 2;
/** Retries are at most this far apart (below the importer's YIELD_MS pause, src/import). */
const MAX_RETRY_MS = 50;

/**
 * The most requests one transaction carries: bounds how long the write lock is held and the
 * loop is blocked by one flush (the rest go in the next one, scheduled at once).
 */
export const MAX_BATCH = 256;

const queues = new WeakMap<Db, Queue>();

/**
 * Process-wide counters of the write path, for the metrics endpoint to read when scraped
 * (plain numbers: nothing on the write path beyond an addition).
 * `transactions`/`transactionSeconds`: write transactions that reached COMMIT or failed, and
 * the time from BEGIN to their end; `busyRetries`: batches put back because another
 * connection held the write lock; `busyTimeouts`: writes failed because it held it too long.
 */
export const storageStats = { transactions: 0, transactionSeconds: 0, busyRetries: 0, busyTimeouts: 0 };

function queueOf(db: Db): Queue {
  let q = queues.get(db);
  if (!q) {
    q = {
      jobs: [],
      scheduled: false,
      waitingForLock: false,
      retryDelayMs: FIRST_RETRY_MS,
      busyWaitMs: BUSY_TIMEOUT_MS,
      writable: true,
      lastStorageError: undefined,
      lastOutcomeAt: performance.now(),
    };
    queues.set(db, q);
  }
  return q;
}

/**
 * Makes the connection's writes wait for another connection's write lock without blocking
 * the event loop: SQLite's own busy wait is turned off (busy_timeout 0) and group commit
 * retries on a timer for up to `busyWaitMs` per write. The server calls this once its
 * start-up writes (synchronous, before it listens) are done; reads never wait for the lock
 * in WAL mode.
 */
export function waitForWriteLockAsync(db: Db, busyWaitMs: number = BUSY_TIMEOUT_MS): void {
  db.$client.pragma("busy_timeout = 0");
  queueOf(db).busyWaitMs = busyWaitMs;
}

/** False while the database cannot be written (the last write or probe failed for storage reasons). */
export function storageWritable(db: Db): boolean {
  return queueOf(db).writable;
}

/** Runs `fn` in a write transaction shared with the other writes queued in this turn. */
export function groupCommit<T>(db: Db, fn: (tx: Db) => T): Promise<T> {
  const q = queueOf(db);
  return new Promise<T>((resolve, reject) => {
    q.jobs.push({ fn, resolve: resolve as (value: unknown) => void, reject, queuedAt: performance.now() });
    if (!q.scheduled && !q.waitingForLock) {
      q.scheduled = true;
      setImmediate(() => flush(db, q));
    }
  });
}

/**
 * SQLite errors that say the database cannot be written right now, whatever the request
 * (busy past the bound, full, I/O, read-only: the kinds src/errors/to-connect-error.ts
 * answers with UNAVAILABLE).
 */
export function isStorageFailure(error: unknown): boolean {
  return isUnwritableFailure(sqliteFailureKind(error));
}

function noteOutcome(q: Queue, error?: unknown): void {
  if (error === undefined) {
    q.writable = true;
    q.lastStorageError = undefined;
    q.lastOutcomeAt = performance.now();
  } else if (isStorageFailure(error)) {
    q.writable = false;
    q.lastStorageError = error;
    q.lastOutcomeAt = performance.now();
  }
}

/** How long ago (ms) a write last reached the disk or failed for storage reasons. */
export function msSinceLastWriteOutcome(db: Db): number {
  return performance.now() - queueOf(db).lastOutcomeAt;
}

/**
 * Writes one page through the normal write path (lock wait, WAL append, fsync at COMMIT), so
 * its outcome updates `storageWritable` like any write: a full disk, a read-only file system
 * or a lock held too long makes it fail, and a success after such a failure says the
 * database can be written again. It rewrites `user_version` with its own value: a real write
 * of the header page that changes nothing and needs no table of its own (the schema does not
 * use user_version; drizzle keeps its own table).
 */
export function probeStorage(db: Db): Promise<void> {
  return groupCommit(db, (tx) => {
    const sqlite = tx.$client;
    const version = Number(sqlite.pragma("user_version", { simple: true }));
    sqlite.pragma(`user_version = ${version}`);
  });
}

/**
 * Commits whatever is queued now (the database's close() calls it before closing). A write
 * that still finds the lock taken fails at once: the server is going away.
 */
export function flushGroupCommit(db: Db): void {
  const q = queues.get(db);
  while (q && q.jobs.length > 0) {
    const refused = runBatch(db, q, q.jobs.splice(0, MAX_BATCH));
    for (const { job, error } of refused) job.reject(error);
  }
}

function flush(db: Db, q: Queue): void {
  q.scheduled = false;
  q.waitingForLock = false;
  const jobs = q.jobs.splice(0, MAX_BATCH);
  const refused = jobs.length > 0 ? runBatch(db, q, jobs) : [];
  if (refused.length > 0) {
    // The lock is taken: writes past their bound fail now, the others wait at the head of the
    // queue (in their order) for a retry on a timer; reads go on meanwhile.
    const now = performance.now();
    const waiting = refused.filter(({ job, error }) => {
      if (now - job.queuedAt < q.busyWaitMs) return true;
      storageStats.busyTimeouts++;
      noteOutcome(q, error);
      job.reject(error);
      return false;
    });
    q.jobs.unshift(...waiting.map((r) => r.job));
    if (waiting.length > 0) {
      storageStats.busyRetries++;
      q.waitingForLock = true;
      const delay = q.retryDelayMs;
      q.retryDelayMs = Math.min(delay * 2, MAX_RETRY_MS);
      setTimeout(() => flush(db, q), delay);
      return;
    }
  }
  q.retryDelayMs = FIRST_RETRY_MS;
  if (q.jobs.length > 0 && !q.scheduled) {
    q.scheduled = true;
    setImmediate(() => flush(db, q));
  }
}

/**
 * Runs `jobs` in one transaction. Returns the jobs that could not start because another
 * connection holds the write lock (SQLITE_BUSY at BEGIN) with that error; they did nothing,
 * and the caller decides whether they wait or fail. Every other job is settled here.
 */
function runBatch(db: Db, q: Queue, jobs: readonly Job[]): { job: Job; error: unknown }[] {
  const sqlite = db.$client;
  if (!sqlite.open) {
    const closed = new Error("the database is closed (the server is shutting down)");
    for (const job of jobs) job.reject(closed);
    return [];
  }
  const startedAt = performance.now();
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
        const code = (error as { code?: unknown }).code;
        if (typeof code === "string" && code.startsWith("SQLITE_BUSY")) {
          // Another connection holds the write lock: these jobs have not run; let them wait.
          return jobs.slice(i).map((job) => ({ job, error }));
        }
        noteOutcome(q, error);
        for (const rest of jobs.slice(i)) rest.reject(error);
        return [];
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
      noteOutcome(q, error); // a constraint or precondition says nothing; SQLITE_FULL does
      job.reject(error);
      if (!undoJob(sqlite)) {
        // SQLite rolled the whole transaction back (or could not undo just this job): the
        // earlier jobs' work is gone too.
        loseTransaction(error);
      }
    }
  }

  if (!sqlite.inTransaction) return [];
  try {
    sqlite.exec("COMMIT");
  } catch (error) {
    noteOutcome(q, error);
    rollback(sqlite);
    loseTransaction(error);
    countTransaction(startedAt);
    return [];
  }
  countTransaction(startedAt);
  noteOutcome(q);
  for (const p of pending) p.job.resolve(p.value);
  return [];
}

function countTransaction(startedAt: number): void {
  storageStats.transactions++;
  storageStats.transactionSeconds += (performance.now() - startedAt) / 1000;
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
