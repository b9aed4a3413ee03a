/**
 * Reading (and, for the few tests that plant a row the API cannot make, writing) a test
 * server's database from a test, through a connection of the test's own, on whichever engine
 * the server runs: SQLite (its file, read-only where only read) or PostgreSQL (the database
 * store-target.ts names for the server's data directory). Used above all to prove that a
 * rejected request left every table exactly as it was.
 */
import { createHash } from "node:crypto";
import Database from "better-sqlite3";
import pg from "pg";
import { openStore, type StoreEngine } from "../../src/store/open.js";
import { databaseFile } from "../../src/store/sqlite/db.js";
import { storeOfTestApp } from "./store-target.js";

/** A test server, named by its data directory (a TestApp, or anything holding its dataDir). */
export interface TestStore {
  readonly dataDir: string;
}

/** The PostgreSQL URL of the server's database, or undefined when it runs on SQLite. */
function postgresUrlOf(app: TestStore): string | undefined {
  return storeOfTestApp(app.dataDir).databaseUrl;
}

/** A row's values as text that compares equal exactly when the values do (blobs as hex). */
function rowText(row: unknown): string {
  return JSON.stringify(row, (_k, v) => (Buffer.isBuffer(v) ? v.toString("hex") : v));
}

/**
 * node-postgres reads int8 as a string; the schema keeps times and counters in bigint columns
 * holding JavaScript-safe numbers, so tests read them as numbers, as on SQLite.
 */
const NUMERIC_INT8: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: "text" | "binary") =>
    oid === pg.types.builtins.INT8 ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format)) as pg.CustomTypesConfig["getTypeParser"],
};

/**
 * One connection per database, kept while the test uses it: a snapshot is taken before and
 * after every rejected call, and a new connection each time (SCRAM authentication included)
 * would cost more than the reading. It closes itself when idle; the database being dropped
 * ends it too, which the pool reports as an error of an idle client, expected and ignored.
 */
const pools = new Map<string, pg.Pool>();

function poolFor(url: string): pg.Pool {
  let pool = pools.get(url);
  if (!pool) {
    pool = new pg.Pool({ connectionString: url, max: 1, idleTimeoutMillis: 2000, allowExitOnIdle: true, types: NUMERIC_INT8 });
    pool.on("error", () => {});
    pools.set(url, pool);
  }
  return pool;
}

async function withPostgres<T>(url: string, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await poolFor(url).connect();
  let broken: Error | undefined;
  try {
    return await fn(client);
  } catch (err) {
    broken = err as Error;
    throw err;
  } finally {
    // A failed statement may leave the connection mid-transaction: destroyed, not reused.
    client.release(broken);
  }
}

/** The text of every row of every table, in one statement (migration bookkeeping excluded: not in public). */
const snapshotStatements = new Map<string, string>();

async function snapshotStatement(url: string, client: pg.PoolClient): Promise<string> {
  let statement = snapshotStatements.get(url);
  if (statement === undefined) {
    const tables = await client.query<{ name: string }>(
      "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY table_name COLLATE \"C\"",
    );
    // Each table's rows as JSON text, sorted (a heap has no stable order to read them in).
    statement = tables.rows
      .map(
        ({ name }) =>
          `(SELECT '${name}' AS t, coalesce(array_agg(r ORDER BY r COLLATE "C"), '{}') AS rows FROM (SELECT row_to_json(x)::text AS r FROM "${name}" x) s)`,
      )
      .join(" UNION ALL ");
    snapshotStatements.set(url, statement);
  }
  return statement;
}

/**
 * A digest of every row of every table (migration bookkeeping excluded). On PostgreSQL every
 * table is read by one statement, each table's rows as JSON text sorted bytewise.
 */
export async function snapshotDb(app: TestStore): Promise<string> {
  const url = postgresUrlOf(app);
  const hash = createHash("sha256");
  if (url === undefined) {
    const db = new Database(databaseFile(app.dataDir), { readonly: true, fileMustExist: true });
    try {
      const tables = db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '__drizzle%' ORDER BY name")
        .all() as { name: string }[];
      for (const { name } of tables) {
        hash.update(`#${name}\n`);
        for (const row of db.prepare(`SELECT * FROM "${name}" ORDER BY rowid`).iterate()) hash.update(rowText(row));
      }
    } finally {
      db.close();
    }
    return hash.digest("hex");
  }
  await withPostgres(url, async (client) => {
    // One statement: one consistent picture of every table.
    const { rows } = await client.query<{ t: string; rows: string[] }>(await snapshotStatement(url, client));
    for (const table of rows) {
      hash.update(`#${table.t}\n`);
      for (const row of table.rows) hash.update(row);
    }
  });
  return hash.digest("hex");
}

/** Runs `fn` and asserts it failed and left the database unchanged; returns the error. */
export async function expectRejectedAndUnchanged(app: TestStore, fn: () => Promise<unknown>): Promise<unknown> {
  const before = await snapshotDb(app);
  let error: unknown;
  try {
    await fn();
  } catch (err) {
    error = err;
  }
  if (error === undefined) throw new Error("expected the call to fail, but it succeeded");
  const after = await snapshotDb(app);
  if (before !== after) throw new Error("a rejected call changed the database");
  return error;
}

/**
 * One SQL statement on the server's database, with `?` placeholders (rewritten to `$1…` on
 * PostgreSQL). Table and column names are the same on both engines; values read back are each
 * engine's own: booleans 0/1 on SQLite, true/false on PostgreSQL (0/1 are accepted as
 * parameters on both), bigints as numbers on both. For what the API cannot do: plant a row
 * (a custom role of a given parent, say) or read a column it never returns (a stored secret).
 */
export async function queryDb<Row = Record<string, unknown>>(app: TestStore, statement: string, params: readonly unknown[] = []): Promise<Row[]> {
  const url = postgresUrlOf(app);
  if (url === undefined) {
    const db = new Database(databaseFile(app.dataDir), { fileMustExist: true });
    try {
      db.pragma("busy_timeout = 5000");
      const prepared = db.prepare(statement);
      if (prepared.reader) return prepared.all(...params) as Row[];
      prepared.run(...params);
      return [];
    } finally {
      db.close();
    }
  }
  let n = 0;
  const text = statement.replace(/\?/g, () => `$${++n}`);
  return withPostgres(url, async (client) => (await client.query(text, params as unknown[])).rows as Row[]);
}

/**
 * Runs `fn` with the server's store opened a second time through its engine (as a CLI tool
 * beside the server opens it), for a test that acts as another process on the same database:
 * a verifier of SCIM tokens, a writer of refresh tokens.
 */
export async function withServerStore<T>(app: TestStore, fn: (store: StoreEngine) => Promise<T>): Promise<T> {
  const store = await openStore({ ...storeOfTestApp(app.dataDir), access: "beside" });
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}
