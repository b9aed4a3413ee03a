/**
 * Storage failures in engine-neutral terms. Each engine knows its own error codes (SQLite's
 * `SQLITE_*`, src/store/sqlite/errors.ts) and registers a classifier for them here when it is
 * loaded; everything else asks `storageFailureOf` what kind of failure an error is, and
 * to-connect-error.ts maps the kind to a code once. It lives with the errors, below the
 * store, so the error module never imports an engine.
 */

/**
 * - busy: another writer held the lock past the bound (retry later);
 * - full: no room left on the storage;
 * - unavailable: the storage cannot be reached or written (I/O error, read-only, cannot open);
 * - corrupt: the stored data is damaged;
 * - conflict: the write ran into a concurrent one (a serialization failure or a deadlock) and
 *   still did after the engine's own retries; nothing was written, the request may be sent again;
 * - unique / foreign-key: a constraint refused the write (a bug or a race the code did not
 *   expect: the repositories check these first and answer with their own errors);
 * - unstorable-text: the request carried text the engine cannot even take as a value (a NUL,
 *   U+0000, on PostgreSQL). The client's input, not the machine's state; the NUL rule and the
 *   List filters keep it from reaching an engine, so this is the backstop for a path that does not.
 */
export type StorageFailureKind = "busy" | "full" | "unavailable" | "corrupt" | "conflict" | "unique" | "foreign-key" | "unstorable-text";

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

/** Tells the kind of an engine's own driver error, or undefined when it is not one of its. */
export type StorageFailureClassifier = (err: unknown) => StorageFailureKind | undefined;

const classifiers: StorageFailureClassifier[] = [];

/** Called once by each engine's error module as it loads. */
export function registerStorageFailureClassifier(classify: StorageFailureClassifier): void {
  if (!classifiers.includes(classify)) classifiers.push(classify);
}

/** The kind of storage failure `err` is, or undefined when it is not one. */
export function storageFailureOf(err: unknown): StorageFailureKind | undefined {
  if (err instanceof StorageError) return err.kind;
  for (const classify of classifiers) {
    const kind = classify(err);
    if (kind !== undefined) return kind;
  }
  return undefined;
}

/** Failures that say the database cannot be written now, whatever the request. */
export function isUnwritableFailure(kind: StorageFailureKind | undefined): boolean {
  return kind === "busy" || kind === "full" || kind === "unavailable";
}
