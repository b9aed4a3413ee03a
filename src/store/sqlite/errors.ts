/**
 * SQLite's error codes as storage-failure kinds (src/errors/storage-error.ts), registered
 * there as this module loads (every SQLite module that can raise one imports it). better-sqlite3
 * puts the extended code on `err.code` (`SQLITE_BUSY_SNAPSHOT`, `SQLITE_IOERR_WRITE`, …), so
 * families are matched by prefix.
 */
import { registerStorageFailureClassifier, type StorageFailureKind } from "../../errors/storage-error.js";

export function sqliteFailureKind(err: unknown): StorageFailureKind | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== "string" || !code.startsWith("SQLITE_")) return undefined;
  if (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED")) return "busy";
  if (code === "SQLITE_FULL") return "full";
  if (code.startsWith("SQLITE_IOERR") || code.startsWith("SQLITE_READONLY") || code === "SQLITE_CANTOPEN") return "unavailable";
  if (code.startsWith("SQLITE_CORRUPT") || code === "SQLITE_NOTADB") return "corrupt";
  if (code === "SQLITE_CONSTRAINT_UNIQUE" || code === "SQLITE_CONSTRAINT_PRIMARYKEY") return "unique";
  if (code === "SQLITE_CONSTRAINT_FOREIGNKEY") return "foreign-key";
  return undefined;
}

registerStorageFailureClassifier(sqliteFailureKind);
