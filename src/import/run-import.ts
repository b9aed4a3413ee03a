/**
 * `trellis import [--data DIR] [--group UID] [--quiet] FILE|DIR...`: loads repos, tags and
 * advisories (native JSON/NDJSON records and OSV documents) into the database. See
 * docs/import.md.
 *
 * - Idempotent: every resource has a natural key (repo: group + name; tag: repo + name;
 *   advisory: group + id + artifact), so a re-import updates in place and never duplicates.
 * - Bounded transactions: records are written in batches of BATCH_SIZE, one write
 *   transaction per batch through the store's import writer (split early after MAX_LOCK_MS,
 *   with a YIELD_MS pause between transactions so server writes get their turn), with a
 *   savepoint per record: a record that fails is rolled back alone (nothing partial of it
 *   stays), reported and skipped.
 * - Coexists with a running server: it opens the store "beside" it, with no data-directory
 *   lock, and holds the write lock only per batch (the server keeps reading). If it cannot get
 *   that lock within the bound it stops with a clear message; batches already committed stay.
 * - A progress bar on stderr when stderr is a terminal; one summary line on stdout at the end.
 *
 * Exit status: 0 all records imported; 3 finished but some records were rejected; 1 the
 * import could not run or stopped (lock, I/O); 2 usage error.
 */
import { parseArgs } from "node:util";
import cliProgress from "cli-progress";
import type { ImportTransaction, StoreEngine } from "../store/engine.js";
import { openStore, storeExists, storeFlag, storeLocation, type StoreTarget, storeTargetFrom, TOOL_LOCK_WAIT_MS } from "../store/open.js";
import type { UpsertOutcome } from "../store/repos.js";
import { StorageError, storageFailureOf } from "../errors/storage-error.js";
import { applyRecord } from "./apply-record.js";
import { listInputFiles, type RawRecord, readRecords, totalBytes } from "./read-records.js";

export const BATCH_SIZE = 500;
/**
 * A transaction is also committed once it has held the write lock this long, so a running
 * server's writes (which wait up to the 1 s busy timeout) are never starved by a slow batch.
 */
export const MAX_LOCK_MS = 400;
/**
 * Pause between two import transactions. A server write that finds the lock taken retries
 * at growing intervals of up to 50 ms (src/store/sqlite/group-commit.ts), so back-to-back
 * transactions could starve it past its 1 s bound (the write then fails STORAGE_BUSY). A gap
 * longer than the longest interval guarantees every waiting writer its turn.
 */
export const YIELD_MS = 110;
/**
 * How many times a transaction that could not begin is tried before the import stops. SQLite's
 * busy wait probes the lock at growing intervals (up to 100 ms apart), so beside a server that
 * commits many short writes a second it can miss every gap between them within one wait (CI
 * saw an import refused while the server was merely busy). Three waits still stop promptly
 * when another writer really holds the lock. Only a transaction of which nothing ran is tried
 * again, so no record is applied or counted twice.
 */
export const LOCK_ATTEMPTS = 3;
/** How many rejections the summary explains one by one. */
export const REJECTIONS_SHOWN = 10;

export const IMPORT_USAGE = `usage: trellis import [--data DIR | --database URL] [--group UID] [--quiet] FILE|DIR...
  --data DIR      database directory (default $TRELLIS_DATA or ./data)
  --database URL  a PostgreSQL database instead (postgres://…; default $TRELLIS_DATABASE)
  --group UID   group for records without "parent", and for OSV documents
  --quiet       no progress bar`;

export interface ImportIo {
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WritableStream & { isTTY?: boolean };
  readonly env: NodeJS.ProcessEnv;
}

export interface ImportSummary {
  loaded: number;
  updated: number;
  unchanged: number;
  rejected: number;
  records: number;
  readonly rejections: { where: string; reason: string }[];
}

/** The database lock is held by another writer: the import cannot proceed. */
class LockRefused extends Error {}

function isBusy(err: unknown): boolean {
  return storageFailureOf(err) === "busy";
}

/**
 * A record's own fault (reject and go on) rather than the storage's (stop): the import writer
 * turns every failure of the storage itself into a StorageError.
 */
function isRecordFault(err: unknown): boolean {
  return err instanceof Error && !(err instanceof StorageError);
}

function reasonOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** The command: parses args, runs the import, prints the summary. Returns the exit status. */
export async function runImport(args: string[], io: ImportIo = process): Promise<number> {
  let parsed: ReturnType<
    typeof parseArgs<{
      options: {
        data: { type: "string" };
        database: { type: "string" };
        group: { type: "string" };
        quiet: { type: "boolean" };
        help: { type: "boolean"; short: "h" };
      };
      allowPositionals: true;
    }>
  >;
  try {
    parsed = parseArgs({
      args,
      options: {
        data: { type: "string" },
        database: { type: "string" },
        group: { type: "string" },
        quiet: { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
      allowPositionals: true,
    });
  } catch (err) {
    io.stderr.write(`trellis import: ${reasonOf(err)}\n${IMPORT_USAGE}\n`);
    return 2;
  }
  if (parsed.values.help) {
    io.stdout.write(`${IMPORT_USAGE}\n`);
    return 0;
  }
  if (parsed.positionals.length === 0) {
    io.stderr.write(`trellis import: give at least one FILE or DIR\n${IMPORT_USAGE}\n`);
    return 2;
  }
  let files: string[];
  try {
    files = listInputFiles(parsed.positionals);
  } catch (err) {
    io.stderr.write(`trellis import: ${reasonOf(err)}\n`);
    return 2;
  }
  let target: StoreTarget;
  try {
    target = storeTargetFrom({ data: parsed.values.data, database: parsed.values.database }, io.env);
  } catch (err) {
    io.stderr.write(`trellis import: ${reasonOf(err)}\n${IMPORT_USAGE}\n`);
    return 2;
  }
  const showProgress = !parsed.values.quiet && io.stderr.isTTY === true;
  const started = Date.now();
  let summary: ImportSummary;
  try {
    summary = await importFiles(target, files, { group: parsed.values.group, progress: showProgress ? io.stderr : undefined });
  } catch (err) {
    io.stderr.write(`trellis import: ${reasonOf(err)}\n`);
    return 1;
  }
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  io.stdout.write(
    `import: ${summary.loaded} loaded, ${summary.updated} updated, ${summary.unchanged} unchanged, ${summary.rejected} rejected` +
      ` (${summary.records} records from ${files.length} files in ${seconds}s)\n`,
  );
  for (const r of summary.rejections) io.stderr.write(`rejected ${r.where}: ${r.reason}\n`);
  if (summary.rejected > summary.rejections.length) {
    io.stderr.write(`... and ${summary.rejected - summary.rejections.length} more rejected records\n`);
  }
  return summary.rejected > 0 ? 3 : 0;
}

export interface ImportOptions {
  readonly group?: string;
  /** Where to draw the progress bar, if anywhere. */
  readonly progress?: NodeJS.WritableStream;
}

/**
 * Imports `files` into the database `target` names.
 * @throws Error (lock refused, I/O or database failure); committed batches stay committed.
 */
export async function importFiles(target: StoreTarget, files: readonly string[], options: ImportOptions = {}): Promise<ImportSummary> {
  const summary: ImportSummary = { loaded: 0, updated: 0, unchanged: 0, rejected: 0, records: 0, rejections: [] };
  // Only into a database a server made: one created here would hold no signing keys or
  // issuer settings, and a mistyped --data would silently start a second, empty world.
  const where = storeLocation(target);
  if (!storeExists(target)) {
    throw new Error(
      `no Trellis database in ${target.dataDir} (${where}); start the server once with \`trellis serve ${storeFlag(target)}\` to create it, or pass the --data of an existing one. Nothing was imported.`,
    );
  }
  let store: StoreEngine;
  try {
    // Beside the server: no data-directory lock, so a running server keeps serving.
    store = await openStore({ ...target, access: "beside" });
  } catch (err) {
    if (isBusy(err)) throw lockRefused(where, summary, TOOL_LOCK_WAIT_MS);
    throw err;
  }
  if (options.group !== undefined && !(await store.repositories.groups.get(options.group))) {
    await store.close();
    throw new Error(`--group ${options.group}: no such group in ${where}`);
  }
  const bar = options.progress
    ? new cliProgress.SingleBar(
        {
          stream: options.progress,
          format: "importing [{bar}] {percentage}% | {loaded} loaded, {updated} updated, {rejected} rejected",
          hideCursor: true,
        },
        cliProgress.Presets.shades_classic,
      )
    : undefined;
  bar?.start(totalBytes(files), 0, { loaded: 0, updated: 0, rejected: 0 });

  const reject = (where: string, reason: string) => {
    summary.rejected++;
    if (summary.rejections.length < REJECTIONS_SHOWN) summary.rejections.push({ where, reason });
  };
  const tally = (outcomes: UpsertOutcome[]) => {
    for (const o of outcomes) summary[o]++;
  };

  /**
   * One write transaction; a lock another writer holds through LOCK_ATTEMPTS waits (or one
   * that stops the transaction after its work began) stops the import.
   */
  const transaction = async <T>(work: (tx: ImportTransaction) => Promise<T>): Promise<T> => {
    for (let attempt = 1; ; attempt++) {
      let began = false;
      try {
        return await store.importer.transaction((tx) => {
          began = true;
          return work(tx);
        });
      } catch (err) {
        if (!isBusy(err)) throw err;
        if (began) throw lockRefused(where, summary, TOOL_LOCK_WAIT_MS);
        if (attempt >= LOCK_ATTEMPTS) throw lockRefused(where, summary, attempt * TOOL_LOCK_WAIT_MS);
        await new Promise((r) => setTimeout(r, YIELD_MS));
      }
    }
  };

  const applyOne = async (tx: ImportTransaction, rec: RawRecord, now: number) => {
    summary.records++;
    if (rec.error !== undefined) {
      reject(rec.where, rec.error);
      return;
    }
    try {
      tally(await tx.record((writes) => applyRecord(writes, rec.value, { group: options.group, now })));
    } catch (err) {
      if (!isRecordFault(err)) throw err;
      reject(rec.where, reasonOf(err));
    }
  };

  /** Writes a batch: one transaction, or several when it holds the lock past MAX_LOCK_MS. */
  const commitBatch = async (batch: RawRecord[]) => {
    let next = 0;
    while (next < batch.length) {
      if (summary.records > 0) await new Promise((r) => setTimeout(r, YIELD_MS));
      await transaction(async (tx) => {
        const lockedAt = Date.now();
        while (next < batch.length && Date.now() - lockedAt <= MAX_LOCK_MS) {
          await applyOne(tx, batch[next] as RawRecord, lockedAt);
          next++;
        }
      });
      const last = batch[next - 1];
      bar?.update(last?.bytesDone ?? 0, { loaded: summary.loaded, updated: summary.updated, rejected: summary.rejected });
    }
  };

  try {
    // Refuse up front, before reading anything, when another writer holds the lock.
    await transaction(async () => {});
    let batch: RawRecord[] = [];
    for await (const rec of readRecords(files)) {
      batch.push(rec);
      if (batch.length >= BATCH_SIZE) {
        await commitBatch(batch);
        batch = [];
      }
    }
    await commitBatch(batch);
    return summary;
  } finally {
    bar?.stop();
    // Opened "beside" the server: closing takes no checkpoint that would hold off its writers.
    await store.close();
  }
}

function lockRefused(where: string, summary: ImportSummary, waitedMs: number): LockRefused {
  const done =
    summary.records === 0
      ? "Nothing was imported."
      : `The ${summary.records} records before this batch are committed; re-running the import is safe (it updates in place).`;
  return new LockRefused(
    `cannot take the write lock on the database in ${where}: another process is writing to it ` +
      `(still busy after ${waitedMs} ms). ${done} Try again when it is idle.`,
  );
}
