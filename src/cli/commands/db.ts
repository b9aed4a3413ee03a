/**
 * `trellis db copy --from DIR --to postgres://…` (src/store/postgres/copy.ts, docs/cli.md
 * "Moving to PostgreSQL"): copies a SQLite deployment into an empty PostgreSQL database and
 * verifies it. Like `backup`, it works on the databases themselves and calls no server.
 * Exit codes: 0 copied and verified, 1 refused or failed (a message on stderr, nothing
 * committed to the target), 2 usage.
 */
import type { Command } from "commander";
import { CliError, EXIT, usageError } from "../exit-codes.js";
import type { Io } from "../io.js";

interface CopyFlags {
  from?: string;
  to: string;
}

export function registerDb(program: Command, io: Io): void {
  const db = program.command("db").description("move a deployment between storage engines");
  db.command("copy")
    .description("copy a SQLite data directory into an empty PostgreSQL database, then verify every table")
    .option("--from <dir>", "the SQLite data directory [env TRELLIS_DATA, default ./data]")
    .requiredOption("--to <url>", "postgres://user@host:port/database (the password may come from PGPASSWORD)")
    .action(async (opts: CopyFlags) => {
      const from = opts.from ?? io.env.TRELLIS_DATA ?? "./data";
      if (!/^postgres(ql)?:\/\//.test(opts.to)) throw usageError(`--to must be a postgres:// URL, got ${JSON.stringify(redactUrl(opts.to))}`);
      // Loaded on use: it opens SQLite and PostgreSQL, which client commands never need.
      const { copySqliteToPostgres, CopyRefusedError } = await import("../../store/postgres/copy.js");
      const progress = progressReporter(io);
      let tables: Awaited<ReturnType<typeof copySqliteToPostgres>>;
      try {
        tables = await copySqliteToPostgres({ fromDir: from, toUrl: opts.to, onProgress: progress });
      } catch (err) {
        progress.abandon();
        if (err instanceof CopyRefusedError) throw new CliError(`db copy refused: ${err.message}`, EXIT.failure);
        throw new CliError(`db copy failed, nothing was committed to the target: ${(err as Error).message}`, EXIT.failure);
      }
      const rows = tables.reduce((sum, t) => sum + t.rows, 0);
      const width = Math.max(...tables.map((t) => t.table.length));
      for (const t of tables) io.out(`${t.table.padEnd(width)}  ${String(t.rows).padStart(9)} rows  sha256 ${t.checksum}\n`);
      io.out(`copied ${rows} rows in ${tables.length} tables from ${from} to ${redactUrl(opts.to)}; row counts and checksums verified\n`);
    });
}

/** The URL without its password, for messages. */
function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    return url.replace(/:[^:@/]*@/, ":***@");
  }
}

type Progress = Parameters<NonNullable<import("../../store/postgres/copy.js").CopyOptions["onProgress"]>>[0];

/**
 * Progress on stderr: on a terminal one self-rewriting line per table as it fills; elsewhere
 * (a log, CI) one line per table when it is copied, and one when all are verified.
 */
function progressReporter(io: Io): ((p: Progress) => void) & { abandon(): void } {
  let open = false;
  let verified = 0;
  const report = (p: Progress) => {
    if (p.phase === "copy") {
      const done = p.copied === p.total;
      if (io.stderrIsTty) {
        io.err(`\rdb copy: ${p.table} ${p.copied}/${p.total}${done ? "\n" : ""}`);
        open = !done;
      } else if (done) {
        io.err(`db copy: ${p.table} ${p.total} rows\n`);
      }
    } else {
      verified += 1;
      if (io.stderrIsTty) io.err(`\rdb copy: verified ${p.table} (${verified} tables)\x1b[K`);
      open = io.stderrIsTty;
    }
  };
  return Object.assign(report, {
    abandon() {
      if (open) io.err("\n");
    },
  });
}
