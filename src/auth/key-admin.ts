/**
 * The operator's side of keys and revocations, done on the data directory rather than through
 * the API (`trellis keys rotate|list`, `trellis tokens revoke --local`): like `trellis auth
 * token --local`, only someone who can open the database file can do it, which is the same
 * trust as holding the data.
 *
 * It writes beside a running server the way `trellis import` does: its own connection, no
 * data-directory lock (WAL lets both in), each change one BEGIN IMMEDIATE transaction that
 * waits at most BUSY_TIMEOUT_MS for the server's write lock (SQLite's busy wait: fine in a
 * CLI, never in the server) and then fails with a message instead of waiting forever. The
 * running server sees the change on its next call (src/store/shared-values.ts).
 */
import fs from "node:fs";
import Database from "better-sqlite3";
import { describePageKeys, PAGE_KEYS_NAME, rotatePageKey, type PageKeyInfo } from "../pagination/page-keys.js";
import { BUSY_TIMEOUT_MS, type Db, databaseFile, openDatabase, writeTransaction } from "../store/db.js";
import { readServerValue } from "../store/server-keys.js";
import { type Revocation, recordRevocation } from "../store/token-revocations.js";
import { loadSigningKeys, rotateSigningKey, SIGNING_KEYS_NAME } from "./signing-keys.js";
import { REVOCATION_RETENTION_MS } from "./token-lifetime.js";

/** One key as `trellis keys list` shows it. */
export interface KeyInfo {
  /** What the key is for: signing API tokens, or sealing page tokens. */
  readonly use: "token-signing" | "page-token";
  /** The signing key's `kid` (as in the JWKS); a page key's public id (a hash prefix). */
  readonly id: string;
  readonly createTime: number;
  /** active: signs/seals new tokens; retiring: still verifies/opens old ones; retired: no longer used, removed at the next rotation. */
  readonly status: "active" | "retiring" | "retired";
  /** When it stops (or stopped) verifying or opening tokens; absent on active keys. */
  readonly retireTime?: number;
}

export type RotateWhich = "all" | "signing" | "page-tokens";

export interface RotateOptions {
  readonly which?: RotateWhich;
  /** Drop every older key at once (a leaked key): tokens it signed fail from the next call. */
  readonly dropPrevious?: boolean;
}

/** Opens the data directory's database for a short operator write; `fn` runs with it. */
function withDatabase<T>(dataDir: string, fn: (db: Db) => T): T {
  const file = databaseFile(dataDir);
  if (!fs.existsSync(file)) throw new Error(`no Trellis database at ${file}; start the server once with --data ${dataDir}`);
  let opened: ReturnType<typeof openDatabase>;
  try {
    opened = openDatabase(dataDir, { lock: false });
  } catch (err) {
    throw busyOr(err, dataDir);
  }
  try {
    if (readServerValue(opened.db, SIGNING_KEYS_NAME) === undefined) {
      throw new Error(`the server has not started on ${dataDir} yet, so there are no keys; start it once`);
    }
    return fn(opened.db);
  } catch (err) {
    throw busyOr(err, dataDir);
  } finally {
    // No TRUNCATE checkpoint (OpenedDatabase.close does one): it would wait for the server's
    // readers while holding off its writers. SQLite's passive checkpoints fold the WAL in.
    opened.db.$client.close();
  }
}

function busyOr(err: unknown, dataDir: string): unknown {
  if (err instanceof Database.SqliteError && err.code.startsWith("SQLITE_BUSY")) {
    return new Error(
      `cannot take the write lock on the database in ${dataDir}: another process is writing to it (still busy after ${BUSY_TIMEOUT_MS} ms). Nothing was changed; try again.`,
    );
  }
  return err;
}

function describeAll(db: Db, now: number): KeyInfo[] {
  const status = (retireTime: number | undefined) => (retireTime === undefined ? "active" : retireTime > now ? "retiring" : "retired");
  const signing = (loadSigningKeys(db)?.all ?? []).map(
    (k): KeyInfo => ({ use: "token-signing", id: k.kid, createTime: k.createTime, status: status(k.retireTime), ...(k.retireTime === undefined ? {} : { retireTime: k.retireTime }) }),
  );
  const page = (readServerValue(db, PAGE_KEYS_NAME) === undefined ? [] : describePageKeys(db)).map(
    (k: PageKeyInfo): KeyInfo => ({ use: "page-token", id: k.id, createTime: k.createTime, status: status(k.retireTime), ...(k.retireTime === undefined ? {} : { retireTime: k.retireTime }) }),
  );
  return [...signing, ...page];
}

/** The keys of the data directory, newest first per use. */
export function listKeys(dataDir: string, now: number = Date.now()): KeyInfo[] {
  return withDatabase(dataDir, (db) => describeAll(db, now));
}

/** Rotates the signing key and/or the page-token key; returns the keys afterwards. */
export function rotateKeys(dataDir: string, options: RotateOptions = {}, now: number = Date.now()): KeyInfo[] {
  const which = options.which ?? "all";
  return withDatabase(dataDir, (db) => {
    if (which !== "page-tokens") rotateSigningKey(db, now, options.dropPrevious ? 0 : undefined);
    if (which !== "signing") rotatePageKey(db, now, options.dropPrevious ? 0 : undefined);
    return describeAll(db, now);
  });
}

/** Records a revocation straight in the database (the operator's path when the API is not at hand). */
export function revokeLocally(dataDir: string, revocation: Revocation, now: number = Date.now()): void {
  withDatabase(dataDir, (db) => writeTransaction(db, (tx) => recordRevocation(tx, revocation, now, REVOCATION_RETENTION_MS)));
}
