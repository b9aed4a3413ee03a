/**
 * The `trellis` CLI as a subprocess (bin/trellis.mjs), with its own config directory so the
 * login cache of one test never leaks into another or into the developer's home.
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect } from "vitest";
import { BIN } from "./serve.js";

export interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface CliRunner {
  /** XDG_CONFIG_HOME of this runner; the cache is `<configHome>/trellis/credentials.json`. */
  readonly configHome: string;
  run(args: readonly string[], env?: NodeJS.ProcessEnv): Promise<CliResult>;
  /** Starts the CLI and hands back the process, for flows that need to act while it runs. */
  start(args: readonly string[], env?: NodeJS.ProcessEnv): RunningCli;
  cleanup(): void;
}

export interface RunningCli {
  /** Resolves with the first stderr match of `pattern`. */
  waitForStderr(pattern: RegExp): Promise<RegExpExecArray>;
  readonly done: Promise<CliResult>;
}

/**
 * A runner talking to `api` (TRELLIS_API) with a fresh config dir, and no token in the env
 * unless `env` sets one (e.g. `{ TRELLIS_TOKEN: t.token }`, the test server's operator token).
 */
export function cliRunner(api: string, env: NodeJS.ProcessEnv = {}): CliRunner {
  const configHome = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-cli-"));
  const baseEnv: NodeJS.ProcessEnv = { ...process.env, XDG_CONFIG_HOME: configHome, TRELLIS_API: api };
  // Never a browser, never a token or settings from the developer's shell.
  for (const k of ["DISPLAY", "WAYLAND_DISPLAY", "TRELLIS_TOKEN", "TRELLIS_ADDR", "TRELLIS_DATA", "TRELLIS_CONFIG"]) delete baseEnv[k];
  Object.assign(baseEnv, env);

  const start = (args: readonly string[], env: NodeJS.ProcessEnv = {}): RunningCli => {
    const child = spawn(process.execPath, [BIN, ...args], { env: { ...baseEnv, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    const waiters: { pattern: RegExp; resolve: (m: RegExpExecArray) => void }[] = [];
    child.stdout.setEncoding("utf8").on("data", (c: string) => {
      stdout += c;
    });
    child.stderr.setEncoding("utf8").on("data", (c: string) => {
      stderr += c;
      for (const w of [...waiters]) {
        const m = w.pattern.exec(stderr);
        if (m) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(m);
        }
      }
    });
    const done = new Promise<CliResult>((resolve) => child.once("close", (code) => resolve({ code, stdout, stderr })));
    return {
      done,
      waitForStderr: (pattern) =>
        new Promise((resolve, reject) => {
          const m = pattern.exec(stderr);
          if (m) return resolve(m);
          waiters.push({ pattern, resolve });
          done.then((r) => reject(new Error(`CLI exited ${r.code} before printing ${pattern}: ${r.stderr}`)));
        }),
    };
  };

  return {
    configHome,
    start,
    run: (args, env) => start(args, env).done,
    cleanup: () => fs.rmSync(configHome, { recursive: true, force: true }),
  };
}

/** Runs `trellis args` and asserts it exited 0 (the message names the command and its stderr). */
export async function runOk(cli: CliRunner, args: readonly string[]): Promise<CliResult> {
  const r = await cli.run(args);
  expect(r.code, `trellis ${args.join(" ")}: ${r.stderr}`).toBe(0);
  return r;
}

/** The command's stdout as JSON (for `-o json`). */
export const jsonOut = (r: CliResult) => JSON.parse(r.stdout);
