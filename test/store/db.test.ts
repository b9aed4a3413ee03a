/** Durability pins and the data-directory lock (docs/architecture.md "Storage"). */
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openDatabase } from "../../src/store/sqlite/db.js";

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

  it("makes a new data directory and database readable by their owner only (they hold the signing keys)", () => {
    const dir = path.join(tempDir(), "data");
    const opened = openDatabase(dir);
    try {
      expect(fs.statSync(dir).mode & 0o777).toBe(0o700);
      for (const name of ["trellis.db", "trellis.db-wal", "trellis.db-shm"]) {
        expect((fs.statSync(path.join(dir, name)).mode & 0o777).toString(8), name).toBe("600");
      }
    } finally {
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

  it("is not blocked by the pid lock file of an earlier version, even one naming a live pid", () => {
    const dir = tempDir();
    // pid 1 is alive in every container: the old lock refused every restart with it.
    fs.writeFileSync(path.join(dir, "trellis.lock"), "1\n");
    openDatabase(dir).close();
    expect(fs.existsSync(path.join(dir, "trellis.lock"))).toBe(false);
  });

  it("dies with its holder: a process killed with SIGKILL leaves nothing that blocks the next open", async () => {
    const dir = tempDir();
    // A child process takes the lock the way the server does (and keeps the handle, as the
    // server does: a connection nobody references is closed by the garbage collector, which
    // would release the lock), says so, and is then killed.
    const child = spawn(
      process.execPath,
      [
        "--import",
        "tsx",
        "-e",
        `const { openDatabase } = await import(${JSON.stringify(path.resolve("src/store/sqlite/db.ts"))});
         globalThis.held = openDatabase(${JSON.stringify(dir)}); process.stdout.write("locked\\n"); setInterval(() => {}, 60000);`,
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    const exited = new Promise((resolve) => child.once("exit", resolve));
    await new Promise<void>((resolve, reject) => {
      child.stdout.setEncoding("utf8").on("data", (c: string) => c.includes("locked") && resolve());
      child.once("exit", (code) => reject(new Error(`lock holder exited early (${code})`)));
    });
    // While it lives, this process is refused.
    expect(() => openDatabase(dir)).toThrow(/in use by another Trellis server/);
    child.kill("SIGKILL");
    await exited;
    // At once afterwards: the kernel released the lock with the process.
    openDatabase(dir).close();
  });
});
