/**
 * PostgreSQL failures, named by what they mean for a request rather than by PostgreSQL's
 * codes, so that the error module can map them to API codes without knowing the engine
 * (SQLite's failures get the same treatment: one name per meaning, one mapping).
 *
 *   kind           raised by                                         for the caller
 *   unique         23505 unique_violation                            the name or key is taken (ALREADY_EXISTS)
 *   foreign_key    23503 foreign_key_violation                       a parent is gone or a child remains (FAILED_PRECONDITION)
 *   conflict       40001 serialization_failure, 40P01 deadlock       retryable: the transaction may simply be run again
 *   unavailable    class 08 (connection), 57P01-57P03 (shutdown,     the database cannot be reached now (UNAVAILABLE)
 *                  cannot connect now), ECONNREFUSED/ECONNRESET/…,
 *                  a connection that ended mid-query
 *   exhausted      53300 too_many_connections, the pool's acquire    the database or the pool is full (UNAVAILABLE,
 *                  timeout                                           never a hang)
 *   lock_timeout   55P03 lock_not_available (a lock wait past the    another writer holds what this one needs ("busy":
 *                  session's lock_timeout, or the importer's         UNAVAILABLE for a call, the importer stops)
 *                  shorter one)
 *   unstorable_text 22021 character_not_in_repertoire (a NUL in a    the client's text (INVALID_ARGUMENT); the NUL
 *                  text value), 22P05 untranslatable_character      rule and the filters keep it away, this is the backstop
 *
 * Anything else (a syntax error, a check we did not expect) is not a PostgresStorageError:
 * it is a bug, and stays INTERNAL.
 */

export type PostgresFailureKind = "unique" | "foreign_key" | "conflict" | "unavailable" | "exhausted" | "lock_timeout" | "unstorable_text";

/** A PostgreSQL failure with its meaning; `cause` keeps the original error for logs. */
export class PostgresStorageError extends Error {
  constructor(
    readonly kind: PostgresFailureKind,
    message: string,
    /** PostgreSQL's SQLSTATE, or the socket's errno code. */
    readonly code: string | undefined,
    /** The violated constraint or index, for unique and foreign_key. */
    readonly constraint: string | undefined,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "PostgresStorageError";
  }

  /** Running the whole transaction again may succeed (serialization failure, deadlock). */
  get retryable(): boolean {
    return this.kind === "conflict";
  }
}

/** Socket-level failures of reaching the server. */
const UNAVAILABLE_ERRNO = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "ENOTFOUND", "EAI_AGAIN"]);

/**
 * pg-pool's message when no connection frees up within `connectionTimeoutMillis`, and
 * node-postgres' messages when the server or the socket goes away mid-query; they carry no
 * code, so the message is all there is to go by.
 */
const POOL_TIMEOUT = /timeout exceeded when trying to connect/i;
const CONNECTION_LOST = /Connection terminated|Client has encountered a connection error|Connection closed|connection timeout/i;

/** The meaning of `err` when it is a PostgreSQL failure we know, else undefined. */
export function mapPostgresError(err: unknown): PostgresStorageError | undefined {
  if (err instanceof PostgresStorageError) return err;
  if (!(err instanceof Error)) return undefined;
  // drizzle wraps driver errors ("Failed query: …") with the driver's error as the cause.
  const inner = (err as { cause?: unknown }).cause;
  if (inner instanceof Error && !("code" in err)) {
    const mapped = mapPostgresError(inner);
    if (mapped) return mapped;
  }
  const fields = err as Error & { code?: unknown; constraint?: unknown };
  const code = typeof fields.code === "string" ? fields.code : undefined;
  const constraint = fields.constraint;
  const named = typeof constraint === "string" ? constraint : undefined;
  const make = (kind: PostgresFailureKind) => new PostgresStorageError(kind, err.message, code, named, { cause: err });
  if (code === "23505") return make("unique");
  if (code === "23503") return make("foreign_key");
  if (code === "40001" || code === "40P01") return make("conflict");
  if (code === "53300") return make("exhausted");
  if (code === "55P03") return make("lock_timeout");
  if (code === "22021" || code === "22P05") return make("unstorable_text");
  if (code !== undefined && (code.startsWith("08") || code === "57P01" || code === "57P02" || code === "57P03")) return make("unavailable");
  if (code !== undefined && UNAVAILABLE_ERRNO.has(code)) return make("unavailable");
  // Only errors with no code at all: an error of our own (an API error carries a numeric
  // code) must never be taken for a lost connection because of its wording.
  if (fields.code === undefined && POOL_TIMEOUT.test(err.message)) return make("exhausted");
  if (fields.code === undefined && CONNECTION_LOST.test(err.message)) return make("unavailable");
  return undefined;
}
