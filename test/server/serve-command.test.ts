/**
 * `trellis serve` as a real process: the ready line, one port, the data directory lock,
 * graceful SIGTERM, and a restart that keeps the data.
 */
import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
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

  it("rejects bad flags with a usage message and exit code 2", async () => {
    const child = spawn(process.execPath, [BIN, "serve", "--addr", "nonsense"], { stdio: ["ignore", "pipe", "pipe"] });
    let err = "";
    child.stderr.setEncoding("utf8").on("data", (c: string) => {
      err += c;
    });
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
    expect(code).toBe(2);
    expect(err).toMatch(/--addr must be HOST:PORT/);
  });
});
