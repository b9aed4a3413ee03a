/**
 * startTestApp: the real server on 127.0.0.1 port 0 with a fresh data directory and an
 * injectable clock. Each test file gets its own world; close() drains and deletes it.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import pino from "pino";
import { afterAll, beforeAll } from "vitest";
import { DEFAULT_ERROR_DOMAIN, type Limits, type ServerConfig } from "../../src/server/config.js";
import { type App, type AppOverrides, startApp } from "../../src/server/create-app.js";
import { databaseFile } from "../../src/store/sqlite/db.js";
import { operatorToken, setDefaultToken } from "./auth.js";
import { dropPostgresDatabase, newPostgresDatabase, TEST_ENGINE } from "./postgres.js";
import { type Seams, seamsForNextApp } from "./seams.js";
import { forgetTestStore, registerTestStore, storeOfTestApp } from "./store-target.js";
import { closeGrpcClients } from "./transports.js";

export interface TestApp {
  readonly app: App;
  readonly url: string;
  readonly dataDir: string;
  /**
   * The server's SQLite file, for the tests about SQLite itself (its file, WAL, locks);
   * reading it throws when the server runs on PostgreSQL. Anything else reads the database
   * through test/support/db.ts, which works on both engines.
   */
  readonly dbFile: string;
  /** The operator token the support clients send by default (see auth.ts). */
  readonly token: string;
  /** Moves the server's clock (ms); starts at the real time. */
  advanceClock(ms: number): void;
  /**
   * Stops the server's clock where it is (advanceClock still moves it), for a test whose
   * figures depend on how much time passed between two calls. Returns what lets it run again.
   */
  freezeClock(): () => void;
  close(): Promise<void>;
}

/**
 * `TRELLIS_TEST_FAST_UNARY=off`: every test server serves gRPC, gRPC-web and Connect through
 * connect-node alone (`fastUnary: false`), unless the test asks otherwise. vitest.config.ts
 * runs test/rpc a second time so (project `rpc-fast-path-off`), so each behaviour those tests
 * prove is proven on both paths a call can take.
 */
export const FAST_UNARY_OFF = process.env.TRELLIS_TEST_FAST_UNARY === "off";

/**
 * What a test may change besides config and limits (the clock stays the test app's own), and
 * what it adds through the server's factories (seams.ts: the test file mocks the factory).
 */
export type TestOverrides = Omit<AppOverrides, "now" | "limits"> & Seams;

export async function startTestApp(config: Partial<ServerConfig> = {}, limits: Partial<Limits> = {}, overrides: TestOverrides = {}): Promise<TestApp> {
  const dataDir = config.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), "trellis-test-"));
  // In the on-postgres project, a server the test did not point anywhere gets a fresh
  // database of its own; its data directory then only names it (store-target.ts).
  const database =
    TEST_ENGINE === "postgres" && config.databaseUrl === undefined && config.dataDir === undefined
      ? await newPostgresDatabase("app", { migrated: true })
      : undefined;
  if (database) registerTestStore(dataDir, { dataDir, databaseUrl: database.url });
  else if (config.databaseUrl !== undefined) registerTestStore(dataDir, { dataDir, databaseUrl: config.databaseUrl });
  let offset = 0;
  let frozenAt: number | undefined;
  const { callHook, dispatchStep, ...appOverrides } = overrides;
  seamsForNextApp({ callHook, dispatchStep });
  const app = await startApp(
    {
      host: "127.0.0.1",
      port: 0,
      dataDir,
      errorDomain: DEFAULT_ERROR_DOMAIN,
      logLevel: "silent",
      ...(database ? { databaseUrl: database.url, poolSize: 4 } : {}),
      ...config,
    },
    { log: pino({ level: "silent" }), ...(FAST_UNARY_OFF ? { fastUnary: false } : {}), ...appOverrides, now: () => (frozenAt ?? Date.now()) + offset, limits },
  );
  const token = await operatorToken(dataDir);
  setDefaultToken(app.url, token);
  return {
    app,
    url: app.url,
    token,
    dataDir,
    get dbFile() {
      if (storeOfTestApp(dataDir).databaseUrl !== undefined) {
        throw new Error("this test server stores its data in PostgreSQL: read it through test/support/db.ts, or run the test on SQLite only");
      }
      return databaseFile(dataDir);
    },
    advanceClock(ms) {
      offset += ms;
    },
    freezeClock() {
      const at = Date.now();
      frozenAt = at;
      return () => {
        // Running again from where it stood, not jumping by the time it was stopped.
        if (frozenAt === at) {
          offset -= Date.now() - at;
          frozenAt = undefined;
        }
      };
    },
    async close() {
      await app.close();
      forgetTestStore(dataDir);
      if (database) await dropPostgresDatabase(database.name);
      if (!config.dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * One server for a whole test file: started in beforeAll, closed (with the cached grpc-js
 * channels) in afterAll. The returned object reads through to it, so it can be a `const` at
 * the top of the file; touching it before beforeAll ran throws.
 */
export function fileTestApp(config: Partial<ServerConfig> = {}, limits: Partial<Limits> = {}): TestApp {
  let started: TestApp | undefined;
  beforeAll(async () => {
    started = await startTestApp(config, limits);
  });
  afterAll(async () => {
    closeGrpcClients();
    await started?.close();
  });
  const get = (): TestApp => {
    if (!started) throw new Error("the file's test app starts in beforeAll");
    return started;
  };
  return {
    get app() {
      return get().app;
    },
    get url() {
      return get().url;
    },
    get dataDir() {
      return get().dataDir;
    },
    get dbFile() {
      return get().dbFile;
    },
    get token() {
      return get().token;
    },
    advanceClock: (ms) => get().advanceClock(ms),
    freezeClock: () => get().freezeClock(),
    close: () => get().close(),
  };
}
