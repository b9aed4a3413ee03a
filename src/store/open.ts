/**
 * Where storage is opened: the one entry the server, the CLI's local tools and the importer
 * use, so the choice of engine is made here. A `postgres://` URL (`--database`, env
 * TRELLIS_DATABASE) selects PostgreSQL; without one, SQLite in the data directory (`--data`).
 */
import fs from "node:fs";
import type { StoreEngine } from "./engine.js";
import { redactDatabaseUrl, type StoreTarget } from "./target.js";
import { BUSY_TIMEOUT_MS, databaseFile } from "./sqlite/db.js";
import { openSqliteEngine, type SqliteAccess } from "./sqlite/engine.js";

export type { StoreEngine } from "./engine.js";
export { type StoreTarget, storeFlag, storeTargetFrom } from "./target.js";

/**
 * - "serve": the server (SQLite: claims the data directory; one server per directory);
 * - "beside": a tool that writes while a server may run (no claim, short writes);
 * - "read-only": a tool that only reads an existing database.
 * On PostgreSQL there is no claim to take: any number of servers and tools share the database.
 */
export type StoreAccess = SqliteAccess;

export interface OpenStoreOptions extends StoreTarget {
  readonly access?: StoreAccess;
}

/** Tools hold a connection or two; a server's pool is sized by its operator. */
const TOOL_POOL_SIZE = 2;

/**
 * Opens the store `options` names (PostgreSQL: migrated first, once across replicas).
 * @throws Error with a message for the user (a StorageError "busy" when the lock is held,
 *   "unavailable" when PostgreSQL cannot be reached).
 */
export async function openStore(options: OpenStoreOptions): Promise<StoreEngine> {
  if (options.databaseUrl !== undefined) {
    // Loaded on use: a SQLite deployment never needs node-postgres.
    const { openPostgresEngine } = await import("./postgres/engine.js");
    const tool = options.access !== undefined && options.access !== "serve";
    const poolSize = options.poolSize ?? (tool ? TOOL_POOL_SIZE : undefined);
    // A tool never creates the schema (existingOnly): as on SQLite, only a server starts a database.
    return openPostgresEngine(options.databaseUrl, { ...(poolSize === undefined ? {} : { poolSize }), existingOnly: tool });
  }
  return openSqliteEngine(options);
}

/** Where the data of `target` lives, for logs and messages (never a password). */
export function storeLocation(target: StoreTarget): string {
  if (target.databaseUrl !== undefined) return redactDatabaseUrl(target.databaseUrl);
  return databaseFile(target.dataDir);
}

/**
 * Whether a server has created the store of `target` (tools refuse to start a new one). On
 * PostgreSQL that is only known once connected: the tools check for the server's keys instead.
 */
export function storeExists(target: StoreTarget): boolean {
  if (target.databaseUrl !== undefined) return true;
  return fs.existsSync(databaseFile(target.dataDir));
}

/** How long a tool's write waits for another writer's lock before it fails "busy" (ms). */
export const TOOL_LOCK_WAIT_MS = BUSY_TIMEOUT_MS;

// `trellis backup` / `trellis restore` copy the SQLite file itself (online backup API).
export { BackupUsageError, backupDatabase, restoreDatabase } from "./sqlite/backup.js";
