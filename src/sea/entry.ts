/**
 * Entry point of the single-file binary (`npm run package`, scripts/package.mjs): the same
 * program as src/main.ts. Node's single-executable applications run one CommonJS script, and
 * CommonJS has no top-level await, so the exit code is set from the promise instead.
 */
import { processIo } from "../cli/io.js";
import { runCli } from "../cli/program.js";

void runCli(process.argv.slice(2), processIo).then((code) => {
  process.exitCode = code;
});
