/**
 * Point reads batched per event-loop turn: every read by key that is asked for in one turn
 * goes to PostgreSQL as ONE query (`… WHERE key = ANY($1)`), sent when the turn's I/O has been
 * handled (setImmediate), and each caller gets the rows of its own key.
 *
 * Why: on PostgreSQL a GetGroup's cost in the Trellis process is the round trip, not the row
 * (docs/performance.md, "On PostgreSQL"): a pool check-out and release, a `writev` of the
 * query, a wake-up of its own for the reply and the parse of it, per call. Under load the calls
 * of one turn are many (a whole poll phase's worth of requests, released together by the
 * shared catch-up check that starts every call), and one query for all of them pays that
 * once.
 *
 * Exact, not a cache: a read is sent after the call that asked for it arrived (later in the
 * same turn, never earlier), so the query sees every commit made before that call arrived,
 * as a query of its own would. Nothing is kept once a batch has answered.
 *
 * Its price for a call that comes alone: the query waits for the check phase of the turn it
 * was asked in (one setImmediate, no timer), which is where the turn would have gone next
 * anyway when nothing else is pending.
 *
 * Rules for the callers:
 * - Only reads outside a transaction. A read inside a write transaction must see what that
 *   transaction wrote and hold its locks; those go through the transaction's own client.
 * - A key is read once per batch however many callers ask for it; they share the rows, which
 *   they must treat as read-only (the record types are readonly).
 * - A failed query fails every caller of its batch with that same error; the engine maps it
 *   for each call as it maps any repository failure (engine.ts), so every waiter gets the
 *   code a read of its own would have got (UNAVAILABLE for a lost connection).
 * - Only keys PostgreSQL takes: a key it refuses (a NUL in text) would fail the whole batch,
 *   so one caller's bad input would fail the others' calls of that turn. The callers keep such
 *   keys out (no row can have one), besides GetGroup validating its uid and authorization
 *   reading grants only for a UIDP subject.
 * - At most `maxKeys` distinct keys per query (a query's parameter stays small and its plan
 *   an index lookup per key): the key past the cap starts the next batch of the same turn.
 */

/** The default cap on distinct keys per query. */
export const DEFAULT_MAX_BATCH_KEYS = 500;

export interface PointReadsOptions<Row> {
  /** Reads every row of these distinct keys (one query); rows of keys that have none are simply absent. */
  readonly read: (keys: string[]) => Promise<readonly Row[]>;
  /** The key a row answers for. */
  readonly keyOf: (row: Row) => string;
  /** Distinct keys per query at most (default DEFAULT_MAX_BATCH_KEYS). */
  readonly maxKeys?: number;
}

/** Reads the rows of `key`, batched with every other read of the same turn (see the header). */
export type PointReader<Row> = (key: string) => Promise<readonly Row[]>;

interface Waiter<Row> {
  resolve(rows: readonly Row[]): void;
  reject(err: unknown): void;
}

const NO_ROWS: readonly never[] = Object.freeze([]);

export function createPointReads<Row>(options: PointReadsOptions<Row>): PointReader<Row> {
  const maxKeys = options.maxKeys ?? DEFAULT_MAX_BATCH_KEYS;
  if (!Number.isInteger(maxKeys) || maxKeys < 1) throw new Error(`a batch holds at least one key, got ${maxKeys}`);
  const { read, keyOf } = options;

  // The batch being collected: its callers by key. A new Map per batch, handed whole to its flush.
  let pending: Map<string, Waiter<Row>[]> | undefined;

  const flush = (batch: Map<string, Waiter<Row>[]>) => {
    if (pending === batch) pending = undefined;
    let query: Promise<readonly Row[]>;
    try {
      query = read([...batch.keys()]);
    } catch (err) {
      // A read that throws before it has a promise fails its batch like one that rejects.
      query = Promise.reject(err);
    }
    const failAll = (err: unknown) => {
      for (const waiters of batch.values()) for (const w of waiters) w.reject(err);
    };
    query.then((rows) => {
      let byKey: Map<string, Row[]>;
      try {
        byKey = new Map();
        for (const row of rows) {
          const key = keyOf(row);
          const found = byKey.get(key);
          if (found) found.push(row);
          else byKey.set(key, [row]);
        }
      } catch (err) {
        // Nothing may escape as an unhandled rejection (it would end the process): a batch
        // whose rows cannot be sorted fails its callers instead.
        failAll(err);
        return;
      }
      for (const [key, waiters] of batch) {
        const found = byKey.get(key) ?? NO_ROWS;
        for (const w of waiters) w.resolve(found);
      }
    }, failAll);
  };

  return (key) =>
    new Promise<readonly Row[]>((resolve, reject) => {
      let batch = pending;
      if (batch === undefined) {
        batch = new Map();
        pending = batch;
        const scheduled = batch;
        setImmediate(() => {
          // Already sent when it filled up to the cap.
          if (pending === scheduled) flush(scheduled);
        });
      }
      const waiters = batch.get(key);
      if (waiters) {
        waiters.push({ resolve, reject });
        return;
      }
      batch.set(key, [{ resolve, reject }]);
      // Full: sent now; the next key of this turn starts a batch of its own.
      if (batch.size >= maxKeys) flush(batch);
    });
}
