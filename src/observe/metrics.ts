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
 * wrapped method gets its own recorder at start-up that keeps its figures in plain objects
 * and arrays (protocol, then code), so a call does two property reads, two additions and a
 * short walk over the bucket bounds. prom-client is not touched per call: even a labelled
 * child validates and hashes its label values on every `inc` and `observe`, which showed in
 * the profile (docs/performance.md). The figures are handed to prom-client when scraped instead: the call counter
 * through its `collect` hook, the latency histogram as a collector of our own that renders
 * the same values prom-client's Histogram would (test/unit/observe/metrics.test.ts compares
 * the two byte for byte). Figures that are already counted elsewhere (in-flight calls,
 * storage and log counters, the database size) are also read only when scraped.
 *
 * One registry per App (tests run many in one process); the process metrics (process_*,
 * nodejs_*) live in one registry for the whole process, since there is one process.
 */
import type { DescMethod } from "@bufbuild/protobuf";
import { collectDefaultMetrics, Counter, Gauge, Registry } from "prom-client";
import { logStats } from "./logger.js";
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

/** One (service, method, protocol) of the latency histogram: counts per bucket, not cumulative. */
interface LatencySeries {
  readonly labels: { readonly service: string; readonly method: string; readonly protocol: string };
  /** buckets[i]: calls with bounds[i-1] < seconds <= bounds[i]; the last slot: above every bound. */
  readonly buckets: number[];
  sum: number;
  count: number;
}

/** One (service, method, protocol, code) of the call counter. */
interface CallCount {
  readonly labels: { readonly service: string; readonly method: string; readonly protocol: string; readonly code: string };
  n: number;
}

/**
 * A histogram kept in our own arrays, registered with prom-client as a collector: the
 * registry asks it for its values only at scrape time, in the shape prom-client's Histogram
 * produces (one `_bucket` line per bound with cumulative counts, `+Inf`, `_sum`, `_count`,
 * the series' labels shared by its lines), so the exposition is the same text.
 */
function ownHistogram(registry: Registry, name: string, help: string, bounds: readonly number[], series: readonly LatencySeries[]) {
  const bucketName = `${name}_bucket`;
  const forPromString = () => {
    const values: { labels: Record<string, string | number>; sharedLabels: LatencySeries["labels"]; value: number; metricName: string; exemplar?: null }[] = [];
    for (const s of series) {
      let cumulative = 0;
      for (let i = 0; i < bounds.length; i++) {
        cumulative += s.buckets[i] as number;
        values.push({ labels: { le: bounds[i] as number }, sharedLabels: s.labels, value: cumulative, metricName: bucketName, exemplar: null });
      }
      values.push({ labels: { le: "+Inf" }, sharedLabels: s.labels, value: s.count, metricName: bucketName, exemplar: null });
      values.push({ labels: {}, sharedLabels: s.labels, value: s.sum, metricName: `${name}_sum` });
      values.push({ labels: {}, sharedLabels: s.labels, value: s.count, metricName: `${name}_count` });
    }
    return { name, help, type: "histogram" as const, values, aggregator: "sum" as const };
  };
  const collector = { name, help, type: "histogram", aggregator: "sum", get: async () => forPromString(), reset() {} };
  // prom-client's registry takes any object with a name and get(); its type wants a Metric.
  registry.registerMetric(collector as unknown as Parameters<Registry["registerMetric"]>[0]);
}

export function createMetrics(storage: StoreHealth): Metrics {
  const registry = new Registry();
  // Every call's figures, in the order their label sets were first used (the order prom-client
  // would list them in).
  const callCounts: CallCount[] = [];
  const latencySeries: LatencySeries[] = [];
  new Counter({
    name: "trellis_calls_total",
    help: "Finished RPC and REST calls by service, method, protocol and gRPC code.",
    labelNames: ["service", "method", "protocol", "code"] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const c of callCounts) this.inc(c.labels, c.n);
    },
  });
  ownHistogram(
    registry,
    "trellis_call_duration_seconds",
    "Time from the call entering the pipeline (after its request was decoded) to its answer or error.",
    LATENCY_BUCKETS,
    latencySeries,
  );
  let inFlight = 0;
  new Gauge({
    name: "trellis_calls_in_flight",
    help: "Calls inside the pipeline now.",
    registers: [registry],
    collect() {
      this.set(inFlight);
    },
  });
  // Counted here, handed over when scraped (a labelled child would hash its label per call).
  const tokenCounts: Record<TokenOutcome, number> = { valid: 0, rejected: 0, missing: 0 };
  const tokenOutcomesSeen: TokenOutcome[] = []; // in the order first counted, as prom-client lists them
  new Counter({
    name: "trellis_token_verifications_total",
    help: "Calls by what their credential turned out to be: valid (a caller), rejected (UNAUTHENTICATED with a credential), missing (UNAUTHENTICATED without one).",
    labelNames: ["outcome"] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const outcome of tokenOutcomesSeen) this.inc({ outcome }, tokenCounts[outcome]);
    },
  });
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
  mirrored(
    "trellis_db_transactions_total",
    "Write transactions committed or failed (SQLite: group commit batches; PostgreSQL: each attempt, retries included).",
    () => storage.stats().transactions,
  );
  mirrored(
    "trellis_db_transaction_seconds_total",
    "Time spent inside write transactions, BEGIN to COMMIT; divide by trellis_db_transactions_total for the mean.",
    () => storage.stats().transactionSeconds,
  );
  mirrored(
    "trellis_db_busy_retries_total",
    "Writes started over because of another writer: SQLite, a batch that found the write lock taken; PostgreSQL, a transaction aborted as a deadlock victim or serialization failure.",
    () => storage.stats().busyRetries,
  );
  mirrored(
    "trellis_db_busy_timeouts_total",
    "Calls failed UNAVAILABLE STORAGE_BUSY after waiting past the bound: SQLite, for the write lock; PostgreSQL, for a row lock (lock_timeout) or a pool connection.",
    () => storage.stats().busyTimeouts,
  );
  mirrored("trellis_log_lines_dropped_total", "Log lines thrown away because the log destination failed or fell behind.", () => logStats.droppedLines);
  new Gauge({
    name: "trellis_db_size_bytes",
    help: "Size of the stored data: SQLite's main database file (pages times page size, the WAL not included); PostgreSQL's pg_database_size (tables, indexes, TOAST; not the WAL).",
    registers: [registry],
    // Asynchronous, as prom-client allows: on PostgreSQL the size is a query, made only here.
    async collect() {
      const bytes = await storage.sizeBytes();
      if (bytes !== undefined) this.set(bytes);
    },
  });

  const countFor = (service: string, method: string, protocol: string, code: string): CallCount => {
    const c: CallCount = { labels: { service, method, protocol, code }, n: 0 };
    callCounts.push(c);
    return c;
  };
  const lastBucket = LATENCY_BUCKETS.length;
  const recorderFor = (service: string, method: string): MethodRecorder => {
    const byProtocol: Record<string, { latency: LatencySeries; codes: Record<string, CallCount> }> = Object.create(null);
    return {
      record(protocol, code, seconds) {
        let p = byProtocol[protocol];
        if (p === undefined) {
          const latency: LatencySeries = { labels: { service, method, protocol }, buckets: new Array<number>(lastBucket + 1).fill(0), sum: 0, count: 0 };
          latencySeries.push(latency);
          p = { latency, codes: Object.create(null) };
          byProtocol[protocol] = p;
        }
        let c = p.codes[code];
        if (c === undefined) {
          c = countFor(service, method, protocol, code);
          p.codes[code] = c;
        }
        c.n++;
        const l = p.latency;
        // As prom-client: the first bound at or above the value (most calls stop at the first).
        let i = 0;
        while (i < lastBucket && !(seconds <= (LATENCY_BUCKETS[i] as number))) i++;
        l.buckets[i] = (l.buckets[i] as number) + 1;
        l.sum += seconds;
        l.count++;
      },
    };
  };
  const unknownCounts: Record<string, CallCount> = Object.create(null);

  return {
    forMethod: (method) => recorderFor(method.parent.typeName, method.name),
    // No latency for these: nothing ran.
    recordUnknown(protocol, code) {
      const key = `${protocol}\n${code}`;
      let c = unknownCounts[key];
      if (c === undefined) {
        c = countFor("unknown", "unknown", protocol, code);
        unknownCounts[key] = c;
      }
      c.n++;
    },
    callStarted() {
      inFlight++;
    },
    callEnded() {
      inFlight--;
    },
    tokenVerified(outcome) {
      if (tokenCounts[outcome]++ === 0) tokenOutcomesSeen.push(outcome);
    },
    async scrape() {
      const own = await registry.metrics();
      const proc = await processMetrics().metrics();
      return { contentType: registry.contentType, body: `${own}${proc}` };
    },
  };
}
