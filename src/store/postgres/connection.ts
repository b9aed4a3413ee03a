/**
 * Opening a PostgreSQL database: a node-postgres pool with drizzle on top, and the committed
 * migrations (src/store/postgres/migrations) applied at start-up.
 *
 * Several replicas usually start together (a deployment rolls out N at once). drizzle's
 * migrator alone would let two of them both see "not applied yet" and both run the same
 * CREATE TABLEs, one failing half-way. So the migrator runs on one connection that first takes
 * a session-level advisory lock (`pg_advisory_lock`): the second replica waits for the first
 * to finish, then finds everything applied and does nothing. The lock is PostgreSQL's own,
 * held by the connection, so a replica that dies mid-migration releases it with its
 * connection (its migration transaction rolls back), and nothing stale can remain.
 *
 * A database migrated by a newer build is refused, as on SQLite: this build would write rows
 * the newer schema reads wrongly.
 */
import { fileURLToPath } from "node:url";
import { drizzle, type NodePgDatabase } from "drizzle-orm/node-postgres";
import { migrate } from "drizzle-orm/node-postgres/migrator";
import pg from "pg";
import { redactDatabaseUrl } from "../target.js";
import { mapPostgresError } from "./errors.js";
import * as schema from "./schema.js";
import migrationsJournal from "./migrations/meta/_journal.json" with { type: "json" };

export type PgDb = NodePgDatabase<typeof schema> & { $client: pg.Pool };

/** Where the committed PostgreSQL migrations live, resolved from this file (not from the cwd). */
export const POSTGRES_MIGRATIONS_DIR = fileURLToPath(new URL("./migrations", import.meta.url));

/**
 * The advisory lock key the migrator holds. Any fixed 64-bit number works as long as nothing
 * else on the database uses it; this one spells "trellis\0" in ASCII, to be recognisable in
 * pg_locks.
 */
export const MIGRATION_LOCK_KEY = 0x7472656c6c697300n;

/** drizzle's bookkeeping of applied migrations (its defaults, kept). */
const MIGRATIONS_SCHEMA = "drizzle";
const MIGRATIONS_TABLE = "__drizzle_migrations";

export interface PostgresOptions {
  /** postgres://user:password@host:port/database (libpq-style query parameters allowed). */
  readonly url: string;
  /** Connections the pool may hold (default 10). Each replica holds up to this many. */
  readonly poolSize?: number;
  /**
   * How long a query waits for a free pool connection before failing with kind "exhausted"
   * (default 5000 ms). Never 0, which in node-postgres means "wait forever": a full pool must
   * give an error, not a hang.
   */
  readonly acquireTimeoutMs?: number;
  /**
   * How long a statement waits for a row (or advisory) lock another transaction holds before it
   * fails with kind "lock_timeout" (default 15 000 ms: well past any lock our own transactions
   * hold, which is milliseconds, and past the pool's acquire timeout, so a call held inside the
   * database still shows as a full pool to the others): a replica stopped mid-transaction, or a
   * tool holding a row, makes the writers that need the row fail "busy" rather than hang.
   */
  readonly lockTimeoutMs?: number;
  /** Called with errors of idle connections (a restarted server, say), which no query awaits. */
  readonly onIdleError?: (err: Error) => void;
  /**
   * A tool's open (import, keys, auth token --local): refuse a database no Trellis server has
   * migrated instead of creating the schema in it, as the tools refuse a data directory
   * without a SQLite database. A mistyped --database then changes nothing.
   */
  readonly existingOnly?: boolean;
}

export interface OpenedPostgres {
  readonly db: PgDb;
  readonly pool: pg.Pool;
  /** Ends every connection of the pool. */
  close(): Promise<void>;
}

export const DEFAULT_POOL_SIZE = 10;
export const DEFAULT_ACQUIRE_TIMEOUT_MS = 5000;
export const DEFAULT_LOCK_TIMEOUT_MS = 15_000;
/**
 * A transaction of ours is never idle for long: its statements follow each other at once. One
 * idle this long belongs to a process that stopped (frozen, or cut off from the database
 * without the connection closing), and PostgreSQL ends it so its row locks stop holding up
 * every replica.
 */
const IDLE_IN_TRANSACTION_MS = 30_000;

/** A pool for `options` without migrating: for tools that only read, and for tests. */
export function createPool(options: PostgresOptions): pg.Pool {
  const poolSize = options.poolSize ?? DEFAULT_POOL_SIZE;
  if (!Number.isInteger(poolSize) || poolSize < 1) throw new Error(`pool size must be a positive integer, got ${poolSize}`);
  const acquireTimeoutMs = options.acquireTimeoutMs ?? DEFAULT_ACQUIRE_TIMEOUT_MS;
  if (!(acquireTimeoutMs > 0)) throw new Error(`the pool's acquire timeout must be positive, got ${acquireTimeoutMs}`);
  const lockTimeoutMs = options.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS;
  if (!(lockTimeoutMs > 0)) throw new Error(`the lock timeout must be positive, got ${lockTimeoutMs}`);
  const pool = new pg.Pool({
    connectionString: options.url,
    max: poolSize,
    connectionTimeoutMillis: acquireTimeoutMs,
    // Session settings sent at connect time, so every statement of every connection has them.
    lock_timeout: lockTimeoutMs,
    idle_in_transaction_session_timeout: IDLE_IN_TRANSACTION_MS,
  });
  // An idle connection the server closes (a restart, an administrator's pg_terminate_backend)
  // is reported as an 'error' event with no query to fail; unhandled, it would end the process.
  // The pool drops that connection and opens a new one on the next query.
  pool.on("error", (err) => options.onIdleError?.(err));
  // A client checked out of the pool (a transaction between two statements, an import batch
  // between two records) whose server connection ends emits 'error' with no query to fail and
  // no pool listener attached: unhandled, that too would end the process. Its next query fails
  // instead (and is mapped like any lost connection), and the pool drops it when released.
  pool.on("connect", (client) => client.on("error", (err) => options.onIdleError?.(err)));
  return pool;
}

/**
 * Opens the database at `options.url`, applies the migrations this build carries (once across
 * processes, see the header) and returns the pool with drizzle on top.
 * @throws PostgresStorageError when the server cannot be reached; Error when it was migrated by a newer build.
 */
export async function openPostgres(options: PostgresOptions): Promise<OpenedPostgres> {
  const pool = createPool(options);
  try {
    await migratePostgres(pool, options.existingOnly ? { refuseEmptyAt: redactDatabaseUrl(options.url) } : {});
  } catch (err) {
    await pool.end().catch(() => {});
    throw mapPostgresError(err) ?? err;
  }
  const db = drizzle(pool, { schema }) as PgDb;
  return { db, pool, close: () => pool.end() };
}

/**
 * Applies the committed migrations under the migration advisory lock, on one connection of
 * `pool`. Returns how many were applied by this call (0 when another process got there first).
 * With `refuseEmptyAt` (the database's redacted location), a database holding no migration
 * at all is refused, untouched (PostgresOptions.existingOnly).
 */
export async function migratePostgres(pool: pg.Pool, options: { refuseEmptyAt?: string } = {}): Promise<number> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    // Waiting for another replica's migration is not a stuck writer: no lock timeout here (the
    // session's own value comes back with RESET before the connection returns to the pool).
    await client.query("SET lock_timeout = 0");
    await client.query("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK_KEY.toString()]);
    try {
      const before = await appliedMigrations(client);
      refuseNewerMigrations(before);
      if (options.refuseEmptyAt !== undefined && before.count === 0) {
        throw new Error(`no Trellis database at ${options.refuseEmptyAt}; start the server once with --database ${options.refuseEmptyAt}`);
      }
      await migrate(drizzle(client), { migrationsFolder: POSTGRES_MIGRATIONS_DIR, migrationsSchema: MIGRATIONS_SCHEMA, migrationsTable: MIGRATIONS_TABLE });
      return (await appliedMigrations(client)).count - before.count;
    } finally {
      await client.query("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK_KEY.toString()]);
      await client.query("RESET lock_timeout");
    }
  } catch (err) {
    broken = err as Error;
    throw err;
  } finally {
    // A connection whose unlock failed may still hold the lock: destroy it rather than reuse it.
    client.release(broken);
  }
}

interface AppliedMigrations {
  readonly count: number;
  /** The newest applied migration's journal timestamp (ms), or null. */
  readonly newest: number | null;
}

async function appliedMigrations(client: pg.PoolClient): Promise<AppliedMigrations> {
  const exists = await client.query("SELECT to_regclass($1) AS t", [`${MIGRATIONS_SCHEMA}.${MIGRATIONS_TABLE}`]);
  if (exists.rows[0]?.t === null) return { count: 0, newest: null };
  const { rows } = await client.query(`SELECT count(*)::int AS n, max(created_at)::text AS newest FROM "${MIGRATIONS_SCHEMA}"."${MIGRATIONS_TABLE}"`);
  return { count: rows[0].n as number, newest: rows[0].newest === null ? null : Number(rows[0].newest) };
}

interface JournalEntry {
  readonly tag: string;
  readonly when: number;
}

/** The PostgreSQL migrations this build carries, oldest first (bundled, like the SQLite journal). */
function knownMigrations(): readonly JournalEntry[] {
  return (migrationsJournal as { entries: JournalEntry[] }).entries;
}

function refuseNewerMigrations(applied: AppliedMigrations): void {
  const known = knownMigrations();
  const newestKnown = known[known.length - 1];
  if (!newestKnown || applied.newest === null) return;
  if (applied.newest > newestKnown.when || applied.count > known.length) {
    throw new Error(
      `the PostgreSQL database was migrated by a newer Trellis: ${applied.count} migrations applied, the newest dated ` +
        `${new Date(applied.newest).toISOString()}; this build knows ${known.length}, the newest ${newestKnown.tag} ` +
        `(${new Date(newestKnown.when).toISOString()}). Run the newer build`,
    );
  }
}
