/**
 * N Trellis replicas on one PostgreSQL database: `trellis serve --database URL --addr
 * 127.0.0.1:0` as child processes (serve.ts), started together as a deployment rolls them out,
 * with one issuer URL (as behind one load balancer: a token is only valid where its `iss` and
 * `aud` are, so replicas that each used their own listen URL would refuse each other's tokens).
 */
import pg from "pg";
import { SERVER_VALUES_CHANNEL } from "../../src/store/postgres/server-values.js";
import { cliRunner } from "./cli.js";
import { type Running, startServe } from "./serve.js";

/** The issuer URL every replica of a test deployment shares (the load balancer's URL). */
export const REPLICA_ISSUER = "https://trellis.replicas.test";

export interface Replica extends Running {
  /** "A", "B", "C", …: for test names and messages. */
  readonly name: string;
}

export interface Replicas {
  readonly databaseUrl: string;
  readonly all: readonly Replica[];
  /** `trellis auth token --local --database URL`: an operator token minted from the database's key. */
  operatorToken(): Promise<string>;
  /** Starts one more replica on the same database (e.g. after one was killed). */
  add(name: string, extraArgs?: readonly string[]): Promise<Replica>;
  /** SIGTERM to every replica still running; resolves once all have exited. */
  close(): Promise<void>;
}

export async function startReplicas(count: number, databaseUrl: string, extraArgs: readonly string[] = []): Promise<Replicas> {
  const started: Replica[] = [];
  const start = async (name: string, more: readonly string[]) => {
    const running = await startServe(["--addr", "127.0.0.1:0", "--database", databaseUrl, "--issuer-url", REPLICA_ISSUER, ...more]);
    const replica = Object.assign(Object.create(running) as Running, { name }) as Replica;
    started.push(replica);
    return replica;
  };
  const names = Array.from({ length: count }, (_, i) => String.fromCharCode(65 + i));
  let all: Replica[];
  try {
    all = await Promise.all(names.map((n) => start(n, extraArgs)));
  } catch (err) {
    await stopAll(started);
    throw err;
  }
  return {
    databaseUrl,
    all,
    async operatorToken() {
      const cli = cliRunner(all[0]?.url ?? REPLICA_ISSUER);
      try {
        const out = await cli.run(["auth", "token", "--local", "--database", databaseUrl]);
        if (out.code !== 0) throw new Error(`auth token --local failed (${out.code}): ${out.stderr}`);
        return out.stdout.trim();
      } finally {
        cli.cleanup();
      }
    },
    add: (name, more = extraArgs) => start(name, more),
    close: () => stopAll(started),
  };
}

async function stopAll(replicas: readonly Replica[]): Promise<void> {
  await Promise.all(
    replicas.map(async (r) => {
      if (r.child.exitCode === null && r.child.signalCode === null) r.child.kill("SIGTERM");
      await r.exited;
    }),
  );
}

/**
 * Holds up every change notification to the replicas on `databaseUrl`: stops (SIGSTOP) the
 * PostgreSQL backend of each replica's LISTEN connection, so a notification waits in the
 * server's queue, as on a slow network, and a replica learns of another's change only by its
 * own per-call check. Resolves to what lets them run again (SIGCONT), which the test must call.
 * The backends run on this machine (the test cluster), as our user or, when the tests run as
 * root, as the cluster's user, which root may signal.
 */
export async function freezeChangeNotifications(databaseUrl: string): Promise<() => Promise<void>> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  let pids: number[];
  try {
    const { rows } = await client.query<{ pid: number }>(
      "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query = $1 AND pid <> pg_backend_pid()",
      [`LISTEN ${SERVER_VALUES_CHANNEL}`],
    );
    pids = rows.map((r) => r.pid);
  } finally {
    await client.end();
  }
  if (pids.length === 0) throw new Error("no replica is listening for change notifications");
  for (const pid of pids) process.kill(pid, "SIGSTOP");
  return async () => {
    for (const pid of pids) {
      try {
        process.kill(pid, "SIGCONT");
      } catch {
        // gone already
      }
    }
  };
}
