/**
 * Server values other processes may change while this one runs (signing keys, page-token
 * keys, the token-revocation list, all rows of server_keys), read on the hot path without a
 * query per call.
 *
 * A value is re-read only when the database may have changed (databaseChangeCheck below):
 * when nothing moved, the remembered value is returned; when something did, one primary-key
 * select per watched row, and the value is parsed again only if its bytes differ. So a
 * rotation or a revocation made anywhere on the file is seen on the next call, with no timer
 * and no restart.
 */
import type { Db } from "./db.js";

export interface SharedValues {
  /**
   * A reader of rows `names` of server_keys turned into T by `parse` (given each row's value,
   * undefined when absent); the parsed value is remembered until one row's bytes change.
   */
  watch<T>(names: readonly string[], parse: (values: readonly (Buffer | undefined)[]) => T): () => T;
}

const perDatabase = new WeakMap<Db, SharedValues>();

/** The one watcher of a database connection (shared by auth and the page-token codec). */
export function sharedValuesFor(db: Db): SharedValues {
  let values = perDatabase.get(db);
  if (!values) {
    values = createSharedValues(db);
    perDatabase.set(db, values);
  }
  return values;
}

function sameBytes(a: Buffer | undefined, b: Buffer | undefined): boolean {
  return a === undefined || b === undefined ? a === b : a.equals(b);
}

/**
 * A number that moves whenever the database may have changed since it was last asked, for
 * caches that must never serve a value older than the database (this watcher, the count
 * cache). Two sources of change:
 * - this connection's own writes: `total_changes()` moves with every row it inserts, updates
 *   or deletes (a rolled-back write moves it too, which only costs a re-read). It is asked on
 *   every check, since it is cheap (a SELECT without a table takes no lock) and exact, also for writes outside the group-commit writer;
 * - every other connection's commits (`trellis keys rotate`, `tokens revoke --local`, a
 *   second server on the same file): `PRAGMA data_version`. That one is the cost (it opens
 *   a read transaction, taking the WAL read lock; docs/performance.md), so it is
 *   asked at most once per turn of the event loop and remembered until the turn's check
 *   phase (a setImmediate).
 * What that means for "the next call": a change another process commits is seen by every
 * call whose request arrives after the end of the event-loop turn in which the change was
 * committed (the turn's check phase forgets the value), and in practice by the next call at
 * all: a request sent after the commit is read by the poll phase of a turn, and the value is
 * only stale for it if another callback read it earlier in that same turn and before the
 * commit (a timer, or the check phase of the turn before: then it is kept one more turn).
 * The window is one turn of the loop (microseconds idle, a few milliseconds when saturated),
 * where asking on every call was a measurable share of every call; under load the requests
 * of one poll batch share one read.
 */
export type ChangeCheck = () => number;

const changeChecks = new WeakMap<Db, ChangeCheck>();

/** The one change check of a database connection. */
export function databaseChangeCheck(db: Db): ChangeCheck {
  let check = changeChecks.get(db);
  if (!check) {
    check = createChangeCheck(db);
    changeChecks.set(db, check);
  }
  return check;
}

function createChangeCheck(db: Db): ChangeCheck {
  const changesStmt = db.$client.prepare("SELECT total_changes()").pluck();
  const dataVersionStmt = db.$client.prepare("PRAGMA data_version").pluck();
  // data_version as read in this turn; undefined until asked in it.
  let othersThisTurn: number | undefined;
  const forgetAtTurnEnd = () => {
    othersThisTurn = undefined;
  };
  let own = -1;
  let others = -1;
  let generation = 0;
  return () => {
    const ownNow = changesStmt.get() as number;
    if (othersThisTurn === undefined) {
      othersThisTurn = dataVersionStmt.get() as number;
      setImmediate(forgetAtTurnEnd);
    }
    if (ownNow !== own || othersThisTurn !== others) {
      own = ownNow;
      others = othersThisTurn;
      generation++;
    }
    return generation;
  };
}

function createSharedValues(db: Db): SharedValues {
  const rowStmt = db.$client.prepare("SELECT value FROM server_keys WHERE name = ?").pluck();
  const currentGeneration = databaseChangeCheck(db);
  return {
    watch<T>(names: readonly string[], parse: (values: readonly (Buffer | undefined)[]) => T) {
      let seenGeneration = -1;
      let bytes: (Buffer | undefined)[] | undefined;
      let parsed: T | undefined;
      return () => {
        const g = currentGeneration();
        if (g !== seenGeneration) {
          seenGeneration = g;
          const next = names.map((name) => rowStmt.get(name) as Buffer | undefined);
          if (bytes === undefined || next.some((value, i) => !sameBytes(value, bytes?.[i]))) {
            parsed = parse(next);
            bytes = next;
          }
        }
        return parsed as T;
      };
    },
  };
}
