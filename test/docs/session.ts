/**
 * A reader's terminal, for the docs runners (docs.test.ts, test/postgres/scale-out-docs.test.ts):
 * a working directory that looks like the checkout, blocks run one after another in what
 * behaves as one bash session, and the processes each block leaves behind.
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { PREAMBLE, toScript } from "./shell-blocks.js";

export const ROOT = path.resolve(".");

/**
 * What of the checkout a reader's commands touch: `npm start` (package.json, scripts/ and the
 * dist/ it compiles into, node_modules), `node dist/src/main.js`, `node bin/trellis.mjs`, and
 * the sample feed. Each is a link to this checkout, so `npm start` compiles this checkout's
 * sources; the directory's own `./data` stays the run's.
 */
const CHECKOUT_ENTRIES = ["package.json", "node_modules", "scripts", "dist", "bin", "examples"];

export function makeReaderCheckout(dir: string): void {
  for (const entry of CHECKOUT_ENTRIES) fs.symlinkSync(path.join(ROOT, entry), path.join(dir, entry));
}

/**
 * The script for one block of a session: the preamble, the variables and directory the
 * blocks before it left (`state`, a file), the block, then what it leaves for the next. Every
 * shell variable the block set is carried (as `declare -p` writes it), not only exported
 * ones: a reader's terminal keeps them all, so a block that reuses a name an earlier one set
 * sees that value here too. Bash's own variables are not carried.
 */
export function sessionScript(block: string, state: string): string {
  const file = JSON.stringify(state);
  return `__docs_base=" $(compgen -v | tr '\\n' ' ') "
${PREAMBLE}if [ -f ${file} ]; then . ${file}; fi
${toScript(block)}
{
  for __docs_v in $(compgen -v); do
    case "$__docs_v" in __docs_*|BASH*|FUNCNAME|PIPESTATUS|GROUPS|_) continue ;; esac
    case "$__docs_base" in *" $__docs_v "*) continue ;; esac
    declare -p "$__docs_v"
  done
  printf 'cd %q\\n' "$PWD"
} > ${file}
`;
}

export interface BlockRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  /** `ps` lines of the processes the script started that were still running after it ended. */
  readonly survivors: readonly string[];
}

/**
 * Runs `script` in bash, in a process group of its own. A server a block starts in the
 * background and stops again is gone when the block ends; one that outlives it (a `kill` that
 * stopped a wrapper, not the server) is still in the group: it is reported in `survivors`,
 * then ended, so the run leaves nothing behind either way.
 */
export function runInGroup(script: string, cwd: string, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<BlockRun> {
  return new Promise((resolve) => {
    const child = spawn("bash", ["-c", script], { cwd, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    const group = child.pid as number;
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    const timer = setTimeout(() => signalGroup(group, "SIGKILL"), timeoutMs);
    child.once("close", async (code) => {
      clearTimeout(timer);
      const survivors = await leftInGroup(group);
      if (survivors.length > 0) signalGroup(group, "SIGKILL");
      resolve({ code, stdout, stderr, survivors });
    });
  });
}

export function signalGroup(group: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-group, signal);
  } catch {
    // nothing of the group is left
  }
}

/**
 * The processes still in `group`. A process that was sent SIGTERM by the block and has not
 * quite exited yet is given up to 5 s (polled, not slept through: a process that is gone is
 * seen at once).
 */
export async function leftInGroup(group: number): Promise<string[]> {
  for (let waited = 0; ; waited += 50) {
    const lines = await psGroup(group);
    if (lines.length === 0 || waited >= 5000) return lines;
    await new Promise((r) => setTimeout(r, 50));
  }
}

function psGroup(group: number): Promise<string[]> {
  return new Promise((resolve) => {
    const ps = spawn("ps", ["-eo", "pgid=,pid=,stat=,args="], { stdio: ["ignore", "pipe", "ignore"] });
    let out = "";
    ps.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
    ps.once("close", () =>
      resolve(
        out
          .split("\n")
          .map((l) => l.trim())
          // Zombies are exited processes waiting for their parent: nothing runs there.
          .filter((l) => l.split(/\s+/)[0] === String(group) && !/^\S+\s+\S+\s+Z/.test(l)),
      ),
    );
  });
}
