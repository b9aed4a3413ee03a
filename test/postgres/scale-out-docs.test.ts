/**
 * docs/scale-out.md's walkthrough, run as a reader follows it: every shell block not marked
 * skip, in order, in ONE bash session (its variables and background servers carry from block
 * to block, as in the reader's terminal), exactly as written, on the run's throwaway cluster.
 * Only these are substituted: the example server's credentials and port (the cluster's), the
 * databases' names (made unique on the shared cluster, the same way everywhere they appear),
 * and the replicas' ports (free ones). `npx trellis` runs this checkout's program
 * (test/docs/shell-blocks.ts). The working directory looks like the checkout
 * (test/docs/session.ts) and holds `./data`, a SQLite deployment made through a real server,
 * which the second part moves to PostgreSQL. The servers the walkthrough starts, it must stop:
 * the script runs in a process group of its own, and nothing may be left in it afterwards.
 */
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startTestApp } from "../support/app.js";
import { adminQuery, describePostgres, postgresClusterUrl } from "../support/postgres.js";
import { rest } from "../support/rest.js";
import { makeReaderCheckout, runInGroup } from "../docs/session.js";
import { PREAMBLE, parseShellBlocks, toScript } from "../docs/shell-blocks.js";

const ROOT = path.resolve(".");
const DOC = "docs/scale-out.md";
/** The example server of the doc: user, password, host and port. */
const EXAMPLE_SERVER = "postgres:secret@127.0.0.1:5432";

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

describePostgres(DOC, () => {
  const parsed = parseShellBlocks(fs.readFileSync(path.join(ROOT, DOC), "utf8"));
  let work: string;
  const databases: string[] = [];
  beforeAll(() => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-scale-out-"));
    makeReaderCheckout(work);
  });
  afterAll(async () => {
    const cluster = postgresClusterUrl();
    if (cluster !== null) for (const name of databases) await adminQuery(cluster, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    if (work) fs.rmSync(work, { recursive: true, force: true });
  });

  it("marks every block it does not run with a reason", () => {
    expect(parsed.problems).toEqual([]);
  });

  it("runs every block in order, as written, in one shell: two replicas on one database, then a SQLite deployment moved", async () => {
    // The SQLite deployment to move: a real server's data directory, with a group in it.
    const sqlite = await startTestApp({ dataDir: path.join(work, "data") });
    const made = await rest(sqlite.url, "POST", "/iam/v2beta1/groups", { name: "sqlite era" });
    expect(made.status).toBe(200);
    const sqliteGroup = (made.body as { uid: string }).uid;
    await sqlite.close();

    const cluster = new URL(postgresClusterUrl() as string);
    const server = `${cluster.username}:${cluster.password}@${cluster.host}`;
    const prefix = `trellis_doc_${randomBytes(4).toString("hex")}`;
    databases.push(prefix, `${prefix}_moved`);
    const ports = new Map<string, number>();
    for (const example of ["8081", "8082", "8083"]) ports.set(example, await freePort());
    const substitute = (text: string) => {
      let out = text
        .replaceAll(`${EXAMPLE_SERVER}/trellis`, `${server}/${prefix}`)
        .replaceAll(`${EXAMPLE_SERVER}/postgres`, `${server}/postgres`)
        .replaceAll("CREATE DATABASE trellis", `CREATE DATABASE ${prefix}`);
      for (const [example, port] of ports) out = out.replaceAll(`127.0.0.1:${example}`, `127.0.0.1:${port}`);
      return out;
    };
    const blocks = parsed.blocks.filter((b) => b.skip === undefined);
    expect(blocks.map((b) => b.id)).toEqual(["scale-out-replicas", "scale-out-move"]);
    const script = PREAMBLE + blocks.map((b) => toScript(substitute(b.text))).join("\n");
    // Nothing of the doc's example server may be left for the script to reach.
    expect(script).not.toContain(EXAMPLE_SERVER);

    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: work,
      XDG_CONFIG_HOME: path.join(work, ".config"),
      TMPDIR: os.tmpdir(),
      LANG: "C.UTF-8",
      DOCS_ROOT: ROOT,
    };
    for (const name of ["NODE_OPTIONS", "TRELLIS_TEST_SQLITE_ADDON"]) if (process.env[name] !== undefined) env[name] = process.env[name];
    const out = await runInGroup(script, work, env, 170_000);
    const logs = ["replica-1.log", "replica-2.log", "moved.log"]
      .filter((f) => fs.existsSync(path.join(work, f)))
      .map((f) => `--- ${f} ---\n${fs.readFileSync(path.join(work, f), "utf8").slice(-3000)}`)
      .join("\n");
    const where = `--- script ---\n${script}\n--- stdout ---\n${out.stdout}\n--- stderr ---\n${out.stderr}\n${logs}`;
    expect(out.code, where).toBe(0);
    // "kill … stops them": no server of the walkthrough outlives it.
    expect(out.survivors, `servers left running\n${where}`).toEqual([]);

    // "the last line prints the group scale-demo that the other replica wrote"
    const jsons = out.stdout
      .split(/\n(?=[{[])/)
      .map((chunk) => chunk.slice(0, chunk.lastIndexOf(chunk.startsWith("[") ? "]" : "}") + 1))
      .filter((chunk) => chunk.startsWith("{") || chunk.startsWith("["))
      .flatMap((chunk) => {
        try {
          return [JSON.parse(chunk) as unknown];
        } catch {
          return [];
        }
      });
    const got = jsons.find((j) => (j as { name?: string }).name === "scale-demo") as { uid: string } | undefined;
    expect(got, where).toBeDefined();
    // The moved deployment serves the SQLite group, uid and all.
    expect(out.stdout, where).toContain("row counts and checksums verified");
    const listed = jsons.find((j) => Array.isArray(j)) as { uid: string; name: string }[] | undefined;
    expect(
      listed?.map((g) => [g.uid, g.name]),
      where,
    ).toContainEqual([sqliteGroup, "sqlite era"]);
    // Both replicas wrote their start-up line against the one database, and every server stopped with exit 0.
    for (const log of ["replica-1.log", "replica-2.log", "moved.log"]) {
      const text = fs.readFileSync(path.join(work, log), "utf8");
      expect(text, log).toContain('"storage":"postgres"');
      expect(text, log).toContain("trellis stopped");
    }
  }, 180_000);
});
