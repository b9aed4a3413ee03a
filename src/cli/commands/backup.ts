/**
 * `trellis backup --to FILE [--data DIR] [--force]` and `trellis restore --from FILE [--data DIR]
 * [--force]` (src/store/sqlite/backup.ts, docs/cli.md "Backup and restore"). Like `import`, they
 * work on the data directory itself and call no server, so the global client options do not
 * apply. Exit codes: 0 done, 1 refused or failed (a message on stderr), 2 usage.
 */
import type { Command } from "commander";
import { CliError, EXIT, usageError } from "../exit-codes.js";
import type { Io } from "../io.js";

interface BackupFlags {
  to: string;
  data?: string;
  force?: boolean;
}

interface RestoreFlags {
  from: string;
  data?: string;
  force?: boolean;
}

export function registerBackup(program: Command, io: Io): void {
  program
    .command("backup")
    .description("copy a data directory's database to FILE, consistently, while the server runs")
    .requiredOption("--to <file>", "the backup file to write (refused if it exists, unless --force)")
    .option("--data <dir>", "database directory [env TRELLIS_DATA, default ./data]")
    .option("--force", "replace an existing backup file")
    .action(async (opts: BackupFlags) => {
      // Loaded on use: it opens SQLite, which client commands never need.
      const { backupDatabase } = await import("../../store/open.js");
      const dataDir = dataDirOf(opts, io);
      const progress = progressLine(io);
      const summary = await storageCommand(() => backupDatabase({ dataDir, to: opts.to, force: opts.force === true, onProgress: progress.update }));
      progress.done();
      io.out(`backup ${summary.file}: ${summary.bytes} bytes, ${summary.pages} pages, ${summary.tables} tables, ${summary.rows} rows\n`);
    });
}

export function registerRestore(program: Command, io: Io): void {
  program
    .command("restore")
    .description("put a backup in place as a stopped server's database")
    .requiredOption("--from <file>", "the backup file (written by trellis backup)")
    .option("--data <dir>", "database directory [env TRELLIS_DATA, default ./data]")
    .option("--force", "restore over an existing database (its files are kept, renamed with a timestamp)")
    .action(async (opts: RestoreFlags) => {
      const { restoreDatabase } = await import("../../store/open.js");
      const dataDir = dataDirOf(opts, io);
      const summary = await storageCommand(async () => restoreDatabase({ dataDir, from: opts.from, force: opts.force === true }));
      io.out(
        `restored ${summary.file}: ${summary.bytes} bytes, ${summary.pages} pages, ${summary.tables} tables, ${summary.rows} rows` +
          (summary.previous ? `; the previous database is kept as ${summary.previous}` : "") +
          "\n",
      );
    });
}

function dataDirOf(opts: { data?: string }, io: Io): string {
  // Backup and restore copy the SQLite file; a PostgreSQL deployment has its own tools, and
  // quietly copying ./data instead would leave an operator with a backup of nothing.
  if (io.env.TRELLIS_DATABASE) {
    throw usageError(
      "TRELLIS_DATABASE is set: backup and restore copy a SQLite data directory; back up PostgreSQL with its own tools (pg_dump, or your provider's snapshots), see docs/scale-out.md",
    );
  }
  return opts.data ?? io.env.TRELLIS_DATA ?? "./data";
}

/** Runs a backup or restore step, turning its refusals into the CLI's exit codes. */
async function storageCommand<T>(run: () => Promise<T>): Promise<T> {
  const { BackupUsageError } = await import("../../store/open.js");
  try {
    return await run();
  } catch (err) {
    if (err instanceof BackupUsageError) throw usageError(err.message);
    throw new CliError((err as Error).message, EXIT.failure);
  }
}

/** A self-rewriting `backup: 42% (…)` line on a terminal's stderr; nothing otherwise. */
function progressLine(io: Io): { update: (copied: number, total: number) => void; done: () => void } {
  let shown = false;
  return {
    update: (copied, total) => {
      if (!io.stderrIsTty || total === 0) return;
      shown = true;
      io.err(`\rbackup: ${Math.floor((copied * 100) / total)}% (${copied} of ${total} pages)`);
    },
    done: () => {
      if (shown) io.err("\n");
    },
  };
}
