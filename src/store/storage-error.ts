/**
 * Storage failures in engine-neutral terms. Each engine knows its own error codes (SQLite's
 * `SQLITE_*`, src/store/sqlite/errors.ts); everything outside src/store/ asks `storageFailureOf`
 * what kind of failure an error is, and the error module maps the kind to a code once
 * (src/errors/to-connect-error.ts).
 */
import { sqliteFailureKind } from "./sqlite/errors.js";

/**
 * - busy: another writer held the lock past the bound (retry later);
 * - full: no room left on the storage;
 * - unavailable: the storage cannot be reached or written (I/O error, read-only, cannot open);
 * - corrupt: the stored data is damaged;
 * - unique / foreign-key: a constraint refused the write (a bug or a race the code did not
 *   expect: the repositories check these first and answer with their own errors).
 */
export type StorageFailureKind = "busy" | "full" | "unavailable" | "corrupt" | "unique" | "foreign-key";

/** A storage failure an engine raised on purpose, with its kind. */
export class StorageError extends Error {
  constructor(
    readonly kind: StorageFailureKind,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "StorageError";
  }
}

/** The kind of storage failure `err` is, or undefined when it is not one. */
export function storageFailureOf(err: unknown): StorageFailureKind | undefined {
  if (err instanceof StorageError) return err.kind;
  return sqliteFailureKind(err);
}

/** Failures that say the database cannot be written now, whatever the request. */
export function isUnwritableFailure(kind: StorageFailureKind | undefined): boolean {
  return kind === "busy" || kind === "full" || kind === "unavailable";
}
