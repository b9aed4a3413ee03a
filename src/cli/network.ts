/**
 * How the CLI reaches the server, beyond the protocol: the private CA of `--ca-cert`, plain
 * words for network and TLS failures, and retries of idempotent reads.
 *
 * - Trust: `--ca-cert FILE` (or TRELLIS_CA_CERT) adds a PEM CA for every call to the Trellis
 *   server (RPCs, `/version`, the discovery document and the token exchange). Calls to the
 *   identity provider keep the system's trust store.
 * - Failures: a refused connection, an unknown host, a reset, a timeout or a TLS handshake
 *   that fails (untrusted or mismatched certificate, https to a plain-http port) are
 *   UNAVAILABLE (exit 1) with one plain sentence, never connect-node's INTERNAL or UNKNOWN
 *   with a Node error code.
 * - Retries: Get and List calls (idempotent reads) that end UNAVAILABLE are tried again, at
 *   most RETRIES more times, waiting 200 ms, 400 ms, 800 ms (TRELLIS_RETRY_DELAY_MS sets the
 *   first wait; tests make it tiny). Writes are never retried: a create that reached the
 *   server before the connection broke must not run twice.
 */
import fs from "node:fs";
import http from "node:http";
import https from "node:https";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { CliError, EXIT, usageError } from "./exit-codes.js";

/** Retries after the first attempt of a read. */
export const RETRIES = 3;
const DEFAULT_RETRY_DELAY_MS = 200;

let trustedCa: Buffer | undefined;

/** Reads `--ca-cert FILE` once per run; a missing or non-PEM file is a usage error. */
export function useCaCert(file: string | undefined): void {
  if (file === undefined || file === "") return;
  let pem: Buffer;
  try {
    pem = fs.readFileSync(file);
  } catch (err) {
    throw usageError(`cannot read --ca-cert ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  if (!pem.includes("-----BEGIN CERTIFICATE-----")) throw usageError(`--ca-cert ${file} holds no PEM certificate`);
  trustedCa = pem;
}

/** The TLS options for calls to the server: the private CA when one was given. */
export function tlsOptions(): { ca?: Buffer } {
  return trustedCa ? { ca: trustedCa } : {};
}

const NETWORK: Record<string, string> = {
  ECONNREFUSED: "connection refused (is the server running, on this address?)",
  ENOTFOUND: "host not found",
  EAI_AGAIN: "host name lookup failed (temporary)",
  ECONNRESET: "the connection was reset",
  EPIPE: "the connection was closed",
  ETIMEDOUT: "the connection timed out",
  EHOSTUNREACH: "host unreachable",
  ENETUNREACH: "network unreachable",
  ERR_HTTP2_SESSION_ERROR: "the HTTP/2 connection failed",
  ERR_HTTP2_STREAM_CANCEL: "the HTTP/2 stream was cancelled",
  ERR_HTTP2_ERROR: "the HTTP/2 connection failed",
  ERR_HTTP2_GOAWAY_SESSION: "the server closed the HTTP/2 connection",
  UND_ERR_SOCKET: "the connection was closed",
};

const TLS_UNTRUSTED = new Set([
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "UNABLE_TO_GET_ISSUER_CERT",
  "CERT_UNTRUSTED",
]);

/** The Node error code somewhere in `err`'s cause chain. */
function nodeCode(err: unknown): string | undefined {
  for (let e = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string") return code;
  }
  return undefined;
}

/**
 * A plain sentence for a network or TLS failure reaching `origin`, or undefined when `err`
 * is not one (an answer from the server keeps its own code and message).
 */
export function networkFailure(err: unknown, origin: string): string | undefined {
  const code = nodeCode(err);
  if (code === undefined) return undefined;
  if (NETWORK[code]) return `cannot reach ${origin}: ${NETWORK[code]}`;
  if (TLS_UNTRUSTED.has(code)) {
    return `cannot reach ${origin}: TLS: the server's certificate is not trusted (${code}); pass --ca-cert FILE for a private CA`;
  }
  if (code === "CERT_HAS_EXPIRED" || code === "CERT_NOT_YET_VALID") {
    return `cannot reach ${origin}: TLS: the server's certificate is not valid now (${code})`;
  }
  if (code === "ERR_TLS_CERT_ALTNAME_INVALID") {
    return `cannot reach ${origin}: TLS: the server's certificate does not name ${new URL(origin).hostname}`;
  }
  if (code === "EPROTO" || code.startsWith("ERR_SSL_") || code.startsWith("ERR_TLS_")) {
    return `cannot reach ${origin}: the TLS handshake failed (${code}); does the server speak https on this port?`;
  }
  return undefined;
}

/** Turns network and TLS failures of RPCs into UNAVAILABLE with a plain message. */
export function plainNetworkErrors(origin: string): Interceptor {
  return (next) => async (req) => {
    try {
      return await next(req);
    } catch (err) {
      const connectErr = ConnectError.from(err);
      const plain = networkFailure(err, origin) ?? networkFailure(connectErr.cause, origin);
      if (plain === undefined) throw err;
      throw new ConnectError(plain, Code.Unavailable, undefined, undefined, err);
    }
  };
}

/** Retries Get* and List* calls that end UNAVAILABLE (module comment). */
export function retryReads(env: NodeJS.ProcessEnv): Interceptor {
  const configured = Number(env.TRELLIS_RETRY_DELAY_MS);
  const firstDelay = Number.isFinite(configured) && configured >= 0 ? Math.min(configured, 10_000) : DEFAULT_RETRY_DELAY_MS;
  return (next) => async (req) => {
    const read = req.method.methodKind === "unary" && /^(Get|List)/.test(req.method.name);
    for (let attempt = 0; ; attempt++) {
      try {
        return await next(req);
      } catch (err) {
        if (!read || attempt >= RETRIES || ConnectError.from(err).code !== Code.Unavailable) throw err;
        await new Promise((resolve) => setTimeout(resolve, firstDelay * 2 ** attempt));
      }
    }
  };
}

export interface HttpAnswer {
  readonly status: number;
  readonly ok: boolean;
  readonly text: string;
  json(): Promise<unknown>;
}

/**
 * One GET to the Trellis server outside the RPC surface (discovery, exchange, version), with
 * the private CA, no redirects followed, and network failures as a plain CliError (exit 1).
 */
export function httpGet(url: URL, headers: Record<string, string>, timeoutMs = 30_000): Promise<HttpAnswer> {
  const lib = url.protocol === "https:" ? https : http;
  return new Promise<HttpAnswer>((resolve, reject) => {
    const req = lib.request(url, { method: "GET", headers: { accept: "application/json", ...headers }, ...tlsOptions() }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("error", reject);
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        const status = res.statusCode ?? 0;
        resolve({ status, ok: status >= 200 && status < 300, text, json: async () => JSON.parse(text) as unknown });
      });
    });
    req.setTimeout(timeoutMs, () => req.destroy(Object.assign(new Error("timed out"), { code: "ETIMEDOUT" })));
    req.on("error", reject);
    req.end();
  }).catch((err: unknown) => {
    throw new CliError(networkFailure(err, url.origin) ?? `cannot reach ${url.origin}: ${(err as Error).message}`, EXIT.failure);
  });
}
