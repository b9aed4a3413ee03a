/**
 * The PostgreSQL schema (src/store/postgres/schema.ts, as its committed migrations build it)
 * mirrors the SQLite one (as its migrations build it): the same tables, columns, nullability,
 * primary keys, indexes, uniques and foreign keys with their ON DELETE rules, and every text
 * column compared bytewise. Read from both real databases, so a column added to one engine's
 * schema and forgotten in the other's fails here.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { openDatabase, type OpenedDatabase } from "../../src/store/sqlite/db.js";
import { openPostgres, type OpenedPostgres } from "../../src/store/postgres/connection.js";
import { describePostgres, freshPostgresDatabase } from "../support/postgres.js";

interface Shape {
  columns: string[];
  indexes: string[];
  foreignKeys: string[];
}

const ON_DELETE: Record<string, string> = { a: "NO ACTION", r: "RESTRICT", c: "CASCADE", n: "SET NULL", d: "SET DEFAULT" };

function sqliteShape(opened: OpenedDatabase): Record<string, Shape> {
  const sqlite = opened.db.$client;
  const tables = sqlite.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '__drizzle%'").all() as {
    name: string;
  }[];
  const shapes: Record<string, Shape> = {};
  for (const { name } of tables) {
    const columns = (sqlite.prepare(`PRAGMA table_info("${name}")`).all() as { name: string; notnull: number; pk: number }[]).map(
      // SQLite lets an INTEGER PRIMARY KEY be NULL on paper; it never is.
      (c) => `${c.name} ${c.notnull || c.pk ? "not null" : "null"}${c.pk ? ` pk${c.pk}` : ""}`,
    );
    const indexes = (sqlite.prepare(`PRAGMA index_list("${name}")`).all() as { name: string; unique: number; origin: string }[])
      .filter((i) => i.origin === "c") // declared indexes; primary keys are in `columns`
      .map((i) => {
        const cols = (sqlite.prepare(`PRAGMA index_info("${i.name}")`).all() as { name: string }[]).map((c) => c.name);
        return `${i.name} ${i.unique ? "unique " : ""}(${cols.join(",")})`;
      });
    const foreignKeys = (sqlite.prepare(`PRAGMA foreign_key_list("${name}")`).all() as { from: string; table: string; to: string; on_delete: string }[]).map(
      (f) => `${f.from} -> ${f.table}.${f.to} on delete ${f.on_delete}`,
    );
    shapes[name] = { columns: columns.sort(), indexes: indexes.sort(), foreignKeys: foreignKeys.sort() };
  }
  return shapes;
}

async function postgresShape(opened: OpenedPostgres): Promise<Record<string, Shape>> {
  const q = async (sql: string) => (await opened.pool.query(sql)).rows;
  const shapes: Record<string, Shape> = {};
  const pk = await q(`
    SELECT c.relname AS table, a.attname AS column, array_position(i.indkey::int2[], a.attnum) AS pos
    FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace
    JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = ANY(i.indkey)
    WHERE i.indisprimary AND n.nspname = 'public'`);
  const pkPos = new Map(pk.map((r) => [`${r.table}.${r.column}`, Number(r.pos) + 1]));
  for (const c of await q("SELECT table_name, column_name, is_nullable FROM information_schema.columns WHERE table_schema = 'public'")) {
    shapes[c.table_name] ??= { columns: [], indexes: [], foreignKeys: [] };
    const shape = shapes[c.table_name];
    const pos = pkPos.get(`${c.table_name}.${c.column_name}`);
    shape.columns.push(`${c.column_name} ${c.is_nullable === "NO" ? "not null" : "null"}${pos ? ` pk${pos}` : ""}`);
  }
  for (const i of await q(`
    SELECT t.relname AS table, ic.relname AS name, i.indisunique AS unique,
           array_agg(a.attname::text ORDER BY array_position(i.indkey::int2[], a.attnum)) AS cols
    FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid JOIN pg_class t ON t.oid = i.indrelid
    JOIN pg_namespace n ON n.oid = t.relnamespace JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = ANY(i.indkey)
    WHERE n.nspname = 'public' AND NOT i.indisprimary
    GROUP BY t.relname, ic.relname, i.indisunique`)) {
    shapes[i.table]!.indexes.push(`${i.name} ${i.unique ? "unique " : ""}(${(i.cols as string[]).join(",")})`);
  }
  for (const f of await q(`
    SELECT t.relname AS table, a.attname AS from, rt.relname AS to_table, ra.attname AS to, c.confdeltype AS on_delete
    FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid JOIN pg_class rt ON rt.oid = c.confrelid
    JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = c.conkey[1]
    JOIN pg_attribute ra ON ra.attrelid = rt.oid AND ra.attnum = c.confkey[1]
    WHERE c.contype = 'f'`)) {
    shapes[f.table]!.foreignKeys.push(`${f.from} -> ${f.to_table}.${f.to} on delete ${ON_DELETE[f.on_delete]}`);
  }
  for (const shape of Object.values(shapes)) {
    shape.columns.sort();
    shape.indexes.sort();
    shape.foreignKeys.sort();
  }
  return shapes;
}

describePostgres("PostgreSQL schema", () => {
  let dataDir: string;
  let sqlite: OpenedDatabase;
  let postgres: OpenedPostgres;
  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-schema-"));
    sqlite = openDatabase(dataDir);
    postgres = await openPostgres({ url: await freshPostgresDatabase("schema") });
  });
  afterAll(async () => {
    sqlite?.close();
    await postgres?.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it("has the SQLite schema's tables, columns, keys, indexes and foreign keys, under the same names", async () => {
    const expected = sqliteShape(sqlite);
    expect(Object.keys(expected).length).toBeGreaterThan(15);
    const actual = await postgresShape(postgres);
    // PostgreSQL's one table of its own: counts derived from the rows by triggers (schema.ts).
    expect(actual.child_counts?.columns).toEqual(["kind not null pk2", "n not null", "parent_uid not null pk1", "stripe not null pk3"]);
    delete actual.child_counts;
    expect(actual).toEqual(expected);
  });

  it('compares every text column bytewise (COLLATE "C"), as SQLite does', async () => {
    const { rows } = await postgres.pool.query(
      "SELECT table_name, column_name, collation_name FROM information_schema.columns WHERE table_schema = 'public' AND data_type = 'text'",
    );
    expect(rows.length).toBeGreaterThan(50);
    expect(rows.filter((r) => r.collation_name !== "C")).toEqual([]);
    // and so orders as SQLite does: uppercase before lowercase, '/' before '0' (UIDP ranges)
    const order = await postgres.pool.query("SELECT v FROM (VALUES ('b'), ('B'), ('a/x'), ('a0'), ('A')) AS t(v) ORDER BY v COLLATE \"C\"");
    const sorted = ["b", "B", "a/x", "a0", "A"].sort();
    expect(order.rows.map((r) => r.v)).toEqual(sorted);
  });
});
