/**
 * Server values (rows of server_keys: signing keys, page-token keys, the revocation list, the
 * issuer settings) on PostgreSQL, shared by every replica on the database.
 *
 * update: one READ COMMITTED transaction that locks every named row before `change` sees it.
 * A row that does not exist yet cannot be locked by SELECT … FOR UPDATE (there is nothing to
 * lock), so two replicas starting together would both see "absent" and both insert. Hence, per
 * name and in one fixed order (sorted, so two updates never wait for each other crosswise):
 * INSERT … ON CONFLICT DO NOTHING of a placeholder row, then SELECT … FOR UPDATE. The second
 * replica's INSERT waits for the first one's transaction; once it commits, the SELECT sees the
 * committed row and `change` decides on it, so both agree on one result. A placeholder this
 * transaction inserted means "absent" to `change`, and is deleted again before commit unless
 * `change` stores a value there, so no other transaction ever sees one.
 *
 * watch: the StoreEngine contract makes it synchronous (it sits on every call's hot path), and a
 * PostgreSQL read cannot be. So each replica keeps every row of server_keys in memory (a handful
 * of small rows), loaded once at open (`start`), written through by this replica's own updates
 * after they commit, and refreshed from the database when another replica changes a row:
 * - every update that changes a row sends `NOTIFY trellis_server_values` in its transaction
 *   (PostgreSQL delivers it at commit, never for a rolled-back change), with the changed names;
 * - each replica LISTENs on a connection of its own and re-reads the named rows when told.
 *   That connection is re-opened when it drops, and everything is re-read then (notifications
 *   sent while it was down are lost); a re-read that fails is tried again until it succeeds.
 * So another replica's change is seen once its notification has arrived (the time of a round
 * trip after the commit), not strictly by the next call. A caller that needs "by the next call"
 * awaits `refresh()` (one query) before the call reads its watchers; the engine does not do it
 * on its own, since it costs a query per call.
 */
import { eq, inArray, sql } from "drizzle-orm";
import pg from "pg";
import type { ServerValues, ServerValuesChange } from "../engine.js";
import type { PgDb } from "./connection.js";
import { serverKeys } from "./schema.js";
import { type Tx, writeTransaction } from "./transaction.js";

/** The channel every replica listens on for changed server values. */
export const SERVER_VALUES_CHANNEL = "trellis_server_values";

/** How long to wait before opening the listening connection again after it dropped. */
const RELISTEN_DELAY_MS = 1000;

export interface PostgresServerValues extends ServerValues {
  /** Loads every row and starts listening for other replicas' changes. Awaited once, at open. */
  start(): Promise<void>;
  /** Re-reads every row now (one query); watchers see the result on their next call. */
  refresh(): Promise<void>;
  /** Stops listening. */
  close(): Promise<void>;
  /**
   * Runs `work` in one write transaction (transaction.ts) with an `update` that changes server
   * values as `ServerValues.update` does, inside that transaction: for a write that changes a
   * value together with rows of its own, all or nothing (a revocation deletes the subject's
   * refresh tokens). This replica's watchers see the values once it committed.
   */
  transaction<T>(work: (tx: Tx, update: ValuesUpdate) => Promise<T>): Promise<T>;
}

/** ServerValues.update inside a transaction (PostgresServerValues.transaction). */
export type ValuesUpdate = (names: readonly string[], now: number, change: ServerValuesChange) => Promise<(Buffer | undefined)[]>;

export interface PostgresServerValuesOptions {
  /** The database URL, for the listening connection (a connection of its own, outside the pool). */
  readonly url: string;
  /** Told when the listening connection fails (it is opened again after a second). */
  readonly onListenError?: (err: Error) => void;
}

/**
 * Applies `change` to the values under `names` inside `tx` (see the header for the locks);
 * resolves to the values afterwards, by name. Announces the names whose value changed.
 */
async function updateIn(tx: Tx, names: readonly string[], now: number, change: ServerValuesChange): Promise<Map<string, Buffer | undefined>> {
  const current = new Map<string, { value: Buffer; createTime: number; placeholder: boolean }>();
  for (const name of [...new Set(names)].sort()) {
    const inserted = await tx
      .insert(serverKeys)
      .values({ name, value: Buffer.alloc(0), createTime: now })
      .onConflictDoNothing()
      .returning({ name: serverKeys.name });
    const [row] = await tx.select().from(serverKeys).where(eq(serverKeys.name, name)).for("update");
    if (row) current.set(name, { value: row.value, createTime: row.createTime, placeholder: inserted.length > 0 });
  }
  const visible = (name: string) => {
    const row = current.get(name);
    return row && !row.placeholder ? row : undefined;
  };
  const next = change(
    names.map((n) => visible(n)?.value),
    names.map((n) => visible(n)?.createTime),
  );
  const result = new Map<string, Buffer | undefined>();
  const changed = new Set<string>();
  names.forEach((name, i) => {
    const value = next?.[i];
    if (value === undefined) {
      if (!result.has(name)) result.set(name, visible(name)?.value);
      return;
    }
    result.set(name, value === null ? undefined : value);
    changed.add(name);
  });
  for (const [name, row] of current) {
    const value = result.get(name);
    if (value === undefined) {
      await tx.delete(serverKeys).where(eq(serverKeys.name, name));
    } else if (row.placeholder || changed.has(name)) {
      await tx.update(serverKeys).set({ value }).where(eq(serverKeys.name, name));
    }
  }
  // Only names whose stored row really changed are announced.
  const announced = [...changed].filter((n) => !sameBytes(visible(n)?.value, result.get(n)));
  if (announced.length > 0) await tx.execute(sql`SELECT pg_notify(${SERVER_VALUES_CHANNEL}, ${JSON.stringify(announced)})`);
  return result;
}

function sameBytes(a: Buffer | undefined, b: Buffer | undefined): boolean {
  return a === undefined || b === undefined ? a === b : a.equals(b);
}

export function createPostgresServerValues(db: PgDb, options: PostgresServerValuesOptions): PostgresServerValues {
  /** name → value, as last read or written by this replica. */
  const cache = new Map<string, Buffer>();
  /** Moves whenever the cache changes: a watcher re-reads the cache only then. */
  let generation = 0;
  /**
   * Writes to the cache are ordered by this counter: a refresh whose read began before this
   * replica's own update committed must not put back the value that update replaced.
   */
  let writeClock = 0;
  const writtenAt = new Map<string, number>();

  const apply = (name: string, value: Buffer | undefined, readStartedAt: number | undefined) => {
    if (readStartedAt !== undefined && (writtenAt.get(name) ?? -1) > readStartedAt) return;
    if (readStartedAt === undefined) writtenAt.set(name, ++writeClock);
    if (sameBytes(cache.get(name), value)) return;
    if (value === undefined) cache.delete(name);
    else cache.set(name, value);
    generation++;
  };

  /** Reads `names` (every row when undefined) from the database into the cache. */
  const readIntoCache = async (names: readonly string[] | undefined) => {
    const startedAt = writeClock;
    const rows = await (names === undefined
      ? db.select({ name: serverKeys.name, value: serverKeys.value }).from(serverKeys)
      : db
          .select({ name: serverKeys.name, value: serverKeys.value })
          .from(serverKeys)
          .where(inArray(serverKeys.name, [...names])));
    const found = new Map(rows.map((r) => [r.name, r.value]));
    for (const name of names ?? new Set([...cache.keys(), ...found.keys()])) apply(name, found.get(name), startedAt);
  };

  // Refreshes run one at a time, in order; a request while one runs is merged into the next.
  let running: Promise<void> | undefined;
  let pending: Set<string> | "all" | undefined;
  const requestRefresh = (names: readonly string[] | "all"): Promise<void> => {
    if (pending === undefined) pending = names === "all" ? "all" : new Set(names);
    else if (pending !== "all") {
      if (names === "all") pending = "all";
      else for (const n of names) pending.add(n);
    }
    if (!running) {
      running = (async () => {
        try {
          while (pending !== undefined) {
            const next = pending;
            pending = undefined;
            await readIntoCache(next === "all" ? undefined : [...next]);
          }
        } finally {
          running = undefined;
        }
      })();
    }
    return running;
  };

  let listener: pg.Client | undefined;
  let relistenTimer: NodeJS.Timeout | undefined;
  let retryTimer: NodeJS.Timeout | undefined;
  let closed = false;

  /**
   * A refresh that a notification asked for must not be lost when its read fails (a full pool,
   * a restarting server): the notification will not come again, so everything is read again a
   * second later, until a read succeeds.
   */
  const refreshUntilDone = (names: readonly string[] | "all") => {
    requestRefresh(names).catch((err: Error) => {
      options.onListenError?.(err);
      if (closed || retryTimer) return;
      retryTimer = setTimeout(() => {
        retryTimer = undefined;
        refreshUntilDone("all");
      }, RELISTEN_DELAY_MS);
      retryTimer.unref();
    });
  };

  const listen = async (): Promise<void> => {
    const client = new pg.Client({ connectionString: options.url });
    const dropped = (err?: Error) => {
      if (listener !== client) return;
      listener = undefined;
      client.end().catch(() => {});
      if (err) options.onListenError?.(err);
      if (closed) return;
      relistenTimer = setTimeout(() => {
        relistenTimer = undefined;
        // Notifications sent while no connection listened are lost: read everything again.
        listen()
          .then(() => refreshUntilDone("all"))
          .catch((e: Error) => dropped(e));
      }, RELISTEN_DELAY_MS);
      relistenTimer.unref();
    };
    client.on("error", (err) => dropped(err));
    client.on("end", () => dropped(new Error("the server-values listening connection ended")));
    client.on("notification", (msg) => {
      if (msg.channel !== SERVER_VALUES_CHANNEL) return;
      let names: unknown;
      try {
        names = JSON.parse(msg.payload ?? "");
      } catch {
        names = undefined;
      }
      const valid = Array.isArray(names) && names.every((n) => typeof n === "string");
      refreshUntilDone(valid ? (names as string[]) : "all");
    });
    listener = client;
    try {
      await client.connect();
      await client.query(`LISTEN ${SERVER_VALUES_CHANNEL}`);
    } catch (err) {
      if (listener === client) listener = undefined;
      await client.end().catch(() => {});
      throw err;
    }
  };

  /** See PostgresServerValues.transaction. */
  const transaction = async <T>(work: (tx: Tx, update: ValuesUpdate) => Promise<T>): Promise<T> => {
    let written: Map<string, Buffer | undefined>[] = [];
    const result = await writeTransaction(db, async (tx) => {
      written = []; // a retried attempt starts over
      return work(tx, async (names, now, change) => {
        const after = await updateIn(tx, names, now, change);
        written.push(after);
        return names.map((n) => after.get(n));
      });
    });
    // Committed: this replica's watchers see the new values from the next call on.
    for (const after of written) for (const [name, value] of after) apply(name, value, undefined);
    return result;
  };

  return {
    async start() {
      // Listening first, then reading: a change committed in between is either in the read or
      // announced to the listener (or both, which costs one more read).
      await listen();
      await requestRefresh("all");
    },

    refresh: () => requestRefresh("all"),

    async close() {
      closed = true;
      if (relistenTimer) clearTimeout(relistenTimer);
      if (retryTimer) clearTimeout(retryTimer);
      const client = listener;
      listener = undefined;
      await client?.end().catch(() => {});
      await running?.catch(() => {});
    },

    async read(name) {
      const [row] = await db.select({ value: serverKeys.value }).from(serverKeys).where(eq(serverKeys.name, name));
      return row?.value;
    },

    transaction,

    update: (names, now, change) => transaction((_tx, update) => update(names, now, change)),

    watch<T>(names: readonly string[], parse: (values: readonly (Buffer | undefined)[]) => T) {
      let seenGeneration = -1;
      let bytes: (Buffer | undefined)[] | undefined;
      let parsed: T | undefined;
      return () => {
        if (generation !== seenGeneration) {
          seenGeneration = generation;
          const next = names.map((name) => cache.get(name));
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
