/**
 * Logging: pino JSON lines on stderr (stdout carries only the `listening on` line).
 * The per-call line is written by src/server/call-pipeline.ts. Request headers are never logged, so a
 * bearer token cannot reach the logs; `redact` is a second guard for any object that does.
 *
 * The redact paths name every object Trellis logs (the line itself and `err`, after pino's
 * error serializer) rather than using a `*.` wildcard: with a wildcard first segment pino runs
 * the redactor on every value of every line, a cost each call's log line paid
 * (docs/performance.md), while named paths leave lines without those keys untouched.
 * A new log call that passes another object must add its paths here.
 *
 * Logging never blocks or stops the server (see `NonBlockingLogSink`): lines that cannot be
 * written are dropped and counted in `logStats`.
 */
import fs from "node:fs";
import pino, { type Logger } from "pino";

export type { Logger };

const SECRET_KEYS = ["authorization", "token", "headers.authorization"] as const;

/** Where a credential could sit in a line Trellis writes: at the top, or inside `err`. */
export const REDACT_PATHS: readonly string[] = [...SECRET_KEYS, ...SECRET_KEYS.map((key) => `err.${key}`)];

/**
 * Process-wide logging counters (stderr is one per process), for a metrics endpoint to read.
 * `droppedLines`: log lines thrown away because the destination failed or fell too far behind.
 */
export const logStats = { droppedLines: 0 };

/** Writes `data` somewhere; calls back with the error of a failed write (partial writes are its business). */
export type ChunkWriter = (data: string, done: (error: NodeJS.ErrnoException | null) => void) => void;

/** How much unwritten log a sink keeps before it drops new lines: bounds memory while stderr stalls. */
export const MAX_QUEUED_LOG_BYTES = 1024 * 1024;

/** How long a sink waits before retrying a destination that said EAGAIN (a pipe whose reader is slow). */
const RETRY_AGAIN_MS = 20;

/**
 * A pino destination that never blocks the event loop and never throws or emits 'error'.
 *
 * Why not pino.destination (sonic-boom): with stderr on a full file system every write fails
 * with ENOSPC; sonic-boom then stops writing with its buffer stuck, every request hung, and
 * it emits 'error', which nobody handles, so the process died once writing was attempted
 * again. Here a line is either queued (bounded by MAX_QUEUED_LOG_BYTES) and written by one
 * asynchronous write at a time, or dropped and counted; when a write succeeds after drops,
 * one warning line says how many were lost.
 */
export class NonBlockingLogSink implements pino.DestinationStream {
  private queue: string[] = [];
  private queuedBytes = 0;
  private writing = false;
  private droppedSinceLastWrite = 0;
  private readonly idleWaiters: (() => void)[] = [];

  constructor(
    private readonly writeChunk: ChunkWriter,
    private readonly maxQueuedBytes = MAX_QUEUED_LOG_BYTES,
  ) {}

  write(line: string): void {
    if (this.queuedBytes + line.length > this.maxQueuedBytes) {
      this.drop(1);
      return;
    }
    this.queue.push(line);
    this.queuedBytes += line.length;
    if (!this.writing) this.writeQueued();
  }

  /** pino's `logger.flush(cb)`: calls back once everything queued was written or dropped. */
  flush(done?: (err?: Error) => void): void {
    if (!done) return;
    if (!this.writing && this.queue.length === 0) done();
    else this.idleWaiters.push(() => done());
  }

  private drop(lines: number): void {
    this.droppedSinceLastWrite += lines;
    logStats.droppedLines += lines;
  }

  private writeQueued(): void {
    if (this.queue.length === 0) {
      this.writing = false;
      for (const waiter of this.idleWaiters.splice(0)) waiter();
      return;
    }
    this.writing = true;
    const lines = this.queue;
    const chunk = lines.length === 1 ? (lines[0] as string) : lines.join("");
    this.queue = [];
    this.queuedBytes = 0;
    this.writeChunk(chunk, (error) => {
      if (!error) {
        if (this.droppedSinceLastWrite > 0) {
          const dropped = this.droppedSinceLastWrite;
          this.droppedSinceLastWrite = 0;
          // Level 40 = warn, in pino's line format, so log readers see it like any other line.
          const notice = `${JSON.stringify({ level: 40, time: Date.now(), msg: "log lines were dropped: the log destination failed or fell behind", dropped })}\n`;
          this.queue.unshift(notice);
          this.queuedBytes += notice.length;
        }
        this.writeQueued();
        return;
      }
      if (error.code === "EAGAIN" && this.queuedBytes + chunk.length <= this.maxQueuedBytes) {
        // The reader is slow, not gone: try the same lines again shortly.
        this.queue.unshift(...lines);
        this.queuedBytes += chunk.length;
        setTimeout(() => this.writeQueued(), RETRY_AGAIN_MS).unref();
        return;
      }
      this.drop(lines.length);
      this.writeQueued();
    });
  }
}

/** Writes all of `data` to `fd` with asynchronous writes (in libuv's pool, never on the loop). */
export function fdChunkWriter(fd: number): ChunkWriter {
  return (data, done) => {
    const write = (buffer: Buffer) => {
      fs.write(fd, buffer, 0, buffer.length, null, (error, written) => {
        if (error) done(error);
        else if (written < buffer.length) write(buffer.subarray(written));
        else done(null);
      });
    };
    write(Buffer.from(data));
  };
}

/** `destination` defaults to stderr; the benchmark passes an in-process counting sink. */
export function createLogger(level: string, destination: pino.DestinationStream = new NonBlockingLogSink(fdChunkWriter(2))): Logger {
  return pino(
    {
      level,
      base: undefined,
      redact: { paths: [...REDACT_PATHS], censor: "[redacted]" },
    },
    destination,
  );
}
