/**
 * Server values on PostgreSQL (src/store/postgres/server-values.ts) against the real cluster:
 * the same answers as SQLite's for the same changes, one agreed result when two replicas (two
 * pools) update at once, and a watcher on one replica that sees another replica's change
 * (through NOTIFY, and at once after `refresh()`), also after its listening connection dropped,
 * and `catchUp()`, which sees every change committed before it was called, announced or not.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import type { ServerValues, ServerValuesChange } from "../../src/store/engine.js";
import { openPostgres, type OpenedPostgres } from "../../src/store/postgres/connection.js";
import { createPostgresServerValues, type PostgresServerValues, SERVER_VALUES_CHANNEL } from "../../src/store/postgres/server-values.js";
import { openDatabase, type OpenedDatabase } from "../../src/store/sqlite/db.js";
import { createServerValues } from "../../src/store/sqlite/server-keys.js";
import { describePostgres, freshPostgresDatabase } from "../support/postgres.js";

const NOW = 1_700_000_000_000;
const b = (s: string) => Buffer.from(s);
const text = (values: readonly (Buffer | undefined)[]) => values.map((v) => v?.toString());

describePostgres("server values on PostgreSQL", () => {
  let url: string;
  let dataDir: string;
  let sqlite: OpenedDatabase;
  let replicaA: OpenedPostgres;
  let replicaB: OpenedPostgres;
  let lite: ServerValues;
  let a: PostgresServerValues;
  let bValues: PostgresServerValues;

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-pg-values-"));
    sqlite = openDatabase(dataDir);
    url = await freshPostgresDatabase("values");
    replicaA = await openPostgres({ url, poolSize: 6 });
    replicaB = await openPostgres({ url, poolSize: 6 });
    lite = createServerValues(sqlite.db);
    a = createPostgresServerValues(replicaA.db, { url });
    bValues = createPostgresServerValues(replicaB.db, { url });
    await a.start();
    await bValues.start();
  });
  afterAll(async () => {
    await a?.close();
    await bValues?.close();
    await replicaA?.close();
    await replicaB?.close();
    sqlite?.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it("answers every update and read exactly as SQLite does for the same changes", async () => {
    // Each step: the names, the time, and a change that records what it was given.
    const steps: { names: string[]; now: number; next: (Buffer | null | undefined)[] | undefined }[] = [
      { names: ["k1", "k2"], now: NOW, next: [b("one"), undefined] },
      { names: ["k2", "k1"], now: NOW + 1, next: [b("two"), undefined] },
      { names: ["k1", "k2"], now: NOW + 2, next: undefined },
      { names: ["k1"], now: NOW + 3, next: [b("uno")] },
      { names: ["k2", "k3"], now: NOW + 4, next: [null, null] },
      { names: ["k1", "k2", "k3"], now: NOW + 5, next: [undefined, b(""), b("three")] },
    ];
    for (const step of steps) {
      const seen: unknown[] = [];
      const change: ServerValuesChange = (current, createTimes) => {
        seen.push(text(current), [...createTimes]);
        return step.next;
      };
      const fromLite = text(await lite.update(step.names, step.now, change));
      const liteSeen = seen.splice(0);
      const fromPg = text(await a.update(step.names, step.now, change));
      expect(fromPg, JSON.stringify(step.names)).toEqual(fromLite);
      expect(seen).toEqual(liteSeen);
      for (const name of ["k1", "k2", "k3", "absent"]) expect((await a.read(name))?.toString()).toBe((await lite.read(name))?.toString());
    }
    // No placeholder row is ever left behind by a change that stored nothing.
    const { rows } = await replicaA.pool.query("SELECT name FROM server_keys WHERE name LIKE 'k%' ORDER BY name");
    expect(rows.map((r) => r.name)).toEqual(["k1", "k2", "k3"]);
  });

  it("gives one agreed value when replicas create the same value at once", async () => {
    for (let round = 0; round < 5; round++) {
      const name = `first-start-${round}`;
      const results = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          (i % 2 ? a : bValues).update([name], NOW, ([current]) => (current === undefined ? [b(`replica ${i}`)] : undefined)),
        ),
      );
      const values = new Set(results.map(([v]) => v?.toString()));
      expect(values.size, [...values].join(", ")).toBe(1);
      const { rows } = await replicaA.pool.query("SELECT value FROM server_keys WHERE name = $1", [name]);
      expect(rows.map((r) => r.value.toString())).toEqual([...values]);
    }
  });

  it("counts on every change under concurrent updates from two replicas (no lost update)", async () => {
    const bump: ServerValuesChange = ([current]) => [b(String(Number(current?.toString() ?? "0") + 1))];
    await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? a : bValues).update(["counter"], NOW, bump)));
    expect((await a.read("counter"))?.toString()).toBe("20");
  });

  it("shows this replica's own update to its watchers on the very next call", async () => {
    const parse = vi.fn((values: readonly (Buffer | undefined)[]) => text(values));
    const watched = a.watch(["own", "own2"], parse);
    expect(watched()).toEqual([undefined, undefined]);
    await a.update(["own"], NOW, () => [b("mine")]);
    expect(watched()).toEqual(["mine", undefined]);
    expect(watched()).toEqual(["mine", undefined]);
    expect(parse).toHaveBeenCalledTimes(2); // parsed again only when its bytes changed
  });

  it("shows another replica's change, rotation and deletion to a watcher, through NOTIFY and at once after refresh()", async () => {
    const watched = bValues.watch(["shared"], ([v]) => v?.toString());
    expect(watched()).toBeUndefined();
    await a.update(["shared"], NOW, () => [b("v1")]);
    await vi.waitFor(() => expect(watched()).toBe("v1"), { timeout: 5000, interval: 5 });
    await a.update(["shared"], NOW, () => [b("v2")]);
    await bValues.refresh(); // the strict "by the next call" path: one read
    expect(watched()).toBe("v2");
    await a.update(["shared"], NOW, () => [null]);
    await vi.waitFor(() => expect(watched()).toBeUndefined(), { timeout: 5000, interval: 5 });
  });

  it("announces nothing for a change that stored nothing, and never announces a rolled-back change", async () => {
    const listener = new (await import("pg")).default.Client({ connectionString: url });
    await listener.connect();
    const heard: string[] = [];
    listener.on("notification", (m) => heard.push(m.payload ?? ""));
    await listener.query(`LISTEN ${SERVER_VALUES_CHANNEL}`);
    try {
      await a.update(["quiet"], NOW, () => undefined);
      await expect(
        a.update(["quiet"], NOW, () => {
          throw new Error("refused");
        }),
      ).rejects.toThrow("refused");
      await a.update(["loud"], NOW, () => [b("x")]);
      await vi.waitFor(() => expect(heard).toEqual([JSON.stringify(["loud"])]), { timeout: 5000, interval: 5 });
      expect(await a.read("quiet")).toBeUndefined();
    } finally {
      await listener.end();
    }
  });

  it("reads again until it succeeds when the read a notification asked for fails (a full pool)", async () => {
    const small = await openPostgres({ url, poolSize: 1, acquireTimeoutMs: 200 });
    const failures: Error[] = [];
    const values = createPostgresServerValues(small.db, { url, onListenError: (err) => failures.push(err) });
    try {
      await values.start();
      const watched = values.watch(["pool-full"], ([v]) => v?.toString());
      const held = await small.pool.connect();
      try {
        await a.update(["pool-full"], NOW, () => [b("later")]);
        await vi.waitFor(() => expect(failures.length).toBeGreaterThan(0), { timeout: 5000, interval: 10 });
        expect(watched()).toBeUndefined();
      } finally {
        held.release();
      }
      await vi.waitFor(() => expect(watched()).toBe("later"), { timeout: 5000, interval: 20 });
    } finally {
      await values.close();
      await small.close();
    }
  });

  it("catchUp() shows a change that no notification announced (plain SQL) to the very next read", async () => {
    await a.update(["silent"], NOW, () => [b("before")]);
    await bValues.catchUp();
    const watched = bValues.watch(["silent"], ([v]) => v?.toString());
    expect(watched()).toBe("before");
    await replicaA.pool.query("UPDATE server_keys SET value = $1 WHERE name = 'silent'", [b("after")]);
    expect(watched()).toBe("before"); // nothing announced it
    await bValues.catchUp();
    expect(watched()).toBe("after");
    await replicaA.pool.query("DELETE FROM server_keys WHERE name = 'silent'");
    await bValues.catchUp();
    expect(watched()).toBeUndefined();
  });

  it("catchUp() called while a check is in flight waits for the next check, which sees what committed meanwhile", async () => {
    await a.update(["in-flight"], NOW, () => [b("old")]);
    // A replica whose fingerprint reads are done at once but answered only when the test says:
    // so a check is surely in flight, its read surely made, when the change below commits.
    let answer: () => void = () => {};
    let gate = new Promise<void>((resolve) => (answer = resolve));
    const made: Promise<unknown>[] = [];
    const db = new Proxy(replicaB.db, {
      get(target, prop) {
        if (prop !== "execute") return Reflect.get(target, prop);
        return (query: Parameters<typeof target.execute>[0]) => {
          const result = target.execute(query);
          made.push(result);
          return gate.then(() => result);
        };
      },
    });
    const values = createPostgresServerValues(db, { url });
    try {
      await values.start();
      const watched = values.watch(["in-flight"], ([v]) => v?.toString());
      const opened = () => {
        answer();
        gate = new Promise<void>((resolve) => (answer = resolve));
      };
      const first = values.catchUp();
      await vi.waitFor(() => expect(made.length).toBe(1));
      await made[0];
      await replicaA.pool.query("UPDATE server_keys SET value = $1 WHERE name = 'in-flight'", [b("new")]);
      const second = values.catchUp();
      opened();
      await first;
      await vi.waitFor(() => expect(made.length).toBe(2));
      opened();
      await second;
      expect(watched()).toBe("new");
    } finally {
      answer();
      await values.close();
    }
  });

  it("listens again after its connection is dropped and catches up on what it missed", async () => {
    const watched = bValues.watch(["after-drop"], ([v]) => v?.toString());
    const { rows } = await replicaA.pool.query("SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query = $1", [
      `LISTEN ${SERVER_VALUES_CHANNEL}`,
    ]);
    expect(rows.length).toBe(2); // one listening connection per replica (the test above closed its own)
    await replicaA.pool.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query = $1", [
      `LISTEN ${SERVER_VALUES_CHANNEL}`,
    ]);
    // Written while nobody listens: only the catch-up read on reconnect can bring it.
    await a.update(["after-drop"], NOW, () => [b("missed")]);
    await vi.waitFor(() => expect(watched()).toBe("missed"), { timeout: 8000, interval: 20 });
  });
});
