/**
 * The PostgreSQL connection (src/store/postgres/connection.ts) against the run's real cluster:
 * migrations applied once however many processes start together, and every PostgreSQL failure
 * the engine maps (src/store/postgres/errors.ts) produced for real and given its meaning.
 */
import net from "node:net";
import { sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/node-postgres";
import pg from "pg";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { createPool, migratePostgres, openPostgres, type OpenedPostgres } from "../../src/store/postgres/connection.js";
import { mapPostgresError, type PostgresFailureKind } from "../../src/store/postgres/errors.js";
import migrationsJournal from "../../src/store/postgres/migrations/meta/_journal.json" with { type: "json" };
import { describePostgres, freshPostgresDatabase } from "../support/postgres.js";

const MIGRATION_COUNT = migrationsJournal.entries.length;
const NOW = 1_700_000_000_000;

/** Runs `fn`, expects it to fail, and returns the failure's mapped kind (undefined: not mapped). */
async function failureKind(fn: () => Promise<unknown>): Promise<PostgresFailureKind | undefined> {
  let error: unknown;
  try {
    await fn();
  } catch (err) {
    error = err;
  }
  if (error === undefined) throw new Error("expected a failure, but it succeeded");
  return mapPostgresError(error)?.kind;
}

async function connect(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  return client;
}

describePostgres("migrations", () => {
  it("run once when two processes' pools migrate the same empty database at the same moment", async () => {
    const url = await freshPostgresDatabase("migrate");
    const pools = [createPool({ url, poolSize: 2 }), createPool({ url, poolSize: 2 })];
    try {
      const applied = await Promise.all(pools.map((pool) => migratePostgres(pool)));
      // One of them applied every migration, the other found them applied.
      expect(applied.sort()).toEqual([0, MIGRATION_COUNT]);
      const { rows } = await pools[0]!.query('SELECT count(*)::int AS n FROM drizzle."__drizzle_migrations"');
      expect(rows[0].n).toBe(MIGRATION_COUNT);
      // and a later start applies nothing
      expect(await migratePostgres(pools[1]!)).toBe(0);
      // The lock is released: nothing holds an advisory lock on this database once both are done
      // (pg_locks is the cluster's: other files migrate their own databases meanwhile).
      const locks = await pools[0]!.query(
        "SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
      );
      expect(locks.rows[0].n).toBe(0);
    } finally {
      await Promise.all(pools.map((pool) => pool.end()));
    }
  });

  it("refuse a database migrated by a newer build, naming both", async () => {
    const url = await freshPostgresDatabase("newer");
    const opened = await openPostgres({ url });
    await opened.pool.query(`INSERT INTO drizzle."__drizzle_migrations" (hash, created_at) VALUES ('future', ${NOW * 2})`);
    await opened.close();
    const known = migrationsJournal.entries.length;
    await expect(openPostgres({ url })).rejects.toThrow(new RegExp(`migrated by a newer Trellis: ${known + 1} migrations applied.*this build knows ${known}`));
  });
});

describePostgres("PostgreSQL failures, mapped", () => {
  let url: string;
  let opened: OpenedPostgres;
  beforeAll(async () => {
    url = await freshPostgresDatabase("errors");
    opened = await openPostgres({ url, poolSize: 4 });
    await opened.pool.query("INSERT INTO groups (uid, name, create_time, update_time) VALUES ('root', 'root', $1, $1), ('other', 'other', $1, $1)", [NOW]);
  });
  afterAll(async () => {
    await opened?.close();
  });

  it("23505 unique violation → unique, naming the constraint", async () => {
    let error: unknown;
    await opened.pool.query("INSERT INTO groups (uid, name, create_time, update_time) VALUES ('root', 'again', 1, 1)").catch((err) => (error = err));
    const mapped = mapPostgresError(error);
    expect(mapped?.kind).toBe("unique");
    expect(mapped?.code).toBe("23505");
    expect(mapped?.constraint).toBe("groups_pkey");
    expect(mapped?.retryable).toBe(false);
  });

  it("23503 foreign-key violation → foreign_key, through drizzle's wrapping too", async () => {
    const { groups } = await import("../../src/store/postgres/schema.js");
    const kind = await failureKind(() =>
      opened.db.insert(groups).values({ uid: "nobody/x", parentUid: "nobody", name: "x", createTime: NOW, updateTime: NOW }),
    );
    expect(kind).toBe("foreign_key");
    // and deleting a parent that still has a child (ON DELETE RESTRICT)
    await opened.pool.query("INSERT INTO groups (uid, parent_uid, name, create_time, update_time) VALUES ('root/child', 'root', 'child', 1, 1)");
    expect(await failureKind(() => opened.pool.query("DELETE FROM groups WHERE uid = 'root'"))).toBe("foreign_key");
  });

  it("40001 serialization failure → conflict (retryable)", async () => {
    // Write skew: each transaction reads what the other writes; SERIALIZABLE lets one commit.
    const [a, b] = [await connect(url), await connect(url)];
    try {
      for (const c of [a, b]) {
        await c.query("BEGIN ISOLATION LEVEL SERIALIZABLE");
        await c.query("SELECT count(*) FROM groups WHERE parent_uid = 'other'");
      }
      await a.query("INSERT INTO groups (uid, parent_uid, name, create_time, update_time) VALUES ('other/a', 'other', 'a', 1, 1)");
      await b.query("INSERT INTO groups (uid, parent_uid, name, create_time, update_time) VALUES ('other/b', 'other', 'b', 1, 1)");
      await a.query("COMMIT");
      let error: unknown;
      await b.query("COMMIT").catch((err) => (error = err));
      const mapped = mapPostgresError(error);
      expect(mapped?.kind).toBe("conflict");
      expect(mapped?.code).toBe("40001");
      expect(mapped?.retryable).toBe(true);
    } finally {
      await Promise.all([a.end(), b.end()]);
    }
  });

  it("40P01 deadlock → conflict (retryable)", async () => {
    const [a, b] = [await connect(url), await connect(url)];
    try {
      for (const c of [a, b]) {
        // The detector runs after this long of waiting (default 1 s).
        await c.query("SET deadlock_timeout = '50ms'");
        await c.query("BEGIN");
      }
      await a.query("SELECT 1 FROM groups WHERE uid = 'root' FOR UPDATE");
      await b.query("SELECT 1 FROM groups WHERE uid = 'other' FOR UPDATE");
      const results = await Promise.allSettled([
        a.query("SELECT 1 FROM groups WHERE uid = 'other' FOR UPDATE"),
        b.query("SELECT 1 FROM groups WHERE uid = 'root' FOR UPDATE"),
      ]);
      const failed = results.filter((r): r is PromiseRejectedResult => r.status === "rejected");
      expect(failed).toHaveLength(1);
      const mapped = mapPostgresError(failed[0]!.reason);
      expect(mapped?.code).toBe("40P01");
      expect(mapped?.kind).toBe("conflict");
    } finally {
      await Promise.all([a.query("ROLLBACK").catch(() => {}), b.query("ROLLBACK").catch(() => {})]);
      await Promise.all([a.end(), b.end()]);
    }
  });

  it("57P01 connection terminated by the server mid-query → unavailable, and the pool recovers", async () => {
    const errors: Error[] = [];
    const pool = createPool({ url, poolSize: 1, onIdleError: (err) => errors.push(err) });
    try {
      const { rows } = await pool.query("SELECT pg_backend_pid() AS pid");
      // Its failure is taken at once: it may come before the terminate call below returns, and a
      // rejection nobody handles yet is an unhandled rejection.
      const sleeping = pool.query("SELECT pg_sleep(30)").then(
        () => undefined,
        (err: unknown) => err,
      );
      // Wait until the query is running on the server, then end its backend as a restart would.
      await vi.waitFor(async () => {
        const active = await opened.pool.query("SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND query LIKE 'SELECT pg_sleep%'", [rows[0].pid]);
        expect(active.rowCount).toBe(1);
      });
      await opened.pool.query("SELECT pg_terminate_backend($1)", [rows[0].pid]);
      const error = await sleeping;
      expect(mapPostgresError(error)?.kind).toBe("unavailable");
      expect((error as { code?: string }).code).toBe("57P01");
      // The next query gets a new connection: no restart of anything.
      await expect(pool.query("SELECT 1 AS one")).resolves.toMatchObject({ rows: [{ one: 1 }] });
    } finally {
      await pool.end();
    }
  });

  it("a connection ended inside a transaction, between its statements, fails that transaction unavailable and throws nothing uncaught", async () => {
    const seen: Error[] = [];
    const pool = createPool({ url, poolSize: 1, onIdleError: (err) => seen.push(err) });
    const db = drizzle(pool);
    try {
      const outcome = await db
        .transaction(async (tx) => {
          const { rows } = await tx.execute<{ pid: number }>(sql`SELECT pg_backend_pid() AS pid`);
          await opened.pool.query("SELECT pg_terminate_backend($1)", [rows[0]?.pid]);
          // The client hears its connection end while no statement of ours is running on it.
          await vi.waitFor(() => expect(seen.length).toBeGreaterThan(0));
          await tx.execute(sql`SELECT 1`);
        })
        .then(
          () => "committed",
          (err: unknown) => mapPostgresError(err)?.kind,
        );
      expect(outcome).toBe("unavailable");
      // The pool dropped the dead connection and opens a new one: no restart of anything.
      await expect(pool.query("SELECT 1 AS one")).resolves.toMatchObject({ rows: [{ one: 1 }] });
    } finally {
      await pool.end();
    }
  });

  it("ECONNREFUSED (no server on that port) → unavailable, from open as from a query", async () => {
    const port = await new Promise<number>((resolve) => {
      const server = net.createServer().listen(0, "127.0.0.1", () => {
        const { port } = server.address() as net.AddressInfo;
        server.close(() => resolve(port));
      });
    });
    const refused = new URL(url);
    refused.port = String(port);
    let error: unknown;
    await openPostgres({ url: refused.toString() }).catch((err) => (error = err));
    expect(mapPostgresError(error)?.kind).toBe("unavailable");
    expect(mapPostgresError(error)?.code).toBe("ECONNREFUSED");
  });

  it("22021 a NUL in a text value → unstorable_text, the client's input and never INTERNAL", async () => {
    expect(await failureKind(() => opened.pool.query("SELECT 1 FROM groups WHERE name = $1", ["a\u0000b"]))).toBe("unstorable_text");
  });

  it("53300 too many connections → exhausted", async () => {
    // Superusers are exempt from connection limits: a role of its own, limited to one.
    const role = `limited_${Date.now().toString(36)}`;
    await opened.pool.query(`CREATE ROLE ${role} LOGIN PASSWORD 'pw' CONNECTION LIMIT 1`);
    const limited = new URL(url);
    limited.username = role;
    limited.password = "pw";
    const first = await connect(limited.toString());
    try {
      const kind = await failureKind(() => connect(limited.toString()));
      expect(kind).toBe("exhausted");
    } finally {
      await first.end();
      await opened.pool.query(`DROP ROLE ${role}`);
    }
  });

  it("55P03 a lock wait past lock_timeout → lock_timeout (busy for the caller), not retried", async () => {
    const holder = await opened.pool.connect();
    const waiter = await opened.pool.connect();
    try {
      await holder.query("BEGIN");
      await holder.query("SELECT 1 FROM groups WHERE uid = 'other' FOR UPDATE");
      await waiter.query("BEGIN");
      await waiter.query("SET LOCAL lock_timeout = '50ms'");
      let error: unknown;
      await waiter.query("SELECT 1 FROM groups WHERE uid = 'other' FOR SHARE").catch((err) => (error = err));
      const mapped = mapPostgresError(error);
      expect(mapped?.kind).toBe("lock_timeout");
      expect(mapped?.code).toBe("55P03");
      expect(mapped?.retryable).toBe(false);
    } finally {
      await waiter.query("ROLLBACK");
      await holder.query("ROLLBACK");
      waiter.release();
      holder.release();
    }
  });

  it("a pool with every connection taken → exhausted after the acquire timeout, never a hang", async () => {
    const pool = createPool({ url, poolSize: 1, acquireTimeoutMs: 60_000 });
    const held = await pool.connect();
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    try {
      const waiting = pool.query("SELECT 1");
      let error: unknown;
      const settled = waiting.catch((err) => (error = err));
      await vi.advanceTimersByTimeAsync(59_999);
      expect(error).toBeUndefined();
      await vi.advanceTimersByTimeAsync(1);
      await settled;
      expect(mapPostgresError(error)?.kind).toBe("exhausted");
    } finally {
      vi.useRealTimers();
      held.release();
      await pool.end();
    }
  });

  it("an error that is not about the database's state (a syntax error) is left unmapped", async () => {
    expect(await failureKind(() => opened.pool.query("SELEC 1"))).toBeUndefined();
  });
});

describePostgres("write transactions", () => {
  let opened: OpenedPostgres;
  beforeAll(async () => {
    opened = await openPostgres({ url: await freshPostgresDatabase("tx"), poolSize: 2 });
  });
  afterAll(async () => {
    await opened?.close();
  });

  /** A real 40001 from the server, raised inside the transaction. */
  const serializationFailure = "DO $$ BEGIN RAISE EXCEPTION 'simulated' USING ERRCODE = 'serialization_failure'; END $$";

  it("run again after a retryable abort, with the first attempt's writes rolled back", async () => {
    const { writeTransaction } = await import("../../src/store/postgres/transaction.js");
    let attempts = 0;
    const result = await writeTransaction(opened.db, async (tx) => {
      attempts += 1;
      await tx.execute(`INSERT INTO server_keys (name, value) VALUES ('attempt-${attempts}', '\\x00')`);
      if (attempts === 1) await tx.execute(serializationFailure);
      return attempts;
    });
    expect(result).toBe(2);
    const { rows } = await opened.pool.query("SELECT name FROM server_keys ORDER BY name");
    expect(rows.map((r) => r.name)).toEqual(["attempt-2"]);
  });

  it("give up after three attempts with a conflict (ABORTED for the caller), and never retry other failures", async () => {
    const { writeTransaction, MAX_TRANSACTION_ATTEMPTS } = await import("../../src/store/postgres/transaction.js");
    let attempts = 0;
    const error = await writeTransaction(opened.db, async (tx) => {
      attempts += 1;
      await tx.execute(serializationFailure);
    }).catch((err: unknown) => err);
    expect(attempts).toBe(MAX_TRANSACTION_ATTEMPTS);
    expect(mapPostgresError(error)?.kind).toBe("conflict");

    attempts = 0;
    const unique = await writeTransaction(opened.db, async (tx) => {
      attempts += 1;
      await tx.execute("INSERT INTO server_keys (name, value) VALUES ('attempt-2', '\\x00')");
    }).catch((err: unknown) => err);
    expect(attempts).toBe(1);
    expect(mapPostgresError(unique)?.kind).toBe("unique");
  });
});
