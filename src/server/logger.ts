/**
 * Logging: pino JSON lines on stderr (stdout carries only the `listening on` line).
 * The per-call line is written by call-pipeline.ts. Request headers are never logged, so a
 * bearer token cannot reach the logs; `redact` is a second guard for any object that does.
 */
import pino, { type Logger } from "pino";

export type { Logger };

/** `destination` defaults to stderr; the benchmark passes an in-process counting sink. */
export function createLogger(level: string, destination: pino.DestinationStream = pino.destination({ dest: 2, sync: false })): Logger {
  return pino(
    {
      level,
      base: undefined,
      redact: { paths: ["authorization", "*.authorization", "headers.authorization", "token", "*.token"], censor: "[redacted]" },
    },
    destination,
  );
}
