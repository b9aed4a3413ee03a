/**
 * Command-line entry: `trellis serve [--addr HOST:PORT] [--data DIR] ...` (also `npm start`),
 * `trellis import ...` (src/import/run-import.ts) and `trellis auth token --local` (an
 * operator token from the data directory, src/auth/local-token.ts).
 *
 * Prints exactly one line `listening on http://HOST:PORT` on stdout when ready; logs go to
 * stderr. SIGINT/SIGTERM stop gracefully and exit 0.
 */
import { parseArgs } from "node:util";
import { mintLocalOperatorToken } from "./auth/local-token.js";
import { runImport } from "./import/run-import.js";
import { parseServeConfig } from "./server/config.js";
import { startApp } from "./server/create-app.js";

const USAGE = `usage: trellis serve [--addr HOST:PORT] [--data DIR] [--tls-cert FILE --tls-key FILE]
                     [--error-domain DOMAIN] [--log-level LEVEL] [--cors-origin ORIGIN ...]
                     [--issuer-url URL] [--config trellis.yaml]
       trellis import [--data DIR] [--group UID] [--quiet] FILE|DIR...
       trellis auth token --local [--data DIR] [--subject NAME] [--ttl SECONDS]`;

async function main(argv: string[]): Promise<number> {
  const [command = "serve", ...rest] = argv;
  switch (command) {
    case "serve":
      return serve(rest);
    case "auth":
      return authCommand(rest);
    case "import":
      return runImport(rest);
    case "help":
    case "--help":
    case "-h":
      process.stdout.write(`${USAGE}\n`);
      return 0;
    default:
      process.stderr.write(`trellis: unknown command ${JSON.stringify(command)}\n${USAGE}\n`);
      return 2;
  }
}

async function serve(args: string[]): Promise<number> {
  if (args.includes("--help") || args.includes("-h")) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  let config: ReturnType<typeof parseServeConfig>;
  try {
    config = parseServeConfig(args, process.env);
  } catch (err) {
    process.stderr.write(`trellis serve: ${(err as Error).message}\n${USAGE}\n`);
    return 2;
  }
  const app = await startApp(config);
  process.stdout.write(`listening on ${app.url}\n`);
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
  });
  await app.close();
  return 0;
}

/** `trellis auth token --local ...`: prints an operator token and nothing else. */
async function authCommand(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  let values: { local?: boolean; data?: string; subject?: string; ttl?: string };
  try {
    ({ values } = parseArgs({
      args: rest,
      options: { local: { type: "boolean" }, data: { type: "string" }, subject: { type: "string" }, ttl: { type: "string" } },
      strict: true,
    }));
    if (sub !== "token" || !values.local) throw new Error("only `auth token --local` is supported");
  } catch (err) {
    process.stderr.write(`trellis auth: ${(err as Error).message}\n${USAGE}\n`);
    return 2;
  }
  const ttl = values.ttl === undefined ? undefined : Number(values.ttl);
  if (ttl !== undefined && !(Number.isInteger(ttl) && ttl > 0)) {
    process.stderr.write("trellis auth: --ttl must be a positive number of seconds\n");
    return 2;
  }
  const token = await mintLocalOperatorToken({
    dataDir: values.data ?? process.env.TRELLIS_DATA ?? "./data",
    subject: values.subject,
    ttlSeconds: ttl,
  });
  process.stdout.write(`${token}\n`);
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`trellis: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
