/**
 * The control channel between the bench runner and a target process (Node IPC, `process.send`).
 *
 * The runner asks each target for its own CPU time (`process.cpuUsage()`, which covers every
 * thread of the process: V8's GC and compiler threads included) before and after a run, so
 * "server CPU per request" is measured inside the server, not guessed from the outside.
 */

/** Calls seen by the target's call pipeline, counted from its log lines: "Service/Method CODE" → n. */
export type CallCounts = Record<string, number>;

export interface Usage {
  /** user + system CPU time of the whole process, µs. */
  readonly cpuUs: number;
  /** Peak resident set size so far, KiB (getrusage ru_maxrss). */
  readonly maxRssKb: number;
  readonly calls: CallCounts;
}

export type ControlRequest =
  | { readonly id: number; readonly op: "usage" }
  | { readonly id: number; readonly op: "profile-start" }
  | { readonly id: number; readonly op: "profile-stop"; readonly file: string }
  | { readonly id: number; readonly op: "raw"; readonly task: RawTask; readonly seconds: number };

/** In-process ceilings measured by the `raw` target (see raw.ts). */
export type RawTask =
  | { readonly kind: "query-json"; readonly sql: string; readonly params: readonly (string | number)[] }
  | { readonly kind: "insert-full" }
  /**
   * The two auth hooks for one GetGroup call with an already-verified operator token;
   * `guarded`: with the rate limits' failed-authentication guard around authentication, as
   * `trellis serve` runs them (src/server/rate-limits.ts).
   */
  | { readonly kind: "auth-hooks"; readonly guarded?: boolean }
  /** The rate-limit hook of a limited read (v2 GetGroup), one caller, never over its quota. */
  | { readonly kind: "limit-hook" }
  /** PostgreSQL: the same count kept in the database by rate-limiter-flexible's PostgreSQL store. */
  | { readonly kind: "pg-limit" }
  /** PostgreSQL (raw-pg.ts): one prepared query through node-postgres, its rows to JSON. */
  | { readonly kind: "pg-query-json"; readonly sql: string; readonly params: readonly (string | number)[] }
  /** PostgreSQL: single-row autocommit INSERTs into a copy of the groups table, from `connections` clients at once. */
  | { readonly kind: "pg-insert"; readonly connections: number };

export interface RawResult {
  readonly ops: number;
  readonly seconds: number;
  readonly cpuUs: number;
}

export type ControlReply =
  | { readonly id: number; readonly ok: true; readonly usage?: Usage; readonly raw?: RawResult }
  | { readonly id: number; readonly ok: false; readonly error: string };

/** Sent once by a target when it accepts connections. */
export interface ReadyMessage {
  readonly op: "ready";
  readonly url: string;
}
