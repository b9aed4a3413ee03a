/** Durability pins and the data-directory lock (reliability.md findings 12-14, F8, F13). */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openDatabase } from "../../src/store/db.js";

const dirs: string[] = [];
function tempDir() {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-db-"));
  dirs.push(d);
  return d;
}
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

describe("openDatabase", () => {
  it("pins WAL, synchronous=FULL and foreign keys on first open and on reopen", () => {
    const dir = tempDir();
    for (let i = 0; i < 2; i++) {
      const opened = openDatabase(dir);
      const c = opened.db.$client;
      expect(c.pragma("journal_mode", { simple: true })).toBe("wal");
      expect(c.pragma("synchronous", { simple: true })).toBe(2);
      expect(c.pragma("foreign_keys", { simple: true })).toBe(1);
      opened.close();
    }
  });

  it("refuses a second open of the same data directory until the first closes", () => {
    const dir = tempDir();
    const first = openDatabase(dir);
    expect(() => openDatabase(dir)).toThrow(/in use by another Trellis server/);
    first.close();
    openDatabase(dir).close();
  });

  it("takes over a stale lock left by a dead process", () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, "trellis.lock"), "999999999\n");
    openDatabase(dir).close();
  });
});
