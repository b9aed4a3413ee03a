/**
 * The process-level net under `trellis serve` (installed by src/cli/commands/serve.ts, not by
 * startApp: the process belongs to whoever runs it, and tests run many apps in one process).
 *
 * Every door already turns a failure into an answer for its own request (create-app.ts,
 * request-errors.ts), so what reaches these handlers is a bug outside any request, or an
 * error Node emitted with nobody listening. Without handlers Node prints it and exits, taking
 * every other client's call with it. Which ones we keep serving through, and why:
 *
 * - `unhandledRejection`: logged, and the server keeps serving. A promise that rejects with
 *   no handler belongs to an async chain that has already given up control at its last
 *   `await`; the rejection does not unwind through anyone's synchronous code, so nothing
 *   shared was left half-updated by it. At worst one request goes unanswered until its
 *   connection's timeout.
 * - `uncaughtException` raised by Node for one connection or stream (its `ERR_STREAM_*`,
 *   `ERR_HTTP_*`, `ERR_HTTP2_*`, `ERR_SOCKET_*` codes, and system errors of a read or write
 *   on a descriptor: EPIPE, ECONNRESET, ENOSPC…): logged, and the server keeps serving. Node
 *   tears that socket or stream down itself; the state involved is that one connection's.
 * - any other `uncaughtException`: the state is unknown. A synchronous throw unwound out of
 *   a callback from an arbitrary point, maybe half-way through changing something shared
 *   (the write batch, a counter, a cache), and Node's own advice is not to resume. It is
 *   logged as fatal and `onFatal` runs once: serve.ts then stops as on SIGTERM (no new
 *   connections, in-flight calls finish within the grace period, the database is closed so
 *   an open transaction rolls back) and exits with status 1, for the supervisor to restart
 *   it with a clean state. Later ones while stopping are logged only.
 *
 * A fault that repeats (say a log destination that keeps failing) must not turn into a
 * flood of its own lines: at most LINES_PER_SECOND lines a second are written, the rest are
 * counted and the count goes out with the next line written.
 */
import type { EventEmitter } from "node:events";
import type { Logger } from "../observe/logger.js";

const LINES_PER_SECOND = 10;

const CONNECTION_ERROR_PREFIXES = ["ERR_STREAM_", "ERR_HTTP_", "ERR_HTTP2_", "ERR_SOCKET_"];
const DESCRIPTOR_IO_SYSCALLS = new Set(["read", "write", "writev", "shutdown", "close"]);

export interface ProcessGuardOptions {
  readonly log: Logger;
  /** The state is unknown: stop gracefully. Called at most once. */
  readonly onFatal: (err: unknown) => void;
  /** The process (tests pass an emitter of their own). */
  readonly target?: EventEmitter;
  /** Clock for the line limit (tests). */
  readonly now?: () => number;
}

/** True for an error Node raised about one connection or stream (module comment). */
export function isConnectionScoped(err: unknown): boolean {
  if (typeof err !== "object" || err === null) return false;
  const { code, syscall } = err as { code?: unknown; syscall?: unknown };
  if (typeof code !== "string") return false;
  if (CONNECTION_ERROR_PREFIXES.some((p) => code.startsWith(p))) return true;
  return typeof syscall === "string" && DESCRIPTOR_IO_SYSCALLS.has(syscall);
}

/** Installs the handlers; returns a function that removes them. */
export function installProcessGuards(options: ProcessGuardOptions): () => void {
  const target = options.target ?? process;
  const now = options.now ?? Date.now;
  const { log } = options;
  let windowStart = 0;
  let linesInWindow = 0;
  let suppressed = 0;
  let fatalSeen = false;

  /** Writes one line unless this second's budget is spent (then counts it). */
  const report = (level: "error" | "fatal", err: unknown, msg: string): void => {
    const t = now();
    if (t - windowStart >= 1000) {
      windowStart = t;
      linesInWindow = 0;
    }
    if (linesInWindow >= LINES_PER_SECOND && level !== "fatal") {
      suppressed++;
      return;
    }
    linesInWindow++;
    const extra = suppressed > 0 ? { suppressed } : {};
    suppressed = 0;
    log[level]({ err, ...extra }, msg);
  };

  const onRejection = (reason: unknown): void => {
    report("error", reason, "unhandled promise rejection; the server keeps serving");
  };
  const onException = (err: unknown): void => {
    if (isConnectionScoped(err)) {
      report("error", err, "uncaught connection error; the server keeps serving");
      return;
    }
    if (fatalSeen) {
      report("error", err, "uncaught exception while stopping");
      return;
    }
    fatalSeen = true;
    report("fatal", err, "uncaught exception: the server's state is unknown, stopping gracefully to be restarted");
    options.onFatal(err);
  };

  target.on("unhandledRejection", onRejection);
  target.on("uncaughtException", onException);
  return () => {
    target.off("unhandledRejection", onRejection);
    target.off("uncaughtException", onException);
  };
}
