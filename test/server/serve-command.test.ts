/**
 * `trellis serve` as a real process: the ready line, one port, the data directory lock,
 * graceful SIGTERM, and a restart that keeps the data.
 */
import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import Database from "better-sqlite3";
import { parseServeConfig } from "../../src/server/config.js";
import { databaseFile, openDatabase } from "../../src/store/sqlite/db.js";
import { operatorToken } from "../support/auth.js";

const BIN = path.resolve("bin/trellis.mjs");

interface Running {
  readonly child: ChildProcess;
  readonly url: string;
  stdout: string;
  stderr: string;
  readonly exited: Promise<number | null>;
}

function startServe(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Running> {
  const child = spawn(process.execPath, [BIN, "serve", ...args], {
    env: { ...process.env, TRELLIS_LOG_LEVEL: "warn", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const state = { stdout: "", stderr: "" };
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  child.stderr?.setEncoding("utf8").on("data", (c: string) => {
    state.stderr += c;
  });
  return new Promise((resolve, reject) => {
    child.stdout?.setEncoding("utf8").on("data", (c: string) => {
      state.stdout += c;
      const m = /^listening on (http:\/\/\S+)\n/.exec(state.stdout);
      if (m?.[1]) {
        const url = m[1];
        resolve({
          child,
          url,
          get stdout() {
            return state.stdout;
          },
          get stderr() {
            return state.stderr;
          },
          exited,
        } as Running);
      }
    });
    exited.then((code) => reject(new Error(`serve exited with ${code} before ready: ${state.stderr}`)));
  });
}

async function createGroup(url: string, name: string, token: string) {
  const res = await fetch(`${url}/chainguard.platform.iam.v2beta1.GroupsService/CreateGroup`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: JSON.stringify({ group: { name } }),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as { uid: string; name: string };
}

describe("trellis serve", () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-serve-"));
  afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  it("prints one ready line, refuses a second server on the same data, stops on SIGTERM and keeps data", async () => {
    // A fixed issuer URL (the default is the listen URL, which port 0 changes on restart).
    const issuerEnv = { TRELLIS_ISSUER_URL: "https://trellis.example.test" };
    const first = await startServe(["--addr", "127.0.0.1:0", "--data", dataDir], issuerEnv);
    expect(first.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(first.url).not.toMatch(/:0$/);
    // `trellis auth token --local` reads the data directory while the server holds it.
    const token = await operatorToken(dataDir);
    const g = await createGroup(first.url, "survives restart", token);

    const second = spawn(process.execPath, [BIN, "serve", "--addr", "127.0.0.1:0", "--data", dataDir], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let secondErr = "";
    second.stderr.setEncoding("utf8").on("data", (c: string) => {
      secondErr += c;
    });
    const secondCode = await new Promise<number | null>((resolve) => second.once("exit", resolve));
    expect(secondCode).not.toBe(0);
    expect(secondErr).toMatch(/in use by another Trellis server/);

    first.child.kill("SIGTERM");
    expect(await first.exited).toBe(0);
    expect(first.stdout).toBe(`listening on ${first.url}\n`);

    // Environment variables are the flags' equivalents.
    const again = await startServe([], { TRELLIS_ADDR: "127.0.0.1:0", TRELLIS_DATA: dataDir, ...issuerEnv });
    // Keys live in the database: with the same issuer URL, a token minted before the
    // restart is still accepted.
    const res = await fetch(`${again.url}/chainguard.platform.iam.v2beta1.GroupsService/GetGroup`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body: JSON.stringify({ uid: g.uid }),
    });
    expect(res.status).toBe(200);
    expect((await res.json()).name).toBe("survives restart");
    again.child.kill("SIGINT");
    expect(await again.exited).toBe(0);
  });

  /** Runs `trellis serve` on `dir` expecting a refusal; returns its exit code and stderr. */
  async function refusedServe(dir: string): Promise<{ code: number | null; stderr: string }> {
    const child = spawn(process.execPath, [BIN, "serve", "--addr", "127.0.0.1:0", "--data", dir], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    let stdout = "";
    child.stderr.setEncoding("utf8").on("data", (c: string) => {
      stderr += c;
    });
    child.stdout.setEncoding("utf8").on("data", (c: string) => {
      stdout += c;
    });
    const code = await new Promise<number | null>((resolve) => {
      child.once("exit", resolve);
      // A server that wrongly starts is stopped, so the failing test leaves no process behind.
      child.stdout.on("data", () => stdout.startsWith("listening on") && child.kill("SIGKILL"));
    });
    expect(stdout).toBe(""); // never got as far as listening
    return { code, stderr };
  }

  it("refuses a zero-byte trellis.db instead of re-initialising it with new keys", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-serve-empty-"));
    try {
      fs.writeFileSync(databaseFile(dir), "");
      const { code, stderr } = await refusedServe(dir);
      expect(code).not.toBe(0);
      expect(stderr).toContain(`database ${databaseFile(dir)} is empty (0 bytes)`);
      expect(fs.statSync(databaseFile(dir)).size).toBe(0); // left as it was, for the operator
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("refuses a database migrated by a newer build, naming both", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-serve-newer-"));
    try {
      openDatabase(dir).close();
      // What a newer build's migration leaves: one more applied row, dated after ours.
      const sqlite = new Database(databaseFile(dir));
      const newest = sqlite.prepare("SELECT max(created_at) AS t FROM __drizzle_migrations").get() as { t: number };
      sqlite.prepare("INSERT INTO __drizzle_migrations (hash, created_at) VALUES ('future', ?)").run(Number(newest.t) + 86_400_000);
      sqlite.close();
      const { code, stderr } = await refusedServe(dir);
      expect(code).not.toBe(0);
      expect(stderr).toMatch(/was migrated by a newer Trellis: \d+ migrations applied, the newest dated \S+; this build knows \d+, the newest 0\d{3}_\w+/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("starts at once over a pid lock file of an earlier version naming a live pid (pid 1 in a container)", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-serve-oldlock-"));
    try {
      fs.writeFileSync(path.join(dir, "trellis.lock"), "1\n");
      const running = await startServe(["--addr", "127.0.0.1:0", "--data", dir]);
      // Killed without any chance to clean up, a new server takes the directory at once.
      running.child.kill("SIGKILL");
      await running.exited;
      const next = await startServe(["--addr", "127.0.0.1:0", "--data", dir]);
      expect((await fetch(`${next.url}/iam/v2beta1/groups`)).status).toBe(401); // serving
      next.child.kill("SIGTERM");
      expect(await next.exited).toBe(0);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("logs one start-up and one shutdown line; --metrics-addr serves /metrics apart; on SIGTERM /readyz fails for --drain-seconds while calls are answered", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-ops-"));
    try {
      const running = await startServe(["--addr", "127.0.0.1:0", "--data", dir, "--metrics-addr", "127.0.0.1:0", "--drain-seconds", "1"], {
        TRELLIS_LOG_LEVEL: "info",
      });
      const lineOf = async (msg: string) => {
        // stderr is written asynchronously: wait for the line rather than for a time.
        while (!running.stderr.includes(`"msg":"${msg}"`)) {
          await new Promise((resolve) => running.child.stderr?.once("data", resolve));
        }
        return JSON.parse(running.stderr.split("\n").find((l) => l.includes(`"msg":"${msg}"`)) as string);
      };
      const started = await lineOf("trellis started");
      expect(started).toMatchObject({ listen: running.url, data: databaseFile(dir), issuer: running.url, trustedIdps: [], tls: false });
      expect(started.metrics).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
      expect(started.metrics).not.toContain(running.url);
      const scraped = await fetch(started.metrics);
      expect(await scraped.text()).toContain("trellis_calls_total");
      expect((await fetch(`${running.url}/readyz`)).status).toBe(200);

      running.child.kill("SIGTERM");
      await lineOf("trellis stopping: not ready, draining");
      const ready = await fetch(`${running.url}/readyz`);
      expect([ready.status, await ready.text()]).toEqual([503, '{"status":"not ready","reason":"draining"}']);
      expect((await fetch(`${running.url}/healthz`)).status).toBe(200);
      expect((await fetch(`${running.url}/version`)).status).toBe(200);
      expect(await running.exited).toBe(0);
      expect(running.stderr.match(/"msg":"trellis stopped"/g)).toHaveLength(1);
      expect(running.stderr.match(/"msg":"trellis started"/g)).toHaveLength(1);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("rejects bad flags with a usage message and exit code 2", async () => {
    const child = spawn(process.execPath, [BIN, "serve", "--addr", "nonsense"], { stdio: ["ignore", "pipe", "pipe"] });
    let err = "";
    child.stderr.setEncoding("utf8").on("data", (c: string) => {
      err += c;
    });
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
    expect(code).toBe(2);
    expect(err).toMatch(/--addr must be HOST:PORT/);
    // The new flags are checked by the same parser (in-process: one spawn per case is slow).
    for (const [flag, value, message] of [
      ["--metrics-addr", "nowhere", /--metrics-addr must be HOST:PORT/],
      ["--drain-seconds", "1.5", /--drain-seconds must be a whole number of seconds from 0 to 300/],
      ["--drain-seconds", "301", /--drain-seconds must be a whole number/],
      ["--database", "mysql://u:secret@h/db", /--database \(or TRELLIS_DATABASE\) must be a postgres:\/\/.*got mysql:\/\/u:\*\*\*@h\/db/],
      ["--database", "./data", /--database \(or TRELLIS_DATABASE\) must be a postgres:\/\//],
      ["--db-pool-size", "4", /--db-pool-size applies to a PostgreSQL --database only/],
    ] as const) {
      expect(() => parseServeConfig([flag, value], {}), `${flag} ${value}`).toThrow(message);
    }
    expect(parseServeConfig([], { TRELLIS_METRICS_ADDR: "127.0.0.1:9464", TRELLIS_DRAIN_SECONDS: "5" })).toMatchObject({
      metricsAddr: { host: "127.0.0.1", port: 9464 },
      drainMs: 5000,
    });
    // A PostgreSQL URL from the flag or the environment (the flag wins); its password never
    // reaches an error message.
    const pgUrl = "postgres://trellis:s3cret@db.example:5432/trellis";
    expect(() => parseServeConfig(["--db-pool-size", "0"], { TRELLIS_DATABASE: pgUrl })).toThrow(/--db-pool-size .* from 1 to 1000/);
    expect(parseServeConfig([], { TRELLIS_DATABASE: pgUrl, TRELLIS_DB_POOL_SIZE: "25" })).toMatchObject({ databaseUrl: pgUrl, poolSize: 25 });
    expect(parseServeConfig(["--database", "postgresql://h/other"], { TRELLIS_DATABASE: pgUrl }).databaseUrl).toBe("postgresql://h/other");
    expect(parseServeConfig(["--data", "/srv/trellis"], {})).toEqual(expect.not.objectContaining({ databaseUrl: expect.anything() }));
    expect(() => parseServeConfig(["--database", "not a url s3cret"], {})).toThrow(expect.objectContaining({ message: expect.not.stringContaining("s3cret") }));
  });
});
