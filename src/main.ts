/**
 * Command-line entry (`bin/trellis.mjs`, `npm start`): builds the commander program from
 * src/cli/ and exits with its code. See docs/cli.md for the commands and exit codes.
 */
import { runCli } from "./cli/program.js";
import { processIo } from "./cli/io.js";

process.exitCode = await runCli(process.argv.slice(2), processIo);
