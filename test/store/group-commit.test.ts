/**
 * Group commit (src/store/sqlite/group-commit.ts): writes queued in the same turn of the event loop
 * share one BEGIN IMMEDIATE … COMMIT, and each still succeeds or fails on its own, durably and
 * with nothing half-written. These tests drive the repository (the real SQLite file) and count
 * the transactions by watching the connection's `exec`; test/rpc/group-commit.test.ts sends
 * concurrent requests through every protocol.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { ApiError } from "../../src/errors/api-error.js";
import { type OpenedDatabase, openDatabase } from "../../src/store/sqlite/db.js";
import { groupCommit, MAX_BATCH, storageWritable, waitForWriteLockAsync } from "../../src/store/sqlite/group-commit.js";
import { createGroupsRepository } from "../../src/store/sqlite/groups.js";
import type { GroupsRepository } from "../../src/store/groups.js";

const NOW = 1_800_000_000_000;
const newRoot = (name: string) => ({ parentUid: null, name, description: "", verified: false, kind: 0 });

let dir: string;
let opened: OpenedDatabase;
let repo: GroupsRepository;
let statements: string[];

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-group-commit-"));
  opened = openDatabase(dir);
  repo = createGroupsRepository(opened.db);
  statements = [];
  const sqlite = opened.db.$client;
  const exec = sqlite.exec.bind(sqlite);
  vi.spyOn(sqlite, "exec").mockImplementation((sql: string) => {
    statements.push(sql);
    return exec(sql);
  });
});
afterEach(() => {
  vi.restoreAllMocks();
  opened.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const commits = () => statements.filter((s) => s === "COMMIT").length;
const rootNames = () =>
  (opened.db.$client.prepare("SELECT name FROM groups WHERE parent_uid IS NULL ORDER BY name").all() as { name: string }[]).map((r) => r.name);

describe("group commit", () => {
  it("writes issued in the same turn share one transaction and all become durable", async () => {
    const created = await Promise.all(["g1", "g2", "g3", "g4"].map((n) => repo.create(newRoot(n), NOW)));
    expect(created.map((g) => g.name)).toEqual(["g1", "g2", "g3", "g4"]);
    expect(statements.filter((s) => s === "BEGIN IMMEDIATE")).toHaveLength(1);
    expect(commits()).toBe(1);
    // Durable: another connection (after the first one is gone) sees all four.
    opened.close();
    const other = new Database(path.join(dir, "trellis.db"), { readonly: true });
    expect((other.prepare("SELECT count(*) AS n FROM groups").get() as { n: number }).n).toBe(4);
    other.close();
    opened = openDatabase(dir);
  });

  it("writes issued in different turns commit separately (nothing waits for company)", async () => {
    await repo.create(newRoot("alone1"), NOW);
    await repo.create(newRoot("alone2"), NOW);
    expect(commits()).toBe(2);
  });

  it("a failing write is rolled back to its savepoint; the others in the batch commit", async () => {
    const parent = await repo.create(newRoot("parent"), NOW);
    statements.length = 0;
    const results = await Promise.allSettled([
      repo.create(newRoot("before"), NOW),
      repo.create({ ...newRoot("orphan"), parentUid: "f".repeat(40) }, NOW), // no such parent
      groupCommit(opened.db, (tx) => {
        // Writes, then fails: its row must not survive.
        tx.$client.prepare("INSERT INTO groups (uid, name, create_time, update_time) VALUES ('x1', 'half-written', 0, 0)").run();
        throw new Error("refused after writing");
      }),
      repo.delete(parent.uid),
      repo.create(newRoot("after"), NOW),
    ]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "rejected", "fulfilled", "fulfilled"]);
    expect(((results[1] as PromiseRejectedResult).reason as ApiError).code).toBe(5); // NOT_FOUND
    expect(((results[2] as PromiseRejectedResult).reason as Error).message).toContain("refused after writing");
    expect(commits()).toBe(1);
    expect(rootNames()).toEqual(["after", "before"]);
  });

  it("later writes in a batch see the earlier ones, in the order they were issued", async () => {
    const results = await Promise.allSettled([
      repo.create(newRoot("first"), NOW).then((g) => g.uid),
      groupCommit(opened.db, (tx) => (tx.$client.prepare("SELECT count(*) AS n FROM groups").get() as { n: number }).n),
    ]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "fulfilled"]);
    expect((results[1] as PromiseFulfilledResult<number>).value).toBe(1);
  });

  it("when SQLite abandons the transaction mid-batch, every write whose work was lost fails with that error", async () => {
    const lost = new Error("the transaction was rolled back under us");
    const results = await Promise.allSettled([
      repo.create(newRoot("lost1"), NOW),
      groupCommit(opened.db, (tx) => {
        tx.$client.exec("ROLLBACK"); // what SQLITE_FULL / SQLITE_IOERR may do
        throw lost;
      }),
      repo.create(newRoot("next"), NOW), // runs in a fresh transaction
    ]);
    expect(results.map((r) => r.status)).toEqual(["rejected", "rejected", "fulfilled"]);
    expect((results[0] as PromiseRejectedResult).reason).toBe(lost);
    expect(rootNames()).toEqual(["next"]);
  });

  it("a failed COMMIT fails every write of the batch and writes nothing", async () => {
    const results = await Promise.allSettled([
      repo.create(newRoot("c1"), NOW),
      groupCommit(opened.db, (tx) => {
        // A foreign key checked only at COMMIT: the whole COMMIT is refused.
        tx.$client.pragma("defer_foreign_keys = ON");
        tx.$client.prepare("INSERT INTO groups (uid, parent_uid, name, create_time, update_time) VALUES ('x2', 'missing', 'dangling', 0, 0)").run();
      }),
      repo.create(newRoot("c2"), NOW),
    ]);
    expect(results.map((r) => r.status)).toEqual(["rejected", "rejected", "rejected"]);
    for (const r of results) expect(((r as PromiseRejectedResult).reason as { code?: string }).code).toBe("SQLITE_CONSTRAINT_FOREIGNKEY");
    expect(rootNames()).toEqual([]);
    expect(opened.db.$client.inTransaction).toBe(false);
    expect((await repo.create(newRoot("fine"), NOW)).name).toBe("fine");
  });

  it("a write lock held by another connection fails the whole batch with SQLITE_BUSY, nothing written", async () => {
    const other = new Database(path.join(dir, "trellis.db"), { timeout: 0 });
    try {
      other.exec("BEGIN IMMEDIATE");
      const results = await Promise.allSettled([repo.create(newRoot("b1"), NOW), repo.create(newRoot("b2"), NOW)]);
      for (const r of results) expect(((r as PromiseRejectedResult).reason as { code?: string }).code).toBe("SQLITE_BUSY");
      other.exec("ROLLBACK");
    } finally {
      other.close();
    }
    expect(rootNames()).toEqual([]);
  }, 10_000);

  it("a batch larger than MAX_BATCH is split; every write lands", async () => {
    const n = MAX_BATCH + 10;
    await Promise.all(Array.from({ length: n }, (_, i) => repo.create(newRoot(`many ${i}`), NOW)));
    expect(commits()).toBe(2);
    expect(rootNames()).toHaveLength(n);
  });

  it("closing the database commits the writes still queued", async () => {
    const pending = repo.create(newRoot("queued"), NOW);
    opened.close();
    expect((await pending).name).toBe("queued");
    opened = openDatabase(dir);
    expect(rootNames()).toEqual(["queued"]);
  });

  it("with the lock held elsewhere, writes wait on a timer (reads go on), commit in order once it is free, and fail past the bound with nothing written", async () => {
    // Fake clock: the wait, the retries and the bound are driven by the test, not the wall clock.
    vi.useFakeTimers({ toFake: ["setTimeout", "setImmediate", "performance"] });
    const other = new Database(path.join(dir, "trellis.db"));
    try {
      waitForWriteLockAsync(opened.db, 100);
      other.exec("BEGIN IMMEDIATE");
      const order: string[] = [];
      const first = repo.create(newRoot("first"), NOW).then(() => order.push("first"));
      const second = repo.create(newRoot("second"), NOW).then(() => order.push("second"));
      await vi.advanceTimersByTimeAsync(60);
      expect(order).toEqual([]); // still waiting, and this turn of the loop was never blocked:
      expect(rootNames()).toEqual([]); // a read on the same connection is answered meanwhile
      other.exec("ROLLBACK");
      await vi.advanceTimersByTimeAsync(30); // the next retry takes the lock
      await Promise.all([first, second]);
      expect(order).toEqual(["first", "second"]);
      expect(storageWritable(opened.db)).toBe(true);

      other.exec("BEGIN IMMEDIATE");
      const late = repo.create(newRoot("late"), NOW).catch((e: unknown) => e);
      await vi.advanceTimersByTimeAsync(99);
      expect(storageWritable(opened.db)).toBe(true); // still within its bound
      await vi.advanceTimersByTimeAsync(60);
      expect(((await late) as { code?: string }).code).toBe("SQLITE_BUSY");
      expect(storageWritable(opened.db)).toBe(false); // what the health service reports
      other.exec("ROLLBACK");
      expect(rootNames()).toEqual(["first", "second"]); // nothing of the refused write
    } finally {
      if (other.inTransaction) other.exec("ROLLBACK");
      other.close();
      vi.useRealTimers();
    }
  });
});
