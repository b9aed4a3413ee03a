/**
 * `trellis db copy` as an operator runs it (a real `trellis` process): a SQLite deployment
 * built through the real server (groups, identities, roles, bindings, repos, tags and their
 * history, advisories with aliases and events, the server keys) is copied into an empty
 * PostgreSQL database and found there row for row, value for value; the refusals (a target
 * that is not empty, a source that is not a Trellis data directory, a --to that is not a
 * PostgreSQL URL) write nothing; a copy that fails half-way commits nothing.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { listInputFiles } from "../../src/import/read-records.js";
import { importFiles } from "../../src/import/run-import.js";
import { COPY_ORDER, CopyRefusedError, copySqliteToPostgres } from "../../src/store/postgres/copy.js";
import { getTableConfig } from "drizzle-orm/pg-core";
import { startTestApp, type TestApp } from "../support/app.js";
import { type CliRunner, cliRunner } from "../support/cli.js";
import { describePostgres, freshPostgresDatabase } from "../support/postgres.js";
import { rest } from "../support/rest.js";
import { checkChildCounts } from "../support/child-counts.js";

const FIXTURES = path.join(import.meta.dirname, "../fixtures");
const TABLES = COPY_ORDER.map((t) => getTableConfig(t));

let t: TestApp;
let cli: CliRunner;
const dirs: string[] = [];
function tempDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}

/** Every row of `table` in key order, each value in one comparable form (whatever the engine). */
function normalise(value: unknown): unknown {
  if (value === null || value === undefined) return null;
  if (Buffer.isBuffer(value)) return `bytes:${value.toString("hex")}`;
  if (typeof value === "boolean") return value ? 1 : 0;
  if (typeof value === "bigint") return Number(value);
  return value;
}

function orderOf(table: ReturnType<typeof getTableConfig>): string {
  const pk = table.columns.filter((c) => c.primary).map((c) => c.name);
  const cols = pk.length
    ? pk
    : (table.primaryKeys[0]?.columns.map((c) => c.name) ?? table.indexes.find((i) => i.config.unique)!.config.columns.map((c) => (c as { name: string }).name));
  return cols.map((c) => `"${c}"`).join(", ");
}

function sqliteRows(dataDir: string, table: ReturnType<typeof getTableConfig>): unknown[][] {
  const db = new Database(path.join(dataDir, "trellis.db"), { readonly: true, fileMustExist: true });
  try {
    const cols = table.columns.map((c) => `"${c.name}"`).join(", ");
    return (
      db
        .prepare(`SELECT ${cols} FROM "${table.name}" ORDER BY ${orderOf(table)}`)
        .raw(true)
        .all() as unknown[][]
    ).map((row) => row.map((v, i) => (table.columns[i]!.columnType === "PgBoolean" ? Number(v) : normalise(v))));
  } finally {
    db.close();
  }
}

async function postgresRows(url: string, table: ReturnType<typeof getTableConfig>): Promise<unknown[][]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const cols = table.columns.map((c) => `"${c.name}"`).join(", ");
    const { rows } = await client.query({ text: `SELECT ${cols} FROM "${table.name}" ORDER BY ${orderOf(table)}`, rowMode: "array" });
    // int8 arrives as a decimal string: the schema's bigints are the millisecond timestamps and seq
    return (rows as unknown[][]).map((row) =>
      row.map((v, i) => (table.columns[i]!.columnType === "PgBigInt53" && typeof v === "string" ? Number(v) : normalise(v))),
    );
  } finally {
    await client.end();
  }
}

async function rowCounts(url: string): Promise<Record<string, number>> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const counts: Record<string, number> = {};
    for (const table of TABLES) {
      const exists = await client.query("SELECT to_regclass($1) AS t", [`public.${table.name}`]);
      if (exists.rows[0].t === null) continue;
      counts[table.name] = (await client.query(`SELECT count(*)::int AS n FROM "${table.name}"`)).rows[0].n;
    }
    return counts;
  } finally {
    await client.end();
  }
}

describePostgres("trellis db copy", () => {
  beforeAll(async () => {
    t = await startTestApp();
    cli = cliRunner("http://127.0.0.1:1");
    const post = async (p: string, body: unknown) => {
      const res = await rest(t.url, "POST", p, body);
      if (res.status !== 200) throw new Error(`POST ${p}: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body;
    };
    const org = (await post("/iam/v2beta1/groups", { name: "copied org" })).uid;
    const team = (await post(`/iam/v2beta1/groups/${org}`, { name: "team b", description: "Uppercase Sorts First" })).uid;
    await post(`/iam/v2beta1/groups/${team}`, { name: "a deeper one" });
    const bot = (await post(`/iam/v2beta1/identities/${org}`, { name: "bot", claimMatch: { issuer: "https://issuer.example", subject: "bot" } })).uid;
    const role = (await post(`/iam/v2beta1/roles/${org}`, { name: "auditor", capabilities: ["CAP_IAM_GROUPS_LIST", "CAP_REPO_LIST"] })).uid;
    await post(`/iam/v2beta1/roleBindings/${team}`, { identityUid: bot, roleUid: role });
    await post(`/registry/v2beta1/repos/${org}`, { name: "made-over-rest" });
    // repos, tags and their history, advisories with aliases and events: through the importer
    const summary = await importFiles({ dataDir: t.dataDir }, listInputFiles([path.join(FIXTURES, "osv"), path.join(FIXTURES, "import/registry.ndjson")]), {
      group: org,
    });
    if (summary.loaded === 0) throw new Error("the import loaded nothing");
  });

  afterAll(async () => {
    cli?.cleanup();
    await t?.close();
    for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
  });

  it("copies every table of a SQLite deployment row for row, verified, and refuses to copy into it again", async () => {
    const url = await freshPostgresDatabase("copy");
    for (const table of [
      "groups",
      "identities",
      "roles",
      "role_bindings",
      "repos",
      "tags",
      "tag_history",
      "advisories",
      "advisory_aliases",
      "advisory_events",
      "server_keys",
    ]) {
      expect(sqliteRows(t.dataDir, TABLES.find((x) => x.name === table)!).length, table).toBeGreaterThan(0);
    }

    const copied = await cli.run(["db", "copy", "--from", t.dataDir, "--to", url]);
    expect(copied.stderr).toMatch(/^db copy: groups \d+ rows$/m);
    expect(copied.code).toBe(0);
    expect(copied.stdout).toMatch(
      /^copied \d+ rows in 21 tables from .* to postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/trellis_copy_[0-9a-f]+; row counts and checksums verified$/m,
    );
    expect(copied.stdout).not.toContain(new URL(url).password);

    for (const table of TABLES) {
      expect(await postgresRows(url, table), table.name).toEqual(sqliteRows(t.dataDir, table));
    }
    // The identity sequence continues after the copied history: no seq is ever handed out twice.
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const tag = (await client.query("SELECT uid FROM tags LIMIT 1")).rows[0].uid;
      const max = Number((await client.query("SELECT max(seq) AS m FROM tag_history")).rows[0].m);
      const next = await client.query("INSERT INTO tag_history (tag_uid, digest, move_time) VALUES ($1, 'sha256:x', 1) RETURNING seq", [tag]);
      expect(Number(next.rows[0].seq)).toBeGreaterThan(max);
      await client.query("DELETE FROM tag_history WHERE seq = $1", [next.rows[0].seq]);
      // The counts PostgreSQL keeps with the rows (not a table of SQLite's) were made by its
      // triggers from the rows copied.
      const counters = await checkChildCounts(client);
      expect(counters.mismatches).toEqual([]);
      expect(counters.parents).toBeGreaterThan(5);
    } finally {
      await client.end();
    }

    const before = await rowCounts(url);
    const again = await cli.run(["db", "copy", "--from", t.dataDir, "--to", url]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(
      /db copy refused: the target database is not empty \(rows in groups, server_keys, .*\); db copy only fills an empty database, so nothing was written/,
    );
    expect(await rowCounts(url)).toEqual(before);
    const after = new pg.Client({ connectionString: url });
    await after.connect();
    try {
      expect((await checkChildCounts(after)).mismatches).toEqual([]);
    } finally {
      await after.end();
    }
  });

  it("lets only one of two copies started together into one empty database fill it; the other is refused", async () => {
    const url = await freshPostgresDatabase("twice");
    const outcomes = await Promise.allSettled([0, 1].map(() => copySqliteToPostgres({ fromDir: t.dataDir, toUrl: url })));
    const done = outcomes.filter((o) => o.status === "fulfilled");
    const refused = outcomes.filter((o): o is PromiseRejectedResult => o.status === "rejected");
    expect(done).toHaveLength(1);
    expect(refused).toHaveLength(1);
    // Refused for the reason that matters (it waited for the first and found it full), not a key clash half-way.
    expect(refused[0]!.reason).toBeInstanceOf(CopyRefusedError);
    expect(String(refused[0]!.reason.message)).toMatch(/^the target database is not empty/);
    const groups = TABLES.find((x) => x.name === "groups")!;
    expect(await postgresRows(url, groups)).toEqual(sqliteRows(t.dataDir, groups));
  });

  it("refuses a source that is not a Trellis data directory, writing nothing to the target", async () => {
    const url = await freshPostgresDatabase("notrellis");
    const empty = tempDir("trellis-copy-empty-");
    const none = await cli.run(["db", "copy", "--from", empty, "--to", url]);
    expect(none.code).toBe(1);
    expect(none.stderr).toContain(`db copy refused: ${empty} is not a Trellis data directory: it has no ${path.join(empty, "trellis.db")}`);

    const foreign = tempDir("trellis-copy-foreign-");
    const db = new Database(path.join(foreign, "trellis.db"));
    db.exec("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)");
    db.close();
    const notOurs = await cli.run(["db", "copy", "--from", foreign, "--to", url]);
    expect(notOurs.code).toBe(1);
    expect(notOurs.stderr).toContain("is not a Trellis database (it lacks Trellis's tables)");

    const garbage = tempDir("trellis-copy-garbage-");
    fs.writeFileSync(path.join(garbage, "trellis.db"), "this is not a database at all, just text long enough to be read");
    const notSqlite = await cli.run(["db", "copy", "--from", garbage, "--to", url]);
    expect(notSqlite.code).toBe(1);
    expect(notSqlite.stderr).toMatch(/is not a SQLite database Trellis can read/);

    // The source is checked before the target is touched: not even the schema was created.
    expect(await rowCounts(url)).toEqual({});
  });

  it("refuses a --to that is not a PostgreSQL URL (usage, exit 2)", async () => {
    const r = await cli.run(["db", "copy", "--from", t.dataDir, "--to", "mysql://root:secret@localhost/db"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--to must be a postgres:// URL, got "mysql://root:***@localhost/db"');
  });

  it("commits nothing when a value fails half-way (PostgreSQL refuses a NUL in text)", async () => {
    const url = await freshPostgresDatabase("halfway");
    const source = tempDir("trellis-copy-nul-");
    fs.copyFileSync(path.join(t.dataDir, "trellis.db"), path.join(source, "trellis.db"));
    for (const side of ["-wal", "-shm"]) {
      const file = path.join(t.dataDir, `trellis.db${side}`);
      if (fs.existsSync(file)) fs.copyFileSync(file, path.join(source, `trellis.db${side}`));
    }
    const db = new Database(path.join(source, "trellis.db"));
    // The last table copied, so every table before it was already written when it fails.
    db.prepare("UPDATE advisory_events SET author = 'nul' || char(0) || 'here' WHERE uid = (SELECT max(uid) FROM advisory_events)").run();
    db.close();
    const r = await cli.run(["db", "copy", "--from", source, "--to", url]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/db copy failed, nothing was committed to the target: .*0x00/);
    const counts = await rowCounts(url);
    expect(Object.values(counts).every((n) => n === 0)).toBe(true);
    expect(Object.keys(counts)).toHaveLength(21);
  });
});
