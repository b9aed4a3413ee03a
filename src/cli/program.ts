/**
 * The `trellis` program: commander builds the command tree, this file wires the global
 * options and turns every outcome into one of the documented exit codes (exit-codes.ts).
 *
 * Command groups live one per file in commands/. `trellis import` runs src/import/; `trellis
 * auth token --local` is filled in by the auth module (MERGE POINT in commands/auth.ts).
 */
import { Command, CommanderError, Option } from "commander";
import { DEFAULT_API, PROTOCOLS } from "./client.js";
import { registerAdvisories } from "./commands/advisories.js";
import { registerAuth } from "./commands/auth.js";
import { registerBackup, registerRestore } from "./commands/backup.js";
import { registerCompletion } from "./commands/completion.js";
import { registerDb } from "./commands/db.js";
import { registerIam } from "./commands/iam.js";
import { registerImport } from "./commands/import.js";
import { registerKeys } from "./commands/keys.js";
import { registerRegistry } from "./commands/registry.js";
import { registerServe } from "./commands/serve.js";
import { registerVersion } from "./commands/version.js";
import { trellisVersion } from "../version.js";
import { EXIT, ExitStatus } from "./exit-codes.js";
import type { Io } from "./io.js";
import { useCaCert } from "./network.js";
import { OUTPUT_FORMATS } from "./output.js";
import { describeError } from "./rpc-errors.js";

/** Commands that work on a data directory and call no server (no CA certificate needed). */
const LOCAL_COMMANDS = new Set(["serve", "import", "backup", "restore", "copy"]);

/** The whole command tree, writing through `io`. */
export function buildProgram(io: Io): Command {
  const program = new Command("trellis")
    .description("Trellis: the IAM, registry and advisories server, and its command-line client")
    .addOption(new Option("--api <url>", `Trellis API URL (default: ${DEFAULT_API})`).env("TRELLIS_API"))
    .addOption(new Option("--token <token>", "API token to send (else TRELLIS_TOKEN, else the login cache)"))
    .addOption(new Option("--protocol <protocol>", "wire protocol for API calls").choices(PROTOCOLS).default("connect"))
    .addOption(new Option("-o, --output <format>", "output format (default: table on a terminal, json otherwise)").choices(OUTPUT_FORMATS))
    .addOption(new Option("--ca-cert <file>", "PEM CA certificate(s) to trust for an https:// server with a private CA").env("TRELLIS_CA_CERT"))
    .showHelpAfterError("(run with --help for usage)")
    .configureHelp({ showGlobalOptions: true, sortSubcommands: false })
    .configureOutput({ writeOut: io.out, writeErr: io.err })
    // The client's version only (no network); `trellis version` also asks the server.
    .version(trellisVersion(), "-V, --version", "print the client's version")
    .exitOverride()
    // Before a client command runs: the CA it may need for its calls (network.ts). The server
    // and the importer call no server, so a stale TRELLIS_CA_CERT never stops them.
    .hook("preAction", (_program, action) => {
      if (!LOCAL_COMMANDS.has(action.name())) useCaCert(action.optsWithGlobals<{ caCert?: string }>().caCert);
    });

  registerServe(program, io);
  registerAuth(program, io);
  registerIam(program, io);
  registerRegistry(program, io);
  registerAdvisories(program, io);
  registerImport(program, io);
  registerBackup(program, io);
  registerRestore(program, io);
  registerDb(program, io);
  registerKeys(program, io);
  registerCompletion(program, io);
  registerVersion(program, io);
  return program;
}

/** Runs `trellis <argv>` and resolves to the exit code (never throws). */
export async function runCli(argv: readonly string[], io: Io): Promise<number> {
  const program = buildProgram(io);
  try {
    if (argv.length === 0) {
      program.outputHelp({ error: true });
      return EXIT.usage;
    }
    await program.parseAsync([...argv], { from: "user" });
    return EXIT.ok;
  } catch (err) {
    if (err instanceof ExitStatus) return err.status;
    if (err instanceof CommanderError) {
      // Commander already printed the help or the usage message.
      return err.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    const { text, exitCode } = describeError(err);
    io.err(`${text}\n`);
    return exitCode;
  }
}
