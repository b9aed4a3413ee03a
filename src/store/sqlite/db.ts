/**
 * Opening the embedded database: one better-sqlite3 connection per process, drizzle on top,
 * migrations applied at start-up.
 *
 * Pinned on every open (docs/architecture.md "Storage"):
 * - journal_mode=WAL, and synchronous=FULL set explicitly, because a reopened WAL database
 *   silently reports NORMAL with this build of SQLite: a revocation lost to a power cut would
 *   re-grant access.
 * - foreign_keys=ON (asserted), a short busy_timeout for start-up and the tools; the server
 *   turns it off once started and waits for the lock on a timer (group-commit.ts), because
 *   SQLite's busy wait blocks the event loop.
 * - Write transactions are BEGIN IMMEDIATE (see `writeTransaction`); the API's writes share
 *   them with the writes that arrive in the same turn of the event loop (group-commit.ts).
 * An OS-level lock (see `acquireDataDirLock`) refuses a second server on the same data
 * directory and dies with its holder. Refused at start-up rather than served: a file that
 * fails `PRAGMA quick_check` (a damaged file), a zero-byte database file (it would be
 * silently re-initialised with new keys), and a database migrated by a newer build.
 */
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { type BetterSQLite3Database, drizzle } from "drizzle-orm/better-sqlite3";
import { migrate } from "drizzle-orm/better-sqlite3/migrator";
import { flushGroupCommit } from "./group-commit.js";
import * as schema from "./schema.js";
import migrationsJournal from "./migrations/meta/_journal.json" with { type: "json" };

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
 * UNAVAILABLE, see src/errors/to-connect-error.ts). SQLite's own busy wait (start-up, tools)
 * blocks the event loop; the running server waits this long on a timer instead.
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
  // The database holds the token-signing keys: a directory made here is the owner's alone
  // (an existing one keeps the permissions its operator gave it).
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const release = options.lock === false ? () => {} : acquireDataDirLock(dataDir);
  const file = databaseFile(dataDir);
  let sqlite: Database.Database;
  try {
    refuseEmptyFile(file);
    if (!fs.existsSync(file)) createDatabaseFile(file);
    sqlite = new Database(file, { timeout: BUSY_TIMEOUT_MS });
    checkIntegrity(sqlite, file);
    refuseNewerMigrations(sqlite, file);
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

/** The lock file inside a data directory: an empty SQLite database nobody reads. */
export function dataDirLockFile(dataDir: string): string {
  return path.join(dataDir, "trellis.server-lock");
}

/**
 * Locks the data directory for this process. The lock is a POSIX advisory lock (fcntl) that
 * SQLite takes on a separate, empty database file: a second connection holds it in an open
 * `BEGIN EXCLUSIVE` transaction for as long as the server runs. The kernel drops such a lock
 * when its process dies, however it dies (SIGKILL, OOM, power loss of a container), so
 * nothing stale can outlive the holder. The old pid file could: a recorded pid reused by
 * another process (pid 1 in every container) looked alive forever.
 *
 * Why not lock trellis.db itself: `locking_mode=EXCLUSIVE` on the data file would also
 * shut out `trellis import`, which writes while the server runs (WAL, docs/import.md).
 * SQLite's unix VFS shares locks between connections of one process, so a second open in
 * the same process (tests) is refused too. `trellis restore` takes the same lock, so it is
 * refused while a server runs and no server starts on a half-restored directory.
 */
export function acquireDataDirLock(dataDir: string): () => void {
  const lockFile = dataDirLockFile(dataDir);
  // timeout 0: a held lock is refused at once, never waited for.
  const holder = new Database(lockFile, { timeout: 0 });
  try {
    holder.exec("BEGIN EXCLUSIVE");
  } catch (err) {
    holder.close();
    if ((err as { code?: string }).code === "SQLITE_BUSY") {
      throw new Error(`data directory ${dataDir} is in use by another Trellis server (it holds ${lockFile}); stop it or choose another --data directory`);
    }
    throw new Error(`could not lock data directory ${dataDir} (${lockFile}): ${(err as Error).message}`);
  }
  // The pid file of earlier versions means nothing now; left in place it only misleads.
  fs.rmSync(path.join(dataDir, "trellis.lock"), { force: true });
  let released = false;
  return () => {
    if (released) return;
    released = true;
    try {
      holder.exec("ROLLBACK");
    } finally {
      holder.close();
    }
  };
}

/**
 * A zero-byte trellis.db is what a truncated copy, a failed restore or a full disk during a
 * copy leaves; SQLite would take it as a new database and the server would mint new keys
 * and an empty tree over it. Only a data directory without the file starts afresh.
 */
function refuseEmptyFile(file: string): void {
  let size: number;
  try {
    size = fs.statSync(file).size;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return; // a new data directory
    throw err;
  }
  if (size === 0) {
    throw new Error(
      `database ${file} is empty (0 bytes), so it is not a new database and not one this server can serve; ` +
        "restore it from a backup, or delete it to start afresh with new keys and no data",
    );
  }
}

/**
 * Creates a new database under a temporary name, with its schema, and only then links it in
 * as `file`: SQLite creates an empty file before it writes anything, so a crash or a full
 * disk during the very first start would otherwise leave the zero-byte file that
 * refuseEmptyFile (rightly) refuses, and the directory could never start again. The link
 * is atomic and never replaces a file another process created meanwhile.
 */
function createDatabaseFile(file: string): void {
  const fresh = `${file}.new-${process.pid}`;
  fs.rmSync(fresh, { force: true });
  fs.rmSync(`${fresh}-journal`, { force: true });
  try {
    // Created empty with the owner's permissions only, before SQLite opens it: the file holds
    // the signing keys, and SQLite gives its -wal and -shm files the database file's mode.
    fs.writeFileSync(fresh, "", { mode: 0o600, flag: "wx" });
    const sqlite = new Database(fresh);
    try {
      // Rollback journal (the default) while building it: the whole file is self-contained
      // at close, with nothing left in a -wal beside it.
      sqlite.pragma("synchronous = FULL");
      migrate(drizzle(sqlite, { schema }), { migrationsFolder: MIGRATIONS_DIR });
    } finally {
      sqlite.close();
    }
    try {
      fs.linkSync(fresh, file);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "EEXIST") {
        // another process (an import, say) created it first: use theirs
      } else if ((code === "EPERM" || code === "ENOTSUP" || code === "EOPNOTSUPP") && !fs.existsSync(file)) {
        fs.renameSync(fresh, file); // a file system without hard links: rename is atomic too
      } else {
        throw err;
      }
    }
    fsyncDirectory(path.dirname(file));
  } finally {
    fs.rmSync(fresh, { force: true });
  }
}

/** Makes a new directory entry durable (a power cut must not lose the link just made). */
export function fsyncDirectory(dir: string): void {
  const fd = fs.openSync(dir, "r");
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

interface JournalEntry {
  readonly tag: string;
  readonly when: number;
}

/**
 * The migrations this build carries (drizzle's journal), oldest first. Imported rather than
 * read from MIGRATIONS_DIR so that the single-file binary, which has no migrations folder
 * beside it, carries the journal inside its bundle.
 */
function knownMigrations(): readonly JournalEntry[] {
  return (migrationsJournal as { entries: JournalEntry[] }).entries;
}

/**
 * A database already migrated by a newer build has tables and columns this build does not
 * know; serving it would write rows the newer build reads wrongly. drizzle's migrator only
 * applies what is missing and says nothing about extra rows, so compare here: its
 * `__drizzle_migrations` records each applied migration's journal timestamp.
 */
export function refuseNewerMigrations(sqlite: Database.Database, file: string): void {
  const hasTable = sqlite.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '__drizzle_migrations'").get();
  if (!hasTable) return;
  const applied = sqlite.prepare("SELECT count(*) AS n, max(created_at) AS newest FROM __drizzle_migrations").get() as {
    n: number;
    newest: number | null;
  };
  const known = knownMigrations();
  const newestKnown = known[known.length - 1];
  if (!newestKnown || applied.newest === null) return;
  if (Number(applied.newest) > newestKnown.when || applied.n > known.length) {
    sqlite.close();
    throw new Error(
      `database ${file} was migrated by a newer Trellis: ${applied.n} migrations applied, the newest dated ` +
        `${new Date(Number(applied.newest)).toISOString()}; this build knows ${known.length}, the newest ` +
        `${newestKnown.tag} (${new Date(newestKnown.when).toISOString()}). Run the newer build, or restore a backup`,
    );
  }
}
