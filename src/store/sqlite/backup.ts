/**
 * `trellis backup` and `trellis restore`: a consistent copy of a data directory's database,
 * taken while the server runs, and putting one back in place of a stopped server's.
 *
 * Backup. The source is opened the way `trellis auth token --local` opens it: a separate
 * read-only connection, no data-directory lock, so the server keeps serving. The copy is made
 * by SQLite's online backup API (better-sqlite3's `backup()`, which copies in steps and
 * yields between them) inside one read transaction held open for the whole copy. That pins
 * one WAL snapshot: the copy is the database exactly as it was when the backup began (every
 * write committed, i.e. acknowledged, before then is in it), and the server's commits during
 * the copy neither show up half in it nor make SQLite restart the copy from page one, which
 * without the pinned snapshot would happen after every server write and could never finish
 * under steady traffic. A WAL reader takes no lock that a writer waits for: the server's
 * writes (busy_timeout 0, retried on a timer in group-commit.ts) never find the database
 * busy because of a backup; its checkpoints only stop at the snapshot until the backup ends,
 * so the -wal file may grow meanwhile.
 *
 * The copy is written to a fresh private file (0600: it holds the signing keys) beside the
 * target, turned into a self-contained rollback-journal database (no -wal to forget),
 * verified (`PRAGMA integrity_check`, the migrations table), fsynced, and only then given the
 * target's name, so a crash or a full disk never leaves half a backup under that name.
 *
 * Restore. Refused while a server holds the data directory (the very lock the server takes,
 * held until the restore is done so no server starts on a half-restored directory), and over
 * an existing database unless forced. The backup is copied beside the database, verified
 * there (integrity, the migrations table, not migrated by a newer build), and renamed over
 * `trellis.db` in one step; the previous database files are kept under a timestamped name,
 * never deleted.
 */
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { acquireDataDirLock, databaseFile, dataDirLockFile, fsyncDirectory, refuseNewerMigrations } from "./db.js";

/** Refusals caused by the arguments themselves (the CLI's exit 2), not by the state of the disk. */
export class BackupUsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "BackupUsageError";
  }
}

/** Pages copied per step: only sets how often progress is reported (the snapshot is pinned). */
const STEP_PAGES = 1000;

/** The table drizzle records applied migrations in: every Trellis database has it. */
const MIGRATIONS_TABLE = "__drizzle_migrations";

/** The files SQLite keeps beside a database; a backup or restore must never mix them up. */
const SIDE_FILES = ["-wal", "-shm", "-journal"] as const;

export interface BackupOptions {
  readonly dataDir: string;
  readonly to: string;
  /** Replace an existing file at `to`. */
  readonly force?: boolean;
  /** Called between steps with the pages copied so far and the total. */
  readonly onProgress?: (copiedPages: number, totalPages: number) => void;
  /** Pages per step (default STEP_PAGES); tests take small steps to write in between. */
  readonly stepPages?: number;
}

export interface DatabaseSummary {
  /** Absolute path of the file written. */
  readonly file: string;
  readonly bytes: number;
  readonly pages: number;
  readonly tables: number;
  readonly rows: number;
}

/** Copies the data directory's database to `to`. @throws Error (or BackupUsageError) with a message for the user. */
export async function backupDatabase(options: BackupOptions): Promise<DatabaseSummary> {
  const source = databaseFile(options.dataDir);
  if (!fs.existsSync(source)) {
    throw new Error(`no Trellis database at ${source}; start the server once with --data ${options.dataDir}`);
  }
  const target = path.resolve(options.to);
  refuseDatabaseFileName(target, options.dataDir, "--to");
  if (fs.existsSync(target) && !options.force) {
    throw new Error(`${target} already exists; choose another --to, or pass --force to replace it`);
  }
  if (!fs.existsSync(path.dirname(target))) throw new Error(`the directory of ${target} does not exist`);

  const partial = `${target}.partial-${process.pid}-${randomBytes(4).toString("hex")}`;
  // Created here, exclusively and private, so SQLite writes into a file nobody else can read
  // (its journal takes the same mode) and no link planted under this name is followed.
  fs.closeSync(fs.openSync(partial, "wx", 0o600));
  try {
    const sqlite = new Database(source, { readonly: true, fileMustExist: true });
    try {
      // Pins the snapshot: the backup's steps read inside this transaction (see the header).
      sqlite.exec("BEGIN");
      sqlite.prepare("SELECT count(*) FROM sqlite_master").get();
      await sqlite.backup(partial, {
        progress: ({ totalPages, remainingPages }) => {
          options.onProgress?.(totalPages - remainingPages, totalPages);
          return options.stepPages ?? STEP_PAGES;
        },
      });
      sqlite.exec("COMMIT");
    } finally {
      sqlite.close();
    }
    const summary = verifyCopy(partial, `the copy of ${source}`, { selfContained: true });
    fsyncFile(partial);
    if (options.force) {
      fs.renameSync(partial, target);
    } else {
      // link, unlike rename, never replaces a file that appeared at `target` meanwhile.
      try {
        fs.linkSync(partial, target);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === "EEXIST") throw new Error(`${target} already exists; choose another --to, or pass --force to replace it`);
        // A file system without hard links (some network shares): rename, after one more look.
        if ((code !== "EPERM" && code !== "ENOTSUP" && code !== "EOPNOTSUPP") || fs.existsSync(target)) throw err;
        fs.renameSync(partial, target);
      }
    }
    fsyncDirectory(path.dirname(target));
    return { ...summary, file: target, bytes: fs.statSync(target).size };
  } finally {
    removeWithSideFiles(partial);
  }
}

export interface RestoreOptions {
  readonly dataDir: string;
  readonly from: string;
  /** Restore over an existing database (moved aside, never deleted). */
  readonly force?: boolean;
  readonly now?: () => Date;
}

export interface RestoreSummary extends DatabaseSummary {
  /** Where the previous database (and its -wal, -shm) now is, when there was one. */
  readonly previous?: string;
}

/** Puts the backup `from` in place as the data directory's database. @throws Error (or BackupUsageError) with a message for the user. */
export function restoreDatabase(options: RestoreOptions): RestoreSummary {
  const backupFile = path.resolve(options.from);
  if (!fs.existsSync(backupFile)) throw new Error(`no backup at ${backupFile}`);
  if (!fs.statSync(backupFile).isFile()) throw new Error(`${backupFile} is not a file`);
  refuseDatabaseFileName(backupFile, options.dataDir, "--from");
  fs.mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
  // The server's own lock: refused while one runs, and none can start until we are done.
  const release = acquireDataDirLock(options.dataDir);
  const live = databaseFile(options.dataDir);
  const incoming = `${live}.restore-${process.pid}-${randomBytes(4).toString("hex")}`;
  try {
    const present = [live, ...SIDE_FILES.map((s) => live + s)].filter((f) => fs.existsSync(f));
    if (present.length > 0 && !options.force) {
      throw new Error(
        `data directory ${options.dataDir} already holds a database (${present.map((f) => path.basename(f)).join(", ")}); ` +
          "pass --force to restore over it (the old files are kept, renamed with a timestamp)",
      );
    }
    // The backup is copied first and the copy verified, so what is checked is what goes in.
    copyPrivately(backupFile, incoming);
    const summary = verifyCopy(incoming, backupFile, { selfContained: false });
    fsyncFile(incoming);
    const previous = present.length > 0 ? moveAside(live, options.now?.() ?? new Date()) : undefined;
    fs.renameSync(incoming, live);
    fsyncDirectory(options.dataDir);
    return { ...summary, file: path.resolve(live), bytes: fs.statSync(live).size, ...(previous ? { previous } : {}) };
  } finally {
    removeWithSideFiles(incoming);
    release();
  }
}

/**
 * Keeps the current database under `<trellis.db>.before-restore-<time>` (with its -wal,
 * -shm, -journal under the same stem, so SQLite still opens it whole). The side files go
 * first: an old -wal or hot -journal left beside the restored file would be replayed into
 * it. Before that the old WAL is checkpointed into the file when it can be, so the file
 * alone is complete. The file itself is hard-linked, not renamed: `trellis.db` names the old
 * database until the restored one replaces it in one rename.
 */
function moveAside(live: string, now: Date): string {
  checkpointQuietly(live);
  const stamp = now
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d+Z$/, "Z");
  let stem = `${live}.before-restore-${stamp}`;
  for (let n = 2; [stem, ...SIDE_FILES.map((s) => stem + s)].some((f) => fs.existsSync(f)); n++) {
    stem = `${live}.before-restore-${stamp}-${n}`;
  }
  for (const side of SIDE_FILES) {
    if (fs.existsSync(live + side)) fs.renameSync(live + side, stem + side);
  }
  if (fs.existsSync(live)) {
    try {
      fs.linkSync(live, stem);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== "EPERM" && code !== "ENOTSUP" && code !== "EOPNOTSUPP") throw err;
      fs.renameSync(live, stem); // a file system without hard links
    }
  }
  fsyncDirectory(path.dirname(live));
  return stem;
}

/** Folds the old WAL into the old file; a database too damaged to open is moved as it is. */
function checkpointQuietly(file: string): void {
  if (!fs.existsSync(file) || !fs.existsSync(`${file}-wal`)) return;
  try {
    const old = new Database(file, { fileMustExist: true, timeout: 0 });
    try {
      old.pragma("wal_checkpoint(TRUNCATE)");
    } finally {
      old.close(); // the last connection removes an emptied -wal and the -shm
    }
  } catch {
    // moved aside with its -wal as it is
  }
}

/**
 * Checks a copy before it is given its final name, and counts what it holds: SQLite's full
 * integrity check, the migrations table every Trellis database has, and (for a restore)
 * migrations no newer than this build's. `selfContained` (a backup) also switches the copy to
 * a rollback journal, so it is one file that opens anywhere, read-only too, with no -wal
 * beside it. `named` is the file the messages name.
 */
function verifyCopy(file: string, named: string, { selfContained }: { selfContained: boolean }): Omit<DatabaseSummary, "bytes"> {
  let sqlite: Database.Database;
  try {
    sqlite = new Database(file, { fileMustExist: true, timeout: 0 });
  } catch (err) {
    throw new Error(`${named} cannot be opened as a database: ${(err as Error).message}`);
  }
  try {
    let verdict: unknown;
    try {
      if (selfContained) sqlite.pragma("journal_mode = DELETE");
      verdict = sqlite.pragma("integrity_check", { simple: true });
    } catch (err) {
      verdict = (err as Error).message;
    }
    if (verdict !== "ok") throw new Error(`${named} is damaged or not a database (integrity_check: ${String(verdict)})`);
    const tables = (
      sqlite.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name").all() as {
        name: string;
      }[]
    ).map((t) => t.name);
    if (!tables.includes(MIGRATIONS_TABLE)) {
      throw new Error(`${named} is not a Trellis database (it has no ${MIGRATIONS_TABLE} table)`);
    }
    if (!selfContained) refuseNewerMigrations(sqlite, named); // closes the connection when it throws
    let rows = 0;
    for (const name of tables) {
      rows += Number((sqlite.prepare(`SELECT count(*) AS n FROM "${name.replaceAll('"', '""')}"`).get() as { n: number }).n);
    }
    const pages = Number(sqlite.pragma("page_count", { simple: true }));
    return { file, pages, tables: tables.length, rows };
  } finally {
    if (sqlite.open) sqlite.close();
  }
}

/**
 * A backup written over, or restored from, the live database's own files would destroy the
 * very thing it copies: refused by name (symlinks and `..` resolved).
 */
function refuseDatabaseFileName(file: string, dataDir: string, flag: string): void {
  const live = databaseFile(dataDir);
  const own = [live, ...SIDE_FILES.map((s) => live + s), dataDirLockFile(dataDir)].map(realPathOf);
  if (own.includes(realPathOf(file))) {
    throw new BackupUsageError(`${flag} ${file} is one of the data directory's own database files; name a file outside ${dataDir}`);
  }
}

/** The real path of a file that may not exist yet (its directory resolved instead). */
function realPathOf(file: string): string {
  const absolute = path.resolve(file);
  try {
    return fs.realpathSync(absolute);
  } catch {
    try {
      return path.join(fs.realpathSync(path.dirname(absolute)), path.basename(absolute));
    } catch {
      return absolute;
    }
  }
}

/**
 * Copies `from` to a new file `to` created 0600 (never following a link planted there). Not
 * fs.copyFile: it gives the copy the source's mode, so a database copied from a backup left
 * world-readable would be readable for a moment too.
 */
function copyPrivately(from: string, to: string): void {
  const input = fs.openSync(from, "r");
  try {
    const output = fs.openSync(to, "wx", 0o600);
    try {
      const chunk = Buffer.allocUnsafe(1 << 20);
      for (;;) {
        const n = fs.readSync(input, chunk, 0, chunk.length, null);
        if (n === 0) break;
        for (let written = 0; written < n; ) written += fs.writeSync(output, chunk, written, n - written);
      }
    } finally {
      fs.closeSync(output);
    }
  } finally {
    fs.closeSync(input);
  }
}

function fsyncFile(file: string): void {
  const fd = fs.openSync(file, "r+");
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

function removeWithSideFiles(file: string): void {
  for (const f of [file, ...SIDE_FILES.map((s) => file + s)]) fs.rmSync(f, { force: true });
}
