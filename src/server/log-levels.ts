/**
 * The levels `trellis serve --log-level` takes: pino's, and silent for none. Its own module so
 * the CLI can offer and check them without loading the server's configuration code.
 */
export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
