/**
 * Which database a test server's data directory stands for. Tests name a server's storage by
 * its `dataDir` (to mint an operator token, add a user beside it, read its keys); when the
 * server runs on PostgreSQL, that directory holds nothing, and this map says which database
 * it stands for, so the same test reaches the same data on either engine.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { StoreTarget } from "../../src/store/target.js";
import { dropPostgresDatabase, newPostgresDatabase, TEST_ENGINE } from "./postgres.js";

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

/** A store of its own for a server process a test starts itself (`trellis serve ...args`). */
export interface ChildStore {
  readonly dataDir: string;
  /** `--data DIR`, or on PostgreSQL `--database URL`: what `serve` and the local tools take. */
  readonly args: string[];
  /** Deletes the directory (and drops the database). */
  remove(): Promise<void>;
}

/**
 * A fresh store on this run's engine for a `trellis serve` child: an empty data directory,
 * and in the on-postgres project an empty database of its own as well. It is registered, so
 * operatorToken(dataDir) and storeArgs(dataDir) reach it as they reach a startTestApp server.
 */
export async function freshChildStore(label: string): Promise<ChildStore> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `trellis-${label}-`));
  const database = TEST_ENGINE === "postgres" ? await newPostgresDatabase(label, { migrated: true }) : undefined;
  if (database) registerTestStore(dataDir, { dataDir, databaseUrl: database.url });
  return {
    dataDir,
    args: storeArgs(dataDir),
    async remove() {
      forgetTestStore(dataDir);
      if (database) await dropPostgresDatabase(database.name);
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
