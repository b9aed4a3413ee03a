/**
 * Opening the embedded database: one better-sqlite3 connection per process, drizzle on top,
 * migrations applied at start-up.
 *
 * Pinned on every open (reliability.md findings 12-14):
 * - journal_mode=WAL, and synchronous=FULL set explicitly, because a reopened WAL database
 *   silently reports NORMAL with this build of SQLite: a revocation lost to a power cut would
 *   re-grant access.
 * - foreign_keys=ON (asserted), a short busy_timeout (the wait blocks the event loop).
 * - Write transactions are BEGIN IMMEDIATE (see `writeTransaction`); the API's writes share
 *   them with the writes that arrive in the same turn of the event loop (group-commit.ts).
 * A lock file refuses a second server on the same data directory, and a file that fails
 * `PRAGMA quick_check` is refused at start-up (reliability.md F11) rather than served.
 */
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { type BetterSQLite3Database, drizzle } from "drizzle-orm/better-sqlite3";
import { migrate } from "drizzle-orm/better-sqlite3/migrator";
import { flushGroupCommit } from "./group-commit.js";
import * as schema from "./schema.js";

export type Db = BetterSQLite3Database<typeof schema> & { $client: Database.Database };

/** Where the committed migrations live, resolved from this file (not from the cwd). */
export const MIGRATIONS_DIR = fileURLToPath(new URL("./migrations", import.meta.url));

export interface OpenedDatabase {
  readonly db: Db;
  readonly file: string;
  /** Checkpoints the WAL, closes the connection and releases the data-dir lock. */
  close(): void;
}

export interface OpenDatabaseOptions {
  /**
   * Take the data-directory lock (default true). Tools that read the database while the
   * server runs (e.g. minting a local operator token) pass false.
   */
  readonly lock?: boolean;
}

/**
 * How long a write waits for another connection's lock before failing with SQLITE_BUSY (then
 * UNAVAILABLE, see src/errors/to-connect-error.ts). Short, because the wait blocks the event loop.
 */
export const BUSY_TIMEOUT_MS = 1000;

/**
 * Refuses a damaged database file with a message naming it. quick_check reads every page but
 * skips index-content cross-checks, so it costs milliseconds at our sizes.
 */
function checkIntegrity(sqlite: Database.Database, file: string): void {
  let verdict: unknown;
  try {
    verdict = sqlite.pragma("quick_check", { simple: true });
  } catch (err) {
    verdict = (err as Error).message;
  }
  if (verdict !== "ok") {
    sqlite.close();
    throw new Error(`database ${file} is damaged (quick_check: ${String(verdict)}); restore it from a backup or move it away`);
  }
}

/** The database file inside a data directory. */
export function databaseFile(dataDir: string): string {
  return path.join(dataDir, "trellis.db");
}

/**
 * Opens (creating if needed) `<dataDir>/trellis.db`, applies pragmas and migrations.
 * @throws Error with a clear message when another server holds the data directory.
 */
export function openDatabase(dataDir: string, options: OpenDatabaseOptions = {}): OpenedDatabase {
  fs.mkdirSync(dataDir, { recursive: true });
  const release = options.lock === false ? () => {} : acquireDataDirLock(dataDir);
  const file = databaseFile(dataDir);
  let sqlite: Database.Database;
  try {
    sqlite = new Database(file, { timeout: BUSY_TIMEOUT_MS });
    checkIntegrity(sqlite, file);
    sqlite.pragma("journal_mode = WAL");
    sqlite.pragma("synchronous = FULL");
    sqlite.pragma("foreign_keys = ON");
    if (sqlite.pragma("foreign_keys", { simple: true }) !== 1) throw new Error("SQLite foreign keys could not be enabled");
    const db = drizzle(sqlite, { schema }) as Db;
    migrate(db, { migrationsFolder: MIGRATIONS_DIR });
    return {
      db,
      file,
      close() {
        try {
          flushGroupCommit(db); // writes still queued in this turn are committed, not dropped
          sqlite.pragma("wal_checkpoint(TRUNCATE)");
          sqlite.close();
        } finally {
          release();
        }
      },
    };
  } catch (err) {
    release();
    throw err;
  }
}

/**
 * Runs `fn` in one BEGIN IMMEDIATE transaction: the write lock is taken before the first
 * read, so a check-then-write can never be overtaken by another writer (drizzle's default
 * DEFERRED would fail with SQLITE_BUSY_SNAPSHOT instead). `fn` must be synchronous.
 */
export function writeTransaction<T>(db: Db, fn: (tx: Db) => T): T {
  return db.transaction((tx) => fn(tx as unknown as Db), { behavior: "immediate" });
}

/**
 * Creates `<dataDir>/trellis.lock` holding our pid. If it exists and names a live process,
 * refuses; a stale lock (process gone) is taken over.
 */
function acquireDataDirLock(dataDir: string): () => void {
  const lockFile = path.join(dataDir, "trellis.lock");
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      fs.writeFileSync(lockFile, `${process.pid}\n`, { flag: "wx" });
      return () => {
        try {
          if (fs.readFileSync(lockFile, "utf8").trim() === String(process.pid)) fs.unlinkSync(lockFile);
        } catch {
          // already gone
        }
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      const holder = Number.parseInt(fs.readFileSync(lockFile, "utf8").trim(), 10);
      if (Number.isInteger(holder) && isAlive(holder)) {
        throw new Error(
          `data directory ${dataDir} is in use by another Trellis server (pid ${holder}); ` +
            "stop it or choose another --data directory",
        );
      }
      fs.rmSync(lockFile, { force: true });
    }
  }
  throw new Error(`could not lock data directory ${dataDir}`);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}
