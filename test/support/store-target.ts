/**
 * Which database a test server's data directory stands for. Tests name a server's storage by
 * its `dataDir` (to mint an operator token, add a user beside it, read its keys); when the
 * server runs on PostgreSQL, that directory holds nothing, and this map says which database
 * it stands for, so the same test reaches the same data on either engine.
 */
import type { StoreTarget } from "../../src/store/target.js";

const targets = new Map<string, StoreTarget>();

/** Records that the server on `dataDir` stores its data at `target`. */
export function registerTestStore(dataDir: string, target: StoreTarget): void {
  targets.set(dataDir, target);
}

/** Forgets `dataDir` (its server closed). */
export function forgetTestStore(dataDir: string): void {
  targets.delete(dataDir);
}

/** The database of the server on `dataDir`: the one registered, else the directory's SQLite file. */
export function storeOfTestApp(dataDir: string): StoreTarget {
  return targets.get(dataDir) ?? { dataDir };
}

/**
 * The flags that point a `trellis` tool (import, keys, auth token --local, serve) at the
 * database of the server on `dataDir`: `--database URL` on PostgreSQL, else `--data DIR`.
 */
export function storeArgs(dataDir: string): string[] {
  const target = storeOfTestApp(dataDir);
  return target.databaseUrl !== undefined ? ["--database", target.databaseUrl] : ["--data", target.dataDir];
}
