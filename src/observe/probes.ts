/**
 * The operator's endpoints, answered in the front door before any door and without
 * authentication (a kubelet or a Prometheus scraper holds no token):
 *
 *   GET /healthz  200 {"status":"ok"}: the process answers requests (liveness).
 *   GET /readyz   200 {"status":"ready"}, or 503 {"status":"not ready","reason":…} while the
 *                 server is draining or its database cannot be written (readiness).
 *   GET /metrics  Prometheus text (metrics.ts), unless `--metrics-addr` moved it to its own
 *                 listener (then this port answers /metrics like any unknown path).
 *
 * The bodies are fixed strings: they say nothing about the data, the configuration or the
 * error behind a failure (the log says that). Only exact paths with GET or HEAD are taken,
 * anything else goes on to the doors as before. Nothing here is logged per request.
 */
import http from "node:http";
import type http2 from "node:http2";
import type { Metrics } from "./metrics.js";

// What the listener hands the front door on either HTTP version (spelled here, not imported
// from the server, which sits above this module).
type NodeRequest = http.IncomingMessage | http2.Http2ServerRequest;
type NodeResponse = http.ServerResponse | http2.Http2ServerResponse;

/** Undefined when ready, else the short reason readiness fails. */
export type Readiness = () => "draining" | "database not writable" | undefined;

const HEALTHY = Buffer.from('{"status":"ok"}');
const READY = Buffer.from('{"status":"ready"}');
const NOT_READY = {
  draining: Buffer.from('{"status":"not ready","reason":"draining"}'),
  "database not writable": Buffer.from('{"status":"not ready","reason":"database not writable"}'),
} as const;

function sendJson(req: NodeRequest, res: NodeResponse, status: number, body: Buffer): void {
  res.writeHead(status, { "content-type": "application/json", "content-length": String(body.length), "cache-control": "no-store" });
  if (req.method === "HEAD") res.end();
  else res.end(body);
}

function sendMetrics(req: NodeRequest, res: NodeResponse, metrics: Metrics, onError: (err: unknown) => void): void {
  metrics.scrape().then(
    ({ contentType, body }) => {
      res.writeHead(200, { "content-type": contentType, "content-length": String(Buffer.byteLength(body)), "cache-control": "no-store" });
      if (req.method === "HEAD") res.end();
      else res.end(body);
    },
    (err: unknown) => {
      onError(err);
      if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
      res.end();
    },
  );
}

/** True when the request was an operator endpoint and is answered. */
export type OpsEndpoints = (req: NodeRequest, res: NodeResponse) => boolean;

export function createOpsEndpoints(options: {
  readonly readiness: Readiness;
  /** Undefined when /metrics is served elsewhere (--metrics-addr). */
  readonly metrics: Metrics | undefined;
  readonly onMetricsError: (err: unknown) => void;
}): OpsEndpoints {
  const { readiness, metrics, onMetricsError } = options;
  return (req, res) => {
    const url = req.url;
    // Cheap for every other request: most API paths are longer than the longest of these.
    if (url === undefined || url.length > 8 || (req.method !== "GET" && req.method !== "HEAD")) return false;
    if (url === "/healthz") {
      sendJson(req, res, 200, HEALTHY);
      return true;
    }
    if (url === "/readyz") {
      const reason = readiness();
      sendJson(req, res, reason === undefined ? 200 : 503, reason === undefined ? READY : NOT_READY[reason]);
      return true;
    }
    if (url === "/metrics" && metrics) {
      sendMetrics(req, res, metrics, onMetricsError);
      return true;
    }
    return false;
  };
}

/**
 * /metrics on its own plain HTTP listener (`--metrics-addr`), e.g. on a loopback or internal
 * address so the figures are not reachable from where the API is. It answers /metrics and
 * 404s everything else.
 */
export async function listenMetrics(
  host: string,
  port: number,
  metrics: Metrics,
  onMetricsError: (err: unknown) => void,
): Promise<{ readonly url: string; close(): Promise<void> }> {
  const server = http.createServer({ headersTimeout: 10_000, requestTimeout: 30_000 }, (req, res) => {
    if ((req.method === "GET" || req.method === "HEAD") && req.url === "/metrics") {
      sendMetrics(req, res, metrics, onMetricsError);
      return;
    }
    res.writeHead(404, { "content-type": "text/plain", "content-length": "0" });
    res.end();
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address() as import("node:net").AddressInfo;
  const hostForUrl = address.address.includes(":") ? `[${address.address}]` : address.address;
  return {
    url: `http://${hostForUrl}:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
