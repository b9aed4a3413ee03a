/**
 * Upgrading a database that holds tags from before tag history existed: the migration that
 * creates `tag_history` gives each tag its current digest, from its update_time, as its first
 * move, so v1 ListTagHistory is never empty for a tag that exists.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { drizzle } from "drizzle-orm/better-sqlite3";
import { migrate } from "drizzle-orm/better-sqlite3/migrator";
import { afterEach, expect, it } from "vitest";
import { MIGRATIONS_DIR, openDatabase } from "../../src/store/sqlite/db.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

/** A copy of the migrations folder that stops just before the one creating `tag_history`. */
function migrationsBeforeTagHistory(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-migrations-"));
  dirs.push(dir);
  const journal = JSON.parse(fs.readFileSync(path.join(MIGRATIONS_DIR, "meta/_journal.json"), "utf8")) as { entries: { tag: string }[] };
  const cut = journal.entries.findIndex((e) => fs.readFileSync(path.join(MIGRATIONS_DIR, `${e.tag}.sql`), "utf8").includes("CREATE TABLE `tag_history`"));
  expect(cut).toBeGreaterThan(0);
  fs.mkdirSync(path.join(dir, "meta"));
  for (const e of journal.entries.slice(0, cut)) fs.copyFileSync(path.join(MIGRATIONS_DIR, `${e.tag}.sql`), path.join(dir, `${e.tag}.sql`));
  fs.writeFileSync(path.join(dir, "meta/_journal.json"), JSON.stringify({ ...journal, entries: journal.entries.slice(0, cut) }));
  return dir;
}

it("gives every existing tag its current digest as the first move of its history", () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-upgrade-"));
  dirs.push(dataDir);
  const group = "a".repeat(40);
  const repo = `${group}/0000000000000001`;
  const tag = `${repo}/0000000000000002`;
  const old = new Database(path.join(dataDir, "trellis.db"));
  migrate(drizzle(old), { migrationsFolder: migrationsBeforeTagHistory() });
  old.prepare("INSERT INTO groups (uid, name, create_time, update_time) VALUES (?, 'g', 1, 1)").run(group);
  old.prepare("INSERT INTO repos (uid, parent_uid, name, create_time, update_time) VALUES (?, ?, 'r', 1, 1)").run(repo, group);
  old.prepare("INSERT INTO tags (uid, repo_uid, name, digest, update_time) VALUES (?, ?, 'latest', ?, 1234)").run(tag, repo, `sha256:${"c".repeat(64)}`);
  old.close();

  const opened = openDatabase(dataDir);
  try {
    const rows = opened.db.$client.prepare("SELECT tag_uid, digest, move_time FROM tag_history").all();
    expect(rows).toEqual([{ tag_uid: tag, digest: `sha256:${"c".repeat(64)}`, move_time: 1234 }]);
  } finally {
    opened.close();
  }
});
