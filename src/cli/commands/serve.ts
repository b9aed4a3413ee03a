/**
 * `trellis serve`: runs the server. Flags and their environment equivalents are parsed by
 * src/server/config.ts (commander only documents them and collects them), so `npm start`,
 * the container and the tests keep one definition.
 *
 * Prints exactly one line `listening on http://HOST:PORT` on stdout when ready; logs go to
 * stderr. SIGINT/SIGTERM stop gracefully and exit 0. Bad flags: exit 2. An uncaught
 * exception that leaves the server's state unknown stops it the same graceful way and exits
 * 1; unhandled rejections and per-connection errors are logged and it keeps serving
 * (src/server/process-guard.ts says which is which and why).
 */
import { type Command, Option } from "commander";
import { LOG_LEVELS } from "../../server/log-levels.js";
import { EXIT, ExitStatus, usageError } from "../exit-codes.js";
import type { Io } from "../io.js";
import { collect, DATA_FLAG_HELP, DATABASE_FLAG_HELP } from "./common.js";

interface ServeOptions {
  addr?: string;
  data?: string;
  database?: string;
  dbPoolSize?: string;
  tlsCert?: string;
  tlsKey?: string;
  errorDomain?: string;
  logLevel?: string;
  corsOrigin?: string[];
  issuerUrl?: string;
  config?: string;
  metricsAddr?: string;
  drainSeconds?: string;
  v1Sunset?: string;
  rateLimit?: string[];
}

export function registerServe(program: Command, io: Io): void {
  program
    .command("serve")
    .description("run the Trellis server (gRPC, gRPC-web, Connect and REST on one port)")
    // The client options (--api, --token, -o, ...) mean nothing to the server: keep them out of its help.
    .configureHelp({ showGlobalOptions: false })
    .option("--addr <host:port>", "listen address; port 0 picks a free port [env TRELLIS_ADDR, default 127.0.0.1:8080]")
    .option("--data <dir>", DATA_FLAG_HELP)
    .option("--database <url>", `${DATABASE_FLAG_HELP}; any number of servers may share one`)
    .option("--db-pool-size <n>", "with --database: connections this server may hold [env TRELLIS_DB_POOL_SIZE, default 10]")
    .option("--tls-cert <file>", "serve TLS with this certificate (with --tls-key) [env TRELLIS_TLS_CERT]")
    .option("--tls-key <file>", "the certificate's private key [env TRELLIS_TLS_KEY]")
    .option("--error-domain <domain>", "ErrorInfo.domain of every error [env TRELLIS_ERROR_DOMAIN, default iam.chainguard.dev]")
    .addOption(new Option("--log-level <level>", "log level [env TRELLIS_LOG_LEVEL, default info]").choices(LOG_LEVELS))
    .option("--cors-origin <origin>", "browser origin allowed by CORS; repeatable [env TRELLIS_CORS_ORIGINS]", collect)
    .option("--issuer-url <url>", "iss and aud of the API tokens this server issues [env TRELLIS_ISSUER_URL, default the listen URL]")
    .option("--config <file>", "trust configuration: identity providers, registry audience (docs/auth.md) [env TRELLIS_CONFIG]")
    .option("--metrics-addr <host:port>", "serve Prometheus /metrics on this address instead of the API port [env TRELLIS_METRICS_ADDR]")
    .option("--drain-seconds <n>", "on SIGTERM, fail /readyz this long before refusing connections [env TRELLIS_DRAIN_SECONDS, default 0]")
    .option("--v1-sunset <date>", "announce v1's end on its answers, and refuse v1 from this date on (docs/migrating.md) [env TRELLIS_V1_SUNSET]")
    .option(
      "--rate-limit <name=value>",
      "a rate limit: reads, writes, exchange or failed_authentications =POINTS/SECONDS or off, or versions=v2,v2beta1,v1|none; repeatable (docs/rest.md) [env TRELLIS_RATE_LIMITS]",
      collect,
    )
    .action(async (opts: ServeOptions) => {
      // Loaded on use: the server's modules would slow every client command's start.
      const { LIMITS, parseServeConfig } = await import("../../server/config.js");
      const { startApp } = await import("../../server/create-app.js");
      const { logStats } = await import("../../observe/logger.js");
      let config: ReturnType<typeof parseServeConfig>;
      try {
        config = parseServeConfig(toArgs(opts), io.env);
      } catch (err) {
        throw usageError(`trellis serve: ${(err as Error).message}`);
      }
      const { installProcessGuards } = await import("../../server/process-guard.js");
      const app = await startApp(config);
      // Whoever watches stdout may be gone or its disk full: a failed ready line must not stop
      // the server (an unhandled 'error' on process.stdout would), so it is only counted.
      process.stdout.on("error", () => {
        logStats.droppedLines++;
      });
      let fatal = false;
      let removeGuards = () => {};
      const stop = new Promise<void>((resolve) => {
        process.once("SIGINT", resolve);
        process.once("SIGTERM", resolve);
        removeGuards = installProcessGuards({
          log: app.log,
          onFatal: () => {
            fatal = true;
            resolve();
          },
        });
      });
      io.out(`listening on ${app.url}\n`);
      await stop;
      if (fatal) {
        // If the graceful stop itself hangs in the unknown state, leave anyway once the
        // shutdown grace period (and a little more for closing the database) has passed.
        setTimeout(() => process.exit(EXIT.failure), LIMITS.shutdownGraceMs + 5_000).unref();
      }
      await app.close();
      removeGuards();
      if (fatal) throw new ExitStatus(EXIT.failure);
    });
}

/** Back to the argv form parseServeConfig reads (it owns defaults, env and validation). */
function toArgs(opts: ServeOptions): string[] {
  const args: string[] = [];
  const single: [keyof ServeOptions, string][] = [
    ["addr", "--addr"],
    ["data", "--data"],
    ["database", "--database"],
    ["dbPoolSize", "--db-pool-size"],
    ["tlsCert", "--tls-cert"],
    ["tlsKey", "--tls-key"],
    ["errorDomain", "--error-domain"],
    ["logLevel", "--log-level"],
    ["issuerUrl", "--issuer-url"],
    ["config", "--config"],
    ["metricsAddr", "--metrics-addr"],
    ["drainSeconds", "--drain-seconds"],
    ["v1Sunset", "--v1-sunset"],
  ];
  for (const [key, flag] of single) {
    const v = opts[key];
    if (typeof v === "string") args.push(flag, v);
  }
  for (const origin of opts.corsOrigin ?? []) args.push("--cors-origin", origin);
  for (const limit of opts.rateLimit ?? []) args.push("--rate-limit", limit);
  return args;
}
