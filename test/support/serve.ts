/**
 * `trellis serve` as a child process, for tests that need a real process: signals, crashes,
 * restarts. Resolves once the ready line `listening on <url>` has been printed.
 */
import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";

export const BIN = path.resolve("bin/trellis.mjs");

export interface Running {
  readonly child: ChildProcess;
  readonly url: string;
  readonly stdout: string;
  readonly stderr: string;
  readonly exited: Promise<number | null>;
}

export function startServe(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Running> {
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
        });
      }
    });
    exited.then((code) => reject(new Error(`serve exited with ${code} before ready: ${state.stderr}`)));
  });
}
