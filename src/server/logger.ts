/**
 * Logging: pino JSON lines on stderr (stdout carries only the `listening on` line).
 * The per-call line is written by call-pipeline.ts. Request headers are never logged, so a
 * bearer token cannot reach the logs; `redact` is a second guard for any object that does.
 *
 * The redact paths name every object Trellis logs (the line itself and `err`, after pino's
 * error serializer) rather than using a `*.` wildcard: with a wildcard first segment pino runs
 * the redactor on every value of every line, ~6 µs on each call's log line
 * (docs/performance.md), while named paths leave lines without those keys untouched.
 * A new log call that passes another object must add its paths here.
 */
import pino, { type Logger } from "pino";

export type { Logger };

const SECRET_KEYS = ["authorization", "token", "headers.authorization"] as const;

/** Where a credential could sit in a line Trellis writes: at the top, or inside `err`. */
export const REDACT_PATHS: readonly string[] = [...SECRET_KEYS, ...SECRET_KEYS.map((key) => `err.${key}`)];

/** `destination` defaults to stderr; the benchmark passes an in-process counting sink. */
export function createLogger(level: string, destination: pino.DestinationStream = pino.destination({ dest: 2, sync: false })): Logger {
  return pino(
    {
      level,
      base: undefined,
      redact: { paths: [...REDACT_PATHS], censor: "[redacted]" },
    },
    destination,
  );
}
