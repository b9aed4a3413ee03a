/**
 * `trellis import ...`: loads registry and advisory data into a data directory.
 *
 * MERGE POINT (registry developer): replace the action below with a call to
 * `runImport(args)` from src/import/, adding the options it takes. The command, its place in
 * the tree and its exit-code handling (throw CliError/usageError; return normally for 0)
 * are ready here.
 */
import type { Command } from "commander";
import { CliError, EXIT } from "../exit-codes.js";
import type { Io } from "../io.js";

export function registerImport(program: Command, _io: Io): void {
  program
    .command("import")
    .description("import registry and advisory data (not available in this build yet)")
    .allowUnknownOption()
    .argument("[args...]", "passed to the importer")
    .action(() => {
      throw new CliError("`trellis import` is not available in this build", EXIT.failure);
    });
}
