/**
 * The storage engines every repository test runs on: each entry opens a fresh, empty store
 * (migrated; the built-in roles present) through the StoreEngine interface, never through an
 * engine's own connection. A repository test is `describe.each(ENGINES)(...)`, so an engine
 * added here (PostgreSQL) must pass the same suite, the way drizzle runs one suite per driver.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { StoreEngine } from "../../src/store/engine.js";
import { openStore } from "../../src/store/open.js";
import { openPostgresEngine } from "../../src/store/postgres/engine.js";
import { withFreshStatements } from "../../src/store/sqlite/list-query.js";
import { dropPostgresDatabase, newPostgresDatabase, TEST_ENGINE } from "./postgres.js";

/** One engine under test, named in the test titles. */
export interface EngineUnderTest {
  readonly name: string;
  /** A fresh, empty store at time `now` (ms); `close` removes everything it made. */
  open(now: number): Promise<OpenedEngine>;
  /**
   * Runs `call` (a repository List or count, reaching the store before its first await) with
   * the engine's statement and count caches bypassed: the query built afresh with its values
   * inline and run unprepared. The reference a test holds the cached path to; an engine that
   * caches nothing runs `call` as it is.
   */
  uncached<T>(call: () => T): T;
}

export interface OpenedEngine {
  readonly engine: StoreEngine;
  close(): Promise<void>;
}

const sqlite: EngineUnderTest = {
  name: "sqlite",
  async open(now) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-engine-"));
    const engine = await openStore({ dataDir: dir, access: "serve" });
    await engine.ensureBuiltInRoles(now);
    return {
      engine,
      async close() {
        await engine.close();
        fs.rmSync(dir, { recursive: true, force: true });
      },
    };
  },
  uncached: withFreshStatements,
};

const postgres: EngineUnderTest = {
  name: "postgres",
  async open(now) {
    const { url, name } = await newPostgresDatabase("engine", { migrated: true });
    const engine = await openPostgresEngine(url, { poolSize: 4 });
    await engine.ensureBuiltInRoles(now);
    return {
      engine,
      async close() {
        await engine.close();
        await dropPostgresDatabase(name);
      },
    };
  },
  // Nothing is cached on PostgreSQL: every List and count is a fresh query.
  uncached: (call) => call(),
};

/**
 * The engine of this run: SQLite everywhere, PostgreSQL in the vitest project that sets
 * TRELLIS_TEST_ENGINE=postgres (vitest.config.ts), which runs these same files again there.
 */
export const ENGINES: readonly EngineUnderTest[] = TEST_ENGINE === "postgres" ? [postgres] : [sqlite];
