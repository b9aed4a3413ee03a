/**
 * Where storage is opened: the one entry the server, the CLI's local tools and the importer
 * use, so the choice of engine is made here (today always SQLite in the data directory).
 */
import fs from "node:fs";
import type { StoreEngine } from "./engine.js";
import { BUSY_TIMEOUT_MS, databaseFile } from "./sqlite/db.js";
import { openSqliteEngine, type SqliteAccess } from "./sqlite/engine.js";

export type { StoreEngine } from "./engine.js";

/**
 * - "serve": the server (claims the data directory; one server per directory);
 * - "beside": a tool that writes while a server may run (no claim, short writes);
 * - "read-only": a tool that only reads an existing database.
 */
export type StoreAccess = SqliteAccess;

export interface OpenStoreOptions {
  readonly dataDir: string;
  readonly access?: StoreAccess;
}

/** Opens the store of `dataDir`. @throws Error with a message for the user (a StorageError "busy" when the lock is held). */
export function openStore(options: OpenStoreOptions): StoreEngine {
  return openSqliteEngine(options);
}

/** Where the data of `dataDir` lives, for logs and messages. */
export function storeLocation(dataDir: string): string {
  return databaseFile(dataDir);
}

/** Whether a server has created the store of `dataDir` (tools refuse to start a new one). */
export function storeExists(dataDir: string): boolean {
  return fs.existsSync(databaseFile(dataDir));
}

/** How long a tool's write waits for another writer's lock before it fails "busy" (ms). */
export const TOOL_LOCK_WAIT_MS = BUSY_TIMEOUT_MS;

// `trellis backup` / `trellis restore` copy the SQLite file itself (online backup API).
export { BackupUsageError, backupDatabase, restoreDatabase } from "./sqlite/backup.js";
