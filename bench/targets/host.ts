/**
 * Entry of every benchmark target process, compiled: `node dist/bench/targets/host.js <kind> <json>`.
 * The runner starts it pinned to the server core and talks to it over the IPC channel
 * (control.ts): the target reports `ready` with its URL, then answers usage, profiling and
 * raw-ceiling requests. Kinds:
 *   trellis  the real server (startApp) on the seeded data dir
 *   peer     a plain @grpc/grpc-js server calling the same service implementations (with
 *            Trellis's auth hooks and issuer); peer-noauth: the same without the hooks
 *   bare-h1  node:http returning a fixed body; bare-h2: node:http2 (compat API), same body
 *   raw      no server: in-process better-sqlite3 ceilings on request (and node-postgres
 *            ones, raw-pg.ts, given a databaseUrl)
 * A trellis target given a databaseUrl serves from PostgreSQL: one replica per process.
 */
import fs from "node:fs";
import { Session } from "node:inspector/promises";
import { DEFAULT_ERROR_DOMAIN } from "../../src/server/config.js";
import { startApp } from "../../src/server/create-app.js";
import { createLogger } from "../../src/observe/logger.js";
import { startBareH1, startBareH2 } from "./bare.js";
import type { CallCounts, ControlReply, ControlRequest, ReadyMessage } from "./control.js";
import { startPeer } from "./peer.js";
import { runRaw } from "./raw.js";

export interface HostConfig {
  readonly dataDir?: string;
  /** bare-*: the response body (the size of a real GetGroup response). */
  readonly bodyFile?: string;
  /** peer: Trellis's URL, its token issuer; absent for the peer without auth hooks. */
  readonly issuerUrl?: string;
  /** raw: where the insert ceiling may create its scratch database. */
  readonly scratchDir?: string;
  /** trellis: serve from this PostgreSQL database instead of dataDir; raw: the pg-* tasks' database. */
  readonly databaseUrl?: string;
  /** trellis: the issuer URL (PostgreSQL replicas take the SQLite server's, so one token serves all). */
  readonly serverIssuerUrl?: string;
}

const [kind, json = "{}"] = process.argv.slice(2);
const config = JSON.parse(json) as HostConfig;

/**
 * Trellis and the peer log one line per call at level info, their default. The lines go to
 * this sink instead of stderr: it counts "method code" pairs, so the runner sees every
 * non-OK call on every protocol (h2load cannot read gRPC trailers) at the cost of a
 * substring search per line.
 */
const calls: CallCounts = {};
const countingSink = {
  write(line: string): void {
    const m = line.indexOf('"method":"');
    const c = line.indexOf('"code":"');
    if (m < 0 || c < 0) return;
    const method = line.slice(m + 10, line.indexOf('"', m + 10));
    const code = line.slice(c + 8, line.indexOf('"', c + 8));
    const key = `${method} ${code}`;
    calls[key] = (calls[key] ?? 0) + 1;
  },
};

let profiler: Session | undefined;

async function handle(req: ControlRequest): Promise<ControlReply> {
  switch (req.op) {
    case "usage": {
      const cpu = process.cpuUsage();
      return { id: req.id, ok: true, usage: { cpuUs: cpu.user + cpu.system, maxRssKb: process.resourceUsage().maxRSS, calls: { ...calls } } };
    }
    case "profile-start":
      profiler = new Session();
      profiler.connect();
      await profiler.post("Profiler.enable");
      await profiler.post("Profiler.setSamplingInterval", { interval: 100 });
      await profiler.post("Profiler.start");
      return { id: req.id, ok: true };
    case "profile-stop": {
      if (!profiler) throw new Error("profiler not started");
      const { profile } = await profiler.post("Profiler.stop");
      profiler.disconnect();
      profiler = undefined;
      fs.writeFileSync(req.file, JSON.stringify(profile));
      return { id: req.id, ok: true };
    }
    case "raw":
      return { id: req.id, ok: true, raw: await runRaw(req.task, req.seconds, config) };
  }
}

async function start(): Promise<string> {
  const log = () => createLogger("info", countingSink);
  switch (kind) {
    case "trellis": {
      const app = await startApp(
        {
          host: "127.0.0.1",
          port: 0,
          dataDir: required(config.dataDir),
          databaseUrl: config.databaseUrl,
          issuerUrl: config.serverIssuerUrl,
          errorDomain: DEFAULT_ERROR_DOMAIN,
          logLevel: "info",
        },
        // TRELLIS_BENCH_FAST_UNARY=0 measures the same build with every RPC through connect-node.
        { log: log(), fastUnary: process.env.TRELLIS_BENCH_FAST_UNARY !== "0" },
      );
      return app.url;
    }
    case "peer":
      return startPeer(required(config.dataDir), log(), required(config.issuerUrl));
    case "peer-noauth":
      return startPeer(required(config.dataDir), log(), undefined);
    case "bare-h1":
      return startBareH1(fs.readFileSync(required(config.bodyFile)));
    case "bare-h2":
      return startBareH2(fs.readFileSync(required(config.bodyFile)));
    case "raw":
      return "";
    default:
      throw new Error(`unknown target kind ${JSON.stringify(kind)}`);
  }
}

function required(v: string | undefined): string {
  if (v === undefined) throw new Error(`target ${kind}: missing configuration`);
  return v;
}

if (!process.send) throw new Error("bench/targets/host.ts must be started by the bench runner (needs an IPC channel)");
process.on("message", (msg: ControlRequest) => {
  handle(msg).then(
    (reply) => process.send?.(reply),
    (err: unknown) => process.send?.({ id: msg.id, ok: false, error: err instanceof Error ? err.message : String(err) } satisfies ControlReply),
  );
});
// The runner going away (even killed) closes the channel: never outlive it.
process.on("disconnect", () => process.exit(0));
start().then(
  (url) => process.send?.({ op: "ready", url } satisfies ReadyMessage),
  (err: unknown) => {
    process.stderr.write(`bench target ${kind}: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  },
);
