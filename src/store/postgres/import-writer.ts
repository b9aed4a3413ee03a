/**
 * The importer's writer on PostgreSQL (the ImportWriter contract, src/store/engine.ts), as
 * SQLite's (src/store/sqlite/engine.ts importWriter): one transaction per batch, a savepoint per
 * record, the same writes as the API's (each taking the locks its repository's header names, so
 * an import running beside replicas keeps every invariant they keep).
 *
 * - One transaction per batch, READ COMMITTED like every writer here, on one pooled connection
 *   held for the batch. PostgreSQL has no database-wide write lock to wait for at BEGIN: an
 *   import and the replicas' writers wait only for the rows they both touch.
 * - Bounded lock waits: the transaction sets `lock_timeout`, so a statement that waits longer
 *   than that for a row another writer holds fails (55P03), which comes out as StorageError
 *   "busy" and stops the import ("try again when it is idle"), where SQLite's busy wait at
 *   BEGIN IMMEDIATE does the same. Without it, an import could wait as long as any
 *   transaction anywhere holds a row.
 * - A savepoint per record: a record's own failure (an API error such as NOT_FOUND, a value or
 *   constraint PostgreSQL refuses: SQLSTATE classes 22, 23, 54) is rolled back to its savepoint
 *   alone and rethrown as it is; the batch goes on. Any other failure is the storage's (a lost
 *   connection, a lock wait past the bound, a conflict) and is rethrown as a StorageError, on
 *   which the importer stops; the batch is then rolled back whole.
 */
import { sql } from "drizzle-orm";
import { StorageError } from "../../errors/storage-error.js";
import type { ImportTransaction, ImportWriter, ImportWrites } from "../engine.js";
import { upsertAdvisoryInTx } from "./advisories.js";
import type { PgDb } from "./connection.js";
import { upsertEolTagInTx } from "./eol-tags.js";
import { mapPostgresError } from "./errors.js";
import { putReadmeInTx } from "./repo-readmes.js";
import { findRepoUid, upsertRepoInTx } from "./repos.js";
import { findTagUid, upsertTagInTx } from "./tags.js";
import type { Tx } from "./transaction.js";

/** How long an import's statement waits for a row lock by default: the same second SQLite's tools wait for the write lock. */
export const DEFAULT_IMPORT_LOCK_TIMEOUT_MS = 1000;

export interface PostgresImportWriterOptions {
  /** The lock wait bound (ms, a positive integer). */
  readonly lockTimeoutMs: number;
  /** The engine's translation of a PostgreSQL failure into a StorageError (anything else as it is). */
  readonly storageError: (err: unknown) => unknown;
}

/** PostgreSQL's SQLSTATE of `err` (or of the driver error drizzle wrapped in it), if any. */
function sqlstateOf(err: unknown): string | undefined {
  for (let e = err; e instanceof Error; e = (e as { cause?: unknown }).cause) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && /^[0-9A-Z]{5}$/.test(code)) return code;
  }
  return undefined;
}

/** Classes of SQLSTATE that mean "this record's values", not "the storage": data, integrity, limits. */
const RECORD_CLASSES = new Set(["22", "23", "54"]);

export function createPostgresImportWriter(db: PgDb, options: PostgresImportWriterOptions): ImportWriter {
  const { storageError } = options;
  if (!Number.isInteger(options.lockTimeoutMs) || options.lockTimeoutMs < 1)
    throw new Error(`the import's lock timeout must be a positive integer, got ${options.lockTimeoutMs}`);
  const lockTimeout = `${options.lockTimeoutMs}ms`;

  /** The record's own fault as it is; the storage's as a StorageError (see the header). */
  const recordFaultOr = (err: unknown): unknown => {
    const mapped = mapPostgresError(err);
    if (mapped) return mapped.kind === "unique" || mapped.kind === "foreign_key" ? mapped : storageError(mapped);
    const code = sqlstateOf(err);
    if (code === undefined || RECORD_CLASSES.has(code.slice(0, 2))) return err;
    return new StorageError("unavailable", (err as Error).message, { cause: err });
  };

  /** Runs `statement` as part of the storage's own work: its failure is the storage's. */
  const storage = async (tx: Tx, statement: ReturnType<typeof sql>) => {
    try {
      await tx.execute(statement);
    } catch (err) {
      const translated = storageError(err);
      throw translated instanceof StorageError ? translated : new StorageError("unavailable", (err as Error).message, { cause: err });
    }
  };

  const transactionOn = (tx: Tx): ImportTransaction => {
    const writes: ImportWrites = {
      findRepoUid: (parentUid, name) => findRepoUid(tx, parentUid, name),
      findTagUid: (repoUid, name) => findTagUid(tx, repoUid, name),
      upsertRepo: async (parentUid, fields, now) => (await upsertRepoInTx(tx, parentUid, fields, now)).outcome,
      upsertTag: async (repoUid, fields, now) => (await upsertTagInTx(tx, repoUid, fields, now)).outcome,
      putReadme: (repoUid, content, now) => putReadmeInTx(tx, repoUid, content, now),
      upsertEolTag: (tagUid, fields, now) => upsertEolTagInTx(tx, tagUid, fields, now),
      upsertAdvisory: (parentUid, fields, now) => upsertAdvisoryInTx(tx, parentUid, fields, now),
    };
    return {
      async record(apply) {
        await storage(tx, sql`SAVEPOINT import_record`);
        let value: Awaited<ReturnType<typeof apply>>;
        try {
          value = await apply(writes);
        } catch (err) {
          await storage(tx, sql`ROLLBACK TO SAVEPOINT import_record`);
          await storage(tx, sql`RELEASE SAVEPOINT import_record`);
          throw recordFaultOr(err);
        }
        await storage(tx, sql`RELEASE SAVEPOINT import_record`);
        return value;
      },
    };
  };

  return {
    async transaction(work) {
      try {
        return await db.transaction(
          async (tx) => {
            // For this transaction only (set_config's third argument): the pool's connection
            // goes back to other writers without a bound they did not ask for.
            await tx.execute(sql`SELECT set_config('lock_timeout', ${lockTimeout}, true)`);
            return work(transactionOn(tx));
          },
          { isolationLevel: "read committed" },
        );
      } catch (err) {
        throw storageError(err);
      }
    },
  };
}
