/**
 * Starting a target process (host.ts) pinned to the server core, and talking to it over IPC.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { ControlReply, ControlRequest, RawResult, RawTask, ReadyMessage, Usage } from "./control.js";
import type { HostConfig } from "./host.js";

/**
 * Targets run the compiled build (`npm run compile`, which run.ts does first), as `npm start`
 * does: tsx's keepNames would add ~0.7 µs to every closure created per request.
 */
const HOST = fileURLToPath(new URL("../../dist/bench/targets/host.js", import.meta.url));

type WithoutId<T> = T extends unknown ? Omit<T, "id"> : never;

export interface Target {
  readonly kind: string;
  readonly url: string;
  readonly pid: number;
  usage(): Promise<Usage>;
  profileStart(): Promise<void>;
  profileStop(file: string): Promise<void>;
  raw(task: RawTask, seconds: number): Promise<RawResult>;
  stop(): Promise<void>;
}

export async function startTarget(kind: string, config: HostConfig, cpu: string | undefined): Promise<Target> {
  const nodeArgs = [HOST, kind, JSON.stringify(config)];
  const [file, args] = cpu === undefined ? [process.execPath, nodeArgs] : ["taskset", ["-c", cpu, process.execPath, ...nodeArgs]];
  const child: ChildProcess = spawn(file, args, {
    stdio: ["ignore", "inherit", "inherit", "ipc"],
    env: { ...process.env, NODE_ENV: "production" },
  });
  let nextId = 1;
  const pending = new Map<number, { resolve: (r: ControlReply) => void; reject: (e: Error) => void }>();
  const exited = new Promise<never>((_, reject) => {
    child.once("exit", (code, signal) => {
      const err = new Error(`bench target ${kind} exited (${signal ?? code})`);
      for (const p of pending.values()) p.reject(err);
      reject(err);
    });
  });
  exited.catch(() => {});
  const ready = new Promise<string>((resolve) => {
    child.on("message", (msg: ReadyMessage | ControlReply) => {
      if ("op" in msg) {
        resolve(msg.url);
        return;
      }
      const p = pending.get(msg.id);
      pending.delete(msg.id);
      p?.resolve(msg);
    });
  });
  const url = await Promise.race([ready, exited]);

  const ask = async (req: WithoutId<ControlRequest>): Promise<ControlReply & { ok: true }> => {
    const id = nextId++;
    const reply = await Promise.race([
      new Promise<ControlReply>((resolve, reject) => {
        pending.set(id, { resolve, reject });
        child.send({ ...req, id });
      }),
      exited,
    ]);
    if (!reply.ok) throw new Error(`bench target ${kind}: ${reply.error}`);
    return reply;
  };

  return {
    kind,
    url,
    pid: child.pid as number,
    async usage() {
      return (await ask({ op: "usage" })).usage as Usage;
    },
    async profileStart() {
      await ask({ op: "profile-start" });
    },
    async profileStop(file) {
      await ask({ op: "profile-stop", file });
    },
    async raw(task, seconds) {
      return (await ask({ op: "raw", task, seconds })).raw as RawResult;
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const gone = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await gone;
    },
  };
}
