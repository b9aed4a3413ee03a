/**
 * What a load generator is asked to send and what it reports. One request description
 * drives wrk (Lua script), h2load (flags and a body file) and the Node fallback loader alike.
 */

export interface RequestSpec {
  /** h1: HTTP/1.1 keep-alive; h2: HTTP/2 cleartext with prior knowledge (as gRPC clients do). */
  readonly proto: "h1" | "h2";
  readonly method: "GET" | "POST";
  /** Path and query, e.g. /iam/v2beta1/groups/<uid>. */
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: Buffer;
  /**
   * POST bodies that must differ per request (CreateGroup): JSON text in which NAME is
   * replaced by a name unique within the whole bench run.
   */
  readonly uniqueNameBody?: string;
  /**
   * How success is recognised: `http` a 2xx status; `grpc` also grpc-status 0 (header or
   * trailer); `grpc-web` also a trailer frame saying grpc-status:0 in the body.
   */
  readonly success: "http" | "grpc" | "grpc-web";
}

export interface LoadOptions {
  readonly seconds: number;
  /** HTTP/1.1: connections. HTTP/2: connections × streams per connection. */
  readonly connections: number;
  readonly streams: number;
  /** Unique per run: prefixes the generated names of uniqueNameBody. */
  readonly runId: string;
  /** Where scripts, body files and logs may be written. */
  readonly workDir: string;
  /** CPU list for `taskset -c`, or undefined to leave the generator unpinned. */
  readonly cpu?: string;
}

export interface LoadResult {
  /** Completed requests (successful or not). */
  readonly requests: number;
  readonly seconds: number;
  readonly rps: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** Requests the generator saw fail: non-2xx, socket errors, bad gRPC(-web) status it can see. */
  readonly errors: number;
  /** What the errors were, e.g. "non-2xx 3, socket timeout 2" (absent when none). */
  readonly errorDetail?: string;
}

/** "a 1, b 2" of the non-zero counts, or undefined. */
export function detail(counts: Readonly<Record<string, number>>): string | undefined {
  const parts = Object.entries(counts)
    .filter(([, n]) => n > 0)
    .map(([k, n]) => `${k} ${n}`);
  return parts.length > 0 ? parts.join(", ") : undefined;
}

export interface LoadGenerator {
  readonly name: string;
  run(url: string, spec: RequestSpec, options: LoadOptions): Promise<LoadResult>;
}

/** p-th percentile (0..100) of an ascending array. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i] as number;
}
