/**
 * Logging: pino JSON lines on stderr (stdout carries only the `listening on` line).
 * The per-call line is written by call-pipeline.ts. Request headers are never logged, so a
 * bearer token cannot reach the logs; `redact` is a second guard for any object that does.
 */
import pino, { type Logger } from "pino";

export type { Logger };

export function createLogger(level: string): Logger {
  return pino(
    {
      level,
      base: undefined,
      redact: { paths: ["authorization", "*.authorization", "headers.authorization", "token", "*.token"], censor: "[redacted]" },
    },
    pino.destination({ dest: 2, sync: false }),
  );
}
