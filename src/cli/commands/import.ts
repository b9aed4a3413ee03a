/**
 * `trellis import [--data DIR | --database URL] [--group UID] [--quiet] FILE|DIR...`: loads
 * repos, tags and advisories into the database (src/import/, docs/import.md). It writes the database
 * directly rather than calling the API, so the global client options do not apply.
 *
 * Like `serve`, commander declares the flags (for --help and completion) and hands them back
 * in argv form to the importer, which owns defaults, validation and its exit statuses
 * (0 imported, 1 could not run, 2 usage, 3 some records rejected).
 */
import type { Command } from "commander";
import { ExitStatus } from "../exit-codes.js";
import type { Io } from "../io.js";
import { DATA_FLAG_HELP, DATABASE_FLAG_HELP } from "./common.js";

interface ImportOptions {
  data?: string;
  database?: string;
  group?: string;
  quiet?: boolean;
}

export function registerImport(program: Command, _io: Io): void {
  program
    .command("import")
    .description("import repos, tags and advisories (JSON, NDJSON, OSV) into the database")
    .argument("<paths...>", "files or directories to import")
    .option("--data <dir>", DATA_FLAG_HELP)
    .option("--database <url>", DATABASE_FLAG_HELP)
    .option("--group <uid>", 'group for records without "parent", and for OSV documents')
    .option("--quiet", "no progress bar")
    .action(async (paths: string[], opts: ImportOptions) => {
      // Loaded on use: the importer opens SQLite, which client commands never need.
      const { runImport } = await import("../../import/run-import.js");
      const args = [
        ...(opts.data !== undefined ? ["--data", opts.data] : []),
        ...(opts.database !== undefined ? ["--database", opts.database] : []),
        ...(opts.group !== undefined ? ["--group", opts.group] : []),
        ...(opts.quiet ? ["--quiet"] : []),
        "--",
        ...paths,
      ];
      const status = await runImport(args);
      if (status !== 0) throw new ExitStatus(status);
    });
}
