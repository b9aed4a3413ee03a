/**
 * Prometheus metrics (prom-client), served on GET /metrics (probes.ts decides where).
 *
 * Every label has a bounded set of values: service and method come from the descriptors the
 * server registered (an unknown path counts as service and method "unknown"), protocol is one
 * of grpc, grpc-web, connect, rest, code one of the gRPC code names, outcome one of three
 * words. Never a uid, a subject, a group name or a raw path: a client cannot grow the number
 * of series, and the figures say nothing about who called.
 *
 * The per-call cost is kept small because this runs on every call of every door: each
 * wrapped method gets its own recorder at start-up that keeps the labelled children it has
 * used in plain nested objects (protocol, then code), so a call does two property reads, one
 * counter increment and one histogram observation, without prom-client hashing label values.
 * Figures that are already counted elsewhere (in-flight calls, storage and log counters, the
 * database size) are read only when scraped.
 *
 * One registry per App (tests run many in one process); the process metrics (process_*,
 * nodejs_*) live in one registry for the whole process, since there is one process.
 */
import type { DescMethod } from "@bufbuild/protobuf";
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import { logStats } from "../server/logger.js";
import type { StoreHealth } from "../store/engine.js";

/** Seconds; from the fast path's sub-millisecond calls to the longest deadline. */
const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

export type TokenOutcome = "valid" | "rejected" | "missing";

export interface MethodRecorder {
  /** One finished call: its protocol (context.protocolName), gRPC code name and duration. */
  record(protocol: string, code: string, seconds: number): void;
}

export interface Metrics {
  /** Called once per method at start-up; the recorder is what the call path uses. */
  forMethod(method: DescMethod): MethodRecorder;
  /** A request for a path that names no method: counted under service and method "unknown". */
  recordUnknown(protocol: string, code: string): void;
  callStarted(): void;
  callEnded(): void;
  tokenVerified(outcome: TokenOutcome): void;
  /** The text exposition of every metric, with its content type. */
  scrape(): Promise<{ contentType: string; body: string }>;
}

let processRegistry: Registry | undefined;

function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

export function createMetrics(storage: StoreHealth): Metrics {
  const registry = new Registry();
  const calls = new Counter({
    name: "trellis_calls_total",
    help: "Finished RPC and REST calls by service, method, protocol and gRPC code.",
    labelNames: ["service", "method", "protocol", "code"] as const,
    registers: [registry],
  });
  const latency = new Histogram({
    name: "trellis_call_duration_seconds",
    help: "Time from the call entering the pipeline (after its request was decoded) to its answer or error.",
    labelNames: ["service", "method", "protocol"] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  let inFlight = 0;
  new Gauge({
    name: "trellis_calls_in_flight",
    help: "Calls inside the pipeline now.",
    registers: [registry],
    collect() {
      this.set(inFlight);
    },
  });
  const tokens = new Counter({
    name: "trellis_token_verifications_total",
    help: "Calls by what their credential turned out to be: valid (a caller), rejected (UNAUTHENTICATED with a credential), missing (UNAUTHENTICATED without one).",
    labelNames: ["outcome"] as const,
    registers: [registry],
  });
  const tokenChildren = {
    valid: tokens.labels({ outcome: "valid" }),
    rejected: tokens.labels({ outcome: "rejected" }),
    missing: tokens.labels({ outcome: "missing" }),
  };
  // Counters kept by other modules, copied at scrape time (a prom-client Counter cannot be set).
  const mirrored = (name: string, help: string, read: () => number) =>
    new Counter({
      name,
      help,
      registers: [registry],
      collect() {
        this.reset();
        this.inc(read());
      },
    });
  mirrored("trellis_db_transactions_total", "Write transactions committed or failed (group commit batches).", () => storage.stats().transactions);
  mirrored("trellis_db_transaction_seconds_total", "Time spent inside write transactions, BEGIN to COMMIT; divide by trellis_db_transactions_total for the mean.", () => storage.stats().transactionSeconds);
  mirrored("trellis_db_busy_retries_total", "Times a write batch found the write lock taken by another connection and was retried later.", () => storage.stats().busyRetries);
  mirrored("trellis_db_busy_timeouts_total", "Writes that failed because the write lock stayed taken past the bound (UNAVAILABLE STORAGE_BUSY).", () => storage.stats().busyTimeouts);
  mirrored("trellis_log_lines_dropped_total", "Log lines thrown away because the log destination failed or fell behind.", () => logStats.droppedLines);
  new Gauge({
    name: "trellis_db_size_bytes",
    help: "Size of the main database file (pages times page size; the WAL not included).",
    registers: [registry],
    collect() {
      const bytes = storage.sizeBytes();
      if (bytes !== undefined) this.set(bytes);
    },
  });

  const recorderFor = (service: string, method: string): MethodRecorder => {
    const byProtocol: Record<string, { latency: ReturnType<typeof latency.labels>; codes: Record<string, ReturnType<typeof calls.labels>> }> = Object.create(null);
    return {
      record(protocol, code, seconds) {
        let p = byProtocol[protocol];
        if (p === undefined) {
          p = { latency: latency.labels({ service, method, protocol }), codes: Object.create(null) };
          byProtocol[protocol] = p;
        }
        let c = p.codes[code];
        if (c === undefined) {
          c = calls.labels({ service, method, protocol, code });
          p.codes[code] = c;
        }
        c.inc();
        p.latency.observe(seconds);
      },
    };
  };

  return {
    forMethod: (method) => recorderFor(method.parent.typeName, method.name),
    // Rare (a client's mistake), so the labelled lookup is fine here; no latency: nothing ran.
    recordUnknown: (protocol, code) => calls.labels({ service: "unknown", method: "unknown", protocol, code }).inc(),
    callStarted() {
      inFlight++;
    },
    callEnded() {
      inFlight--;
    },
    tokenVerified(outcome) {
      tokenChildren[outcome].inc();
    },
    async scrape() {
      const own = await registry.metrics();
      const proc = await processMetrics().metrics();
      return { contentType: registry.contentType, body: `${own}${proc}` };
    },
  };
}
