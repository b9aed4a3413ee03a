/**
 * Server configuration from flags and environment (flags win).
 *
 *   --addr HOST:PORT   TRELLIS_ADDR   default 127.0.0.1:8080 (port 0 picks a free port)
 *   --data DIR         TRELLIS_DATA   default ./data (the SQLite database)
 *   --database URL     TRELLIS_DATABASE      postgres://… : PostgreSQL instead of SQLite (--data unused)
 *   --db-pool-size N   TRELLIS_DB_POOL_SIZE  PostgreSQL connections this replica may hold (default 10)
 *   --tls-cert FILE, --tls-key FILE   TRELLIS_TLS_CERT / TRELLIS_TLS_KEY: serve TLS with ALPN
 *   --error-domain D   TRELLIS_ERROR_DOMAIN  default iam.chainguard.dev (ErrorInfo.domain)
 *   --log-level L      TRELLIS_LOG_LEVEL     default info (pino levels, log-levels.ts; "silent" turns logs off)
 *   --cors-origin O    TRELLIS_CORS_ORIGINS  comma-separated browser origins allowed (default none)
 *   --issuer-url URL   TRELLIS_ISSUER_URL    `iss` and `aud` of our API tokens (default: the listen URL)
 *   --config FILE      TRELLIS_CONFIG        trust configuration (src/auth/trust-config.ts)
 *   --metrics-addr HOST:PORT  TRELLIS_METRICS_ADDR  serve /metrics on its own listener instead of the API port
 *   --drain-seconds N  TRELLIS_DRAIN_SECONDS default 0: on SIGTERM, /readyz fails this long before the listener stops
 *   --v1-sunset DATE   TRELLIS_V1_SUNSET     config `v1_sunset`: v1's deprecation headers, and its end (v1-sunset.ts)
 *   --rate-limit NAME=VALUE (repeatable)  TRELLIS_RATE_LIMITS (space-separated NAME=VALUE)
 *                      config `rate_limits:` (NAME: VALUE): the rate limits (rate-limits.ts)
 *
 * The config file (--config) holds the trust settings (src/auth/trust-config.ts) and the
 * server's own: `v1_sunset`, `rate_limits`. A variable wins over the file, a flag over both.
 */
import { parseArgs } from "node:util";
import { normalizeIssuerUrl } from "../auth/issuer-settings.js";
import { readConfigFile, toTrustConfig, type TrustConfig } from "../auth/trust-config.js";
import { storeTargetFrom } from "../store/open.js";
import { LOG_LEVELS } from "./log-levels.js";
import { DEFAULT_RATE_LIMITS, type RateLimitSettings, withRateLimitSetting } from "./rate-limits.js";
import { parseSunset } from "./v1-sunset.js";

export interface ServerConfig {
  readonly host: string;
  readonly port: number;
  readonly dataDir: string;
  /** postgres://…: the server stores everything there instead of in `dataDir`. */
  readonly databaseUrl?: string;
  /** PostgreSQL: connections this replica's pool may hold. */
  readonly poolSize?: number;
  readonly tls?: { readonly certFile: string; readonly keyFile: string };
  readonly errorDomain: string;
  readonly logLevel: string;
  /** Browser origins allowed by CORS; empty turns CORS off. */
  readonly corsOrigins?: readonly string[];
  /** Issuer URL of our API tokens (also their audience); default the listen URL. */
  readonly issuerUrl?: string;
  /** Trusted identity providers and the registry audience (from --config; none by default). */
  readonly trust?: TrustConfig;
  /** Where /metrics is served instead of the API port (its own plain HTTP listener). */
  readonly metricsAddr?: { readonly host: string; readonly port: number };
  /**
   * On close: how long /readyz (and gRPC health) report not ready while the server still
   * answers everything, so a load balancer stops sending before the listener closes.
   */
  readonly drainMs?: number;
  /** v1's sunset (ms since the epoch): v1 answers carry deprecation headers, and fail from then on. */
  readonly v1SunsetAt?: number;
  /**
   * The rate limits. `trellis serve` always has them (the defaults unless configured);
   * without them (tests of other features) nothing is limited.
   */
  readonly rateLimits?: RateLimitSettings;
}

export const DEFAULT_ERROR_DOMAIN = "iam.chainguard.dev";

/** Pinned transport limits (each guarded by a test). */
export const LIMITS = {
  /** Largest request message, also after decompression (connect readMaxBytes, REST body cap). */
  maxMessageBytes: 1024 * 1024,
  /** Ceiling on a client's deadline (grpc-timeout / connect-timeout-ms). */
  maxTimeoutMs: 60_000,
  /** HTTP/2 streams one connection may have open at once. */
  maxConcurrentStreams: 100,
  /** An HTTP/2 session with no frames for this long is closed gracefully. */
  http2IdleMs: 120_000,
  /** HTTP/1.1: time to receive the request headers, and the whole request. */
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  /** Request header bytes (JWTs fit comfortably). */
  maxHeaderBytes: 16 * 1024,
  /**
   * A connection that sends nothing for this long after accept is closed; so is an HTTP/2
   * session whose first SETTINGS frame has not arrived by then (a partial or lone preface),
   * and a TLS connection whose handshake has not finished.
   */
  firstBytesTimeoutMs: 10_000,
  /** Open connections the server accepts at once; more are closed as soon as they arrive. */
  maxConnections: 4096,
  /**
   * Open connections one peer address may hold at once; more are closed as soon as they
   * arrive. A quarter of the server's cap, so one client cannot take them all; generous because
   * behind a reverse proxy every connection comes from the proxy's address.
   */
  maxConnectionsPerPeer: 1024,
  /** How often Node checks HTTP/1.1 connections against the two timeouts above. */
  connectionsCheckingIntervalMs: 1_000,
  /** In-flight calls get this long to finish on SIGINT/SIGTERM. */
  shutdownGraceMs: 10_000,
  /**
   * A write waits at most this long for another connection's write lock (e.g. `trellis
   * import`), retried on a timer so reads go on meanwhile; then UNAVAILABLE STORAGE_BUSY.
   */
  storageBusyMs: 1_000,
  /**
   * Health: when no write reached the database for this long, a probe write (one header page)
   * checks it can still be written; NOT_SERVING while it cannot.
   */
  storageProbeMs: 5_000,
} as const;

export type Limits = { readonly [K in keyof typeof LIMITS]: number };

/** Parses `serve` flags. @throws Error with a usage message on bad input. */
export function parseServeConfig(argv: readonly string[], env: NodeJS.ProcessEnv): ServerConfig {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      addr: { type: "string" },
      data: { type: "string" },
      database: { type: "string" },
      "db-pool-size": { type: "string" },
      "tls-cert": { type: "string" },
      "tls-key": { type: "string" },
      "error-domain": { type: "string" },
      "log-level": { type: "string" },
      "cors-origin": { type: "string", multiple: true },
      "issuer-url": { type: "string" },
      config: { type: "string" },
      "metrics-addr": { type: "string" },
      "drain-seconds": { type: "string" },
      "v1-sunset": { type: "string" },
      "rate-limit": { type: "string", multiple: true },
    },
    strict: true,
    allowPositionals: false,
  });
  const addr = values.addr ?? env.TRELLIS_ADDR ?? "127.0.0.1:8080";
  const { host, port } = parseAddr(addr);
  const certFile = values["tls-cert"] ?? env.TRELLIS_TLS_CERT;
  const keyFile = values["tls-key"] ?? env.TRELLIS_TLS_KEY;
  const configFile = values.config ?? env.TRELLIS_CONFIG;
  if ((certFile === undefined) !== (keyFile === undefined)) {
    throw new Error("--tls-cert and --tls-key must be given together");
  }
  const store = storeTargetFrom({ data: values.data, database: values.database, poolSize: values["db-pool-size"] }, env);
  const file = configFile ? readServerConfigFile(configFile) : undefined;
  const sunset = values["v1-sunset"] ?? env.TRELLIS_V1_SUNSET ?? file?.v1Sunset;
  let rateLimits = DEFAULT_RATE_LIMITS;
  for (const [name, value] of Object.entries(file?.rateLimits ?? {})) rateLimits = withRateLimitSetting(rateLimits, name, value, `${configFile}: rate_limits`);
  const given = [
    ...(env.TRELLIS_RATE_LIMITS ?? "")
      .split(/\s+/)
      .filter(Boolean)
      .map((item) => ["TRELLIS_RATE_LIMITS", item]),
    ...(values["rate-limit"] ?? []).map((item) => ["--rate-limit", item]),
  ];
  for (const [where, item] of given as [string, string][]) {
    const eq = item.indexOf("=");
    if (eq < 0) throw new Error(`${where} takes NAME=VALUE (e.g. reads=600/60), got ${JSON.stringify(item)}`);
    rateLimits = withRateLimitSetting(rateLimits, item.slice(0, eq), item.slice(eq + 1), where);
  }
  return {
    host,
    port,
    ...store,
    tls: certFile && keyFile ? { certFile, keyFile } : undefined,
    errorDomain: values["error-domain"] ?? env.TRELLIS_ERROR_DOMAIN ?? DEFAULT_ERROR_DOMAIN,
    logLevel: logLevel(values["log-level"] ?? env.TRELLIS_LOG_LEVEL ?? "info"),
    corsOrigins: (values["cors-origin"] ?? env.TRELLIS_CORS_ORIGINS?.split(",") ?? [])
      .flatMap((o) => o.split(","))
      .map((o) => o.trim())
      .filter(Boolean),
    issuerUrl: optionalIssuerUrl(values["issuer-url"] ?? env.TRELLIS_ISSUER_URL),
    trust: file?.trust,
    metricsAddr: optionalMetricsAddr(values["metrics-addr"] ?? env.TRELLIS_METRICS_ADDR),
    drainMs: drainSeconds(values["drain-seconds"] ?? env.TRELLIS_DRAIN_SECONDS) * 1000,
    ...(sunset !== undefined && sunset !== "" && { v1SunsetAt: parseSunset(sunset) }),
    rateLimits,
  };
}

/** The server's own keys of the config file; the rest is the trust configuration. */
const SERVER_KEYS = ["v1_sunset", "rate_limits"] as const;

function readServerConfigFile(file: string): { trust: TrustConfig; v1Sunset?: string; rateLimits?: Record<string, unknown> } {
  const doc = readConfigFile(file);
  if (doc === null || typeof doc !== "object" || Array.isArray(doc)) return { trust: toTrustConfig(doc, file) };
  const rest: Record<string, unknown> = { ...doc };
  for (const key of SERVER_KEYS) delete rest[key];
  const v1Sunset = (doc as Record<string, unknown>).v1_sunset;
  // YAML reads an unquoted 2027-06-30 as a string here (the yaml package's core schema has no
  // timestamps); anything else is an error, as for every other key.
  if (v1Sunset !== undefined && typeof v1Sunset !== "string") throw new Error(`${file}: v1_sunset must be a date (2027-06-30) or an RFC 3339 time`);
  const rateLimits = (doc as Record<string, unknown>).rate_limits;
  if (rateLimits !== undefined && (rateLimits === null || typeof rateLimits !== "object" || Array.isArray(rateLimits))) {
    throw new Error(`${file}: rate_limits must be a mapping (reads: 1200/60, versions: [v2], ...)`);
  }
  return {
    trust: toTrustConfig(rest, file),
    ...(v1Sunset !== undefined && { v1Sunset }),
    ...(rateLimits !== undefined && { rateLimits: rateLimits as Record<string, unknown> }),
  };
}

function optionalMetricsAddr(value: string | undefined): { host: string; port: number } | undefined {
  if (value === undefined || value === "") return undefined;
  try {
    return parseAddr(value);
  } catch {
    throw new Error(`--metrics-addr must be HOST:PORT (got ${JSON.stringify(value)})`);
  }
}

/** Whole seconds, 0 to 300 (longer would outlast any orchestrator's termination grace). */
function drainSeconds(value: string | undefined): number {
  if (value === undefined || value === "") return 0;
  if (!/^\d{1,3}$/.test(value) || Number(value) > 300) {
    throw new Error(`--drain-seconds must be a whole number of seconds from 0 to 300 (got ${JSON.stringify(value)})`);
  }
  return Number(value);
}

/** A level pino knows; anything else would make the logger throw at start-up. */
function logLevel(value: string): string {
  if (!(LOG_LEVELS as readonly string[]).includes(value)) {
    throw new Error(`--log-level (or TRELLIS_LOG_LEVEL) must be one of ${LOG_LEVELS.join(", ")} (got ${JSON.stringify(value)})`);
  }
  return value;
}

/** "HOST:PORT" or "[v6]:PORT". */
export function parseAddr(addr: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(addr);
  const port = m ? Number(m[3]) : Number.NaN;
  if (!m || port > 65535) throw new Error(`--addr must be HOST:PORT (got ${JSON.stringify(addr)})`);
  return { host: m[1] ?? m[2] ?? "127.0.0.1", port };
}

function optionalIssuerUrl(value: string | undefined): string | undefined {
  if (value === undefined || value === "") return undefined;
  try {
    return normalizeIssuerUrl(value);
  } catch (err) {
    throw new Error(`--issuer-url: ${(err as Error).message}`);
  }
}
