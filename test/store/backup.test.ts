/**
 * The backup's copy is one snapshot, taken without holding up writers: another connection
 * (standing in for the server: busy_timeout 0, as the running server has) commits between
 * every step of the copy, each commit succeeds at once, the copy still finishes, and it holds
 * exactly what was committed when it began. The backup file is private (0600), a single file
 * (no -wal beside it), and no partial file is left behind.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { backupDatabase } from "../../src/store/sqlite/backup.js";
import { openDatabase, type OpenedDatabase } from "../../src/store/sqlite/db.js";

const dirs: string[] = [];
const opened: OpenedDatabase[] = [];
afterEach(() => {
  for (const o of opened.splice(0)) o.close();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function tempDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}

describe("backupDatabase", () => {
  it("copies one snapshot while another connection commits between every step, never making it wait", async () => {
    const dataDir = tempDir("trellis-backup-src-");
    const server = openDatabase(dataDir);
    opened.push(server);
    const sqlite = server.db.$client;
    sqlite.pragma("busy_timeout = 0"); // as the running server: a write that would wait fails instead
    sqlite.exec("CREATE TABLE filler (n INTEGER PRIMARY KEY, pad BLOB NOT NULL)");
    const insert = sqlite.prepare("INSERT INTO filler (pad) VALUES (zeroblob(200))");
    sqlite.transaction(() => {
      for (let i = 0; i < 2000; i++) insert.run(); // about 100 pages
    })();
    const target = path.join(tempDir("trellis-backup-dst-"), "trellis.backup");

    let steps = 0;
    let writtenDuring = 0;
    const summary = await backupDatabase({
      dataDir,
      to: target,
      stepPages: 5,
      onProgress: () => {
        steps++;
        for (let i = 0; i < 3; i++) {
          insert.run(); // throws SQLITE_BUSY if the backup held a lock a writer waits for
          writtenDuring++;
        }
      },
    });

    expect(steps).toBeGreaterThan(10);
    expect(writtenDuring).toBe(steps * 3);
    const copy = new Database(target, { readonly: true, fileMustExist: true });
    try {
      expect(copy.pragma("integrity_check", { simple: true })).toBe("ok");
      expect((copy.prepare("SELECT count(*) AS n FROM filler").get() as { n: number }).n).toBe(2000);
      expect(copy.pragma("journal_mode", { simple: true })).toBe("delete");
    } finally {
      copy.close();
    }
    expect((sqlite.prepare("SELECT count(*) AS n FROM filler").get() as { n: number }).n).toBe(2000 + writtenDuring);
    expect(summary).toMatchObject({ file: target, bytes: fs.statSync(target).size });
    expect(summary.rows).toBeGreaterThanOrEqual(2000);
    expect(fs.statSync(target).mode & 0o777).toBe(0o600);
    expect(fs.readdirSync(path.dirname(target))).toEqual(["trellis.backup"]);
  }, 30_000);
});
