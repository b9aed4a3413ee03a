/**
 * Server values other processes may change while this one runs (signing keys, page-token
 * keys, the token-revocation list, all rows of server_keys), read on the hot path without a
 * query per call.
 *
 * Like the count cache (count-cache.ts), a value is re-read only when the database may have
 * changed: `total_changes()` moves with this connection's writes and `PRAGMA data_version`
 * with every other connection's commits (`trellis keys rotate`, a second server on the same
 * file). When neither moved, the remembered value is returned (~3.5 µs, the two statements);
 * when one did, one primary-key select per watched row, and the value is parsed again only
 * if its bytes differ. So a rotation or a revocation made anywhere on the file is seen on the
 * next call, with no timer and no restart.
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

function createSharedValues(db: Db): SharedValues {
  const changesStmt = db.$client.prepare("SELECT total_changes()").pluck();
  const dataVersionStmt = db.$client.prepare("PRAGMA data_version").pluck();
  const rowStmt = db.$client.prepare("SELECT value FROM server_keys WHERE name = ?").pluck();
  // Bumped whenever the database may have changed; each watcher compares it with its own.
  let generation = 0;
  let version = "";
  const currentGeneration = () => {
    const now = `${changesStmt.get() as number}:${dataVersionStmt.get() as number}`;
    if (now !== version) {
      version = now;
      generation++;
    }
    return generation;
  };
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
