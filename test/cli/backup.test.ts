/**
 * `trellis backup` and `trellis restore` as an operator runs them: real processes, a real
 * `trellis serve` child.
 *
 * The main test writes through the API (REST and gRPC, four clients at once), takes a backup
 * with the CLI in the middle of the stream, restores it into a fresh directory, starts a
 * server there and finds every write acknowledged before the backup started, with the
 * database's invariants intact; the server kept acknowledging writes while the backup ran.
 * The others hold the refusals: restoring over a live server, over an existing database
 * without --force, a backup over an existing file without --force, a damaged or foreign file.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createClient } from "@connectrpc/connect";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GroupsService } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { databaseFile } from "../../src/store/sqlite/db.js";
import { operatorToken } from "../support/auth.js";
import { type CliRunner, cliRunner } from "../support/cli.js";
import { type Running, startServe } from "../support/serve.js";
import { closeGrpcClients, createGrpcJsTransport } from "../support/transports.js";

const dirs: string[] = [];
function tempDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}
const runners: CliRunner[] = [];
function cli(api = "http://127.0.0.1:1"): CliRunner {
  const runner = cliRunner(api);
  runners.push(runner);
  return runner;
}
afterAll(() => {
  closeGrpcClients();
  for (const r of runners.splice(0)) r.cleanup();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

async function stop(server: Running): Promise<void> {
  server.child.kill("SIGTERM");
  await server.exited;
}

async function restCreateGroup(url: string, token: string, parent: string, name: string): Promise<string> {
  const res = await fetch(`${url}/iam/v2beta1/groups/${parent}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: JSON.stringify({ name }),
  });
  if (res.status !== 200) throw new Error(`CreateGroup over REST: HTTP ${res.status} ${await res.text()}`);
  return ((await res.json()) as { uid: string }).uid;
}

/** The invariants every restored database must keep, read straight from its file. */
function checkInvariants(dataDir: string): Set<string> {
  const db = new Database(databaseFile(dataDir), { readonly: true, fileMustExist: true });
  try {
    expect(db.pragma("integrity_check", { simple: true })).toBe("ok");
    expect(db.pragma("foreign_key_check")).toEqual([]);
    const orphans = db
      .prepare("SELECT uid FROM groups g WHERE parent_uid IS NOT NULL AND NOT EXISTS (SELECT 1 FROM groups p WHERE p.uid = g.parent_uid)")
      .all();
    expect(orphans).toEqual([]);
    return new Set((db.prepare("SELECT uid FROM groups").all() as { uid: string }[]).map((r) => r.uid));
  } finally {
    db.close();
  }
}

function groupNames(dataDir: string): string[] {
  const db = new Database(databaseFile(dataDir), { readonly: true, fileMustExist: true });
  try {
    return (db.prepare("SELECT name FROM groups").all() as { name: string }[]).map((r) => r.name);
  } finally {
    db.close();
  }
}

describe("trellis backup, then trellis restore", () => {
  it("restores every write acknowledged before the backup started, while REST and gRPC writers kept going", async () => {
    const dataDir = tempDir("trellis-backup-live-");
    const backupFile = path.join(tempDir("trellis-backup-out-"), "trellis.backup");
    const server = await startServe(["--addr", "127.0.0.1:0", "--data", dataDir]);
    const acknowledged: string[] = [];
    const failures: unknown[] = [];
    let running = true;
    let backupRunning = false;
    let backupDone = false;
    let acknowledgedDuringBackup = 0;
    /** Names of writes sent after the backup had finished: none can be in it. */
    const sentAfterBackup = new Set<string>();
    try {
      const token = await operatorToken(dataDir);
      const grpc = createClient(GroupsService, createGrpcJsTransport(server.url, { token }));
      const org = await restCreateGroup(server.url, token, "", "backup org");
      acknowledged.push(org);
      // Two writers per door; every other write is a folder under an acknowledged group, so
      // parent links matter in the copy.
      const writers = Array.from({ length: 4 }, async (_, w) => {
        for (let i = 0; running; i++) {
          const parent = i % 2 === 1 ? (acknowledged[(i * 7 + w) % acknowledged.length] as string) : org;
          const name = `w${w} n${i}`;
          if (backupDone) sentAfterBackup.add(name);
          try {
            const uid = w % 2 === 0 ? await restCreateGroup(server.url, token, parent, name) : (await grpc.createGroup({ parent, group: { name } })).uid;
            acknowledged.push(uid);
            if (backupRunning) acknowledgedDuringBackup++;
          } catch (err) {
            failures.push(err);
          }
        }
      });
      while (acknowledged.length < 40 && failures.length === 0) await new Promise((r) => setTimeout(r, 5));

      const before = [...acknowledged];
      backupRunning = true;
      const backup = await cli().run(["backup", "--to", backupFile, "--data", dataDir]);
      backupRunning = false;
      backupDone = true;
      const afterBackup = acknowledged.length;
      while (acknowledged.length < afterBackup + 20 && failures.length === 0) await new Promise((r) => setTimeout(r, 5));
      running = false;
      await Promise.all(writers);

      expect(backup.stderr).toBe("");
      expect(backup.code).toBe(0);
      expect(backup.stdout).toMatch(new RegExp(`^backup ${backupFile}: \\d+ bytes, \\d+ pages, \\d+ tables, \\d+ rows\\n$`));
      expect(fs.statSync(backupFile).mode & 0o777).toBe(0o600);
      expect(fs.readdirSync(path.dirname(backupFile))).toEqual(["trellis.backup"]);
      // The server kept serving: writes were acknowledged while the backup ran, none failed.
      expect(failures).toEqual([]);
      expect(acknowledgedDuringBackup).toBeGreaterThan(0);
      await stop(server);

      const restoredDir = path.join(tempDir("trellis-restore-"), "data");
      const restore = await cli().run(["restore", "--from", backupFile, "--data", restoredDir]);
      expect(restore.stderr).toBe("");
      expect(restore.code).toBe(0);
      expect(restore.stdout).toMatch(/^restored .*trellis\.db: \d+ bytes, \d+ pages, \d+ tables, \d+ rows\n$/);
      const stored = checkInvariants(restoredDir);
      expect(before.filter((uid) => !stored.has(uid))).toEqual([]);
      // It is one snapshot from the backup's time: nothing sent after it finished is in it.
      expect(sentAfterBackup.size).toBeGreaterThan(0);
      expect(groupNames(restoredDir).filter((name) => sentAfterBackup.has(name))).toEqual([]);

      // A server starts on the restored directory and serves what was backed up, on both doors.
      const restored = await startServe(["--addr", "127.0.0.1:0", "--data", restoredDir]);
      try {
        const restoredToken = await operatorToken(restoredDir);
        const folder = before[before.length - 1] as string;
        const res = await fetch(`${restored.url}/iam/v2beta1/groups/${folder}`, { headers: { authorization: `Bearer ${restoredToken}` } });
        expect(res.status).toBe(200);
        expect(((await res.json()) as { uid: string }).uid).toBe(folder);
        const restoredGrpc = createClient(GroupsService, createGrpcJsTransport(restored.url, { token: restoredToken }));
        expect((await restoredGrpc.getGroup({ uid: org })).uid).toBe(org);
      } finally {
        await stop(restored);
      }
    } finally {
      running = false;
      if (server.child.exitCode === null) await stop(server);
    }
  }, 120_000);
});

describe("refusals", () => {
  let dataDir: string;
  let backupFile: string;
  let orgUid: string;
  beforeAll(async () => {
    dataDir = tempDir("trellis-backup-refusals-");
    backupFile = path.join(tempDir("trellis-backup-refusals-out-"), "good.backup");
    const server = await startServe(["--addr", "127.0.0.1:0", "--data", dataDir]);
    try {
      orgUid = await restCreateGroup(server.url, await operatorToken(dataDir), "", "refusals org");
      const made = await cli().run(["backup", "--to", backupFile, "--data", dataDir]);
      expect(made.code, made.stderr).toBe(0);
    } finally {
      await stop(server);
    }
  }, 60_000);

  it("refuses to restore into a data directory a server is running on, and changes nothing there", async () => {
    const server = await startServe(["--addr", "127.0.0.1:0", "--data", dataDir]);
    try {
      const before = fs.readdirSync(dataDir).sort();
      const r = await cli().run(["restore", "--from", backupFile, "--data", dataDir, "--force"]);
      expect(r.code).toBe(1);
      expect(r.stdout).toBe("");
      expect(r.stderr).toMatch(/^error: data directory .* is in use by another Trellis server/);
      expect(fs.readdirSync(dataDir).sort()).toEqual(before);
      const res = await fetch(`${server.url}/iam/v2beta1/groups/${orgUid}`, {
        headers: { authorization: `Bearer ${await operatorToken(dataDir)}` },
      });
      expect(res.status).toBe(200);
    } finally {
      await stop(server);
    }
  }, 60_000);

  it("refuses a data directory that holds a database without --force; with it, keeps the old database aside whole", async () => {
    // The old database: a server that died with its last write still in the -wal.
    const target = tempDir("trellis-restore-nonempty-");
    const crashed = await startServe(["--addr", "127.0.0.1:0", "--data", target]);
    await restCreateGroup(crashed.url, await operatorToken(target), "", "written before the restore");
    crashed.child.kill("SIGKILL");
    await crashed.exited;
    expect(fs.existsSync(`${databaseFile(target)}-wal`)).toBe(true);

    const refused = await cli().run(["restore", "--from", backupFile, "--data", target]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/already holds a database \(trellis\.db, trellis\.db-wal, trellis\.db-shm\); pass --force/);
    expect(groupNames(target)).toContain("written before the restore");

    const forced = await cli().run(["restore", "--from", backupFile, "--data", target, "--force"]);
    expect(forced.code, forced.stderr).toBe(0);
    const stem = /the previous database is kept as (\S+)\n$/.exec(forced.stdout)?.[1] as string;
    expect(path.basename(stem)).toMatch(/^trellis\.db\.before-restore-\d{8}T\d{6}Z$/);
    // The old database is kept, with its last write, and no old -wal or -shm is left beside the new one.
    const old = new Database(stem, { readonly: true, fileMustExist: true });
    try {
      expect((old.prepare("SELECT name FROM groups").all() as { name: string }[]).map((r) => r.name)).toContain("written before the restore");
    } finally {
      old.close();
    }
    expect(fs.existsSync(`${databaseFile(target)}-wal`)).toBe(false);
    expect(fs.existsSync(`${databaseFile(target)}-shm`)).toBe(false);
    const restored = checkInvariants(target);
    expect(restored.has(orgUid)).toBe(true);
    expect(groupNames(target)).not.toContain("written before the restore");
    expect(fs.statSync(databaseFile(target)).mode & 0o777).toBe(0o600);
  }, 60_000);

  it("refuses to write over an existing --to file without --force, and replaces it with --force", async () => {
    const file = path.join(tempDir("trellis-backup-exists-"), "taken.backup");
    fs.writeFileSync(file, "keep me");
    const refused = await cli().run(["backup", "--to", file, "--data", dataDir]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/taken\.backup already exists; choose another --to, or pass --force/);
    expect(fs.readFileSync(file, "utf8")).toBe("keep me");
    expect(fs.readdirSync(path.dirname(file))).toEqual(["taken.backup"]);

    const forced = await cli().run(["backup", "--to", file, "--data", dataDir, "--force"]);
    expect(forced.code, forced.stderr).toBe(0);
    expect(fs.readFileSync(file).subarray(0, 16).toString("latin1")).toBe("SQLite format 3\0");

    const usage = await cli().run(["backup", "--data", dataDir]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/required option '--to <file>'/);
    const own = await cli().run(["backup", "--to", databaseFile(dataDir), "--data", dataDir, "--force"]);
    expect(own.code).toBe(2);
    expect(own.stderr).toMatch(/one of the data directory's own database files/);

    // With the servers on PostgreSQL, copying ./data would back up nothing they use: refused.
    const other = path.join(tempDir("trellis-backup-pg-"), "pg.backup");
    const onPostgres = await cli().run(["backup", "--to", other, "--data", dataDir], { TRELLIS_DATABASE: "postgres://trellis:s3cret@db.invalid/trellis" });
    expect(onPostgres.code).toBe(2);
    expect(onPostgres.stderr).toMatch(/TRELLIS_DATABASE is set: backup and restore copy a SQLite data directory; back up PostgreSQL with its own tools/);
    expect(onPostgres.stderr).not.toContain("s3cret");
    expect(fs.existsSync(other)).toBe(false);
  }, 60_000);

  it("refuses a damaged backup and a file that is not a Trellis database, with a clear message, creating nothing", async () => {
    const work = tempDir("trellis-restore-corrupt-");
    const damaged = path.join(work, "damaged.backup");
    const bytes = fs.readFileSync(backupFile);
    const pageSize = bytes.readUInt16BE(16);
    // Seeded garbage over the second and third pages (b-tree pages of the schema's tables).
    let state = 20261125;
    for (let i = pageSize; i < Math.min(bytes.length, 3 * pageSize); i++) {
      state = (Math.imul(state, 1103515245) + 12345) >>> 0;
      bytes[i] = state >>> 24;
    }
    fs.writeFileSync(damaged, bytes);
    const target = path.join(work, "data");
    const r = await cli().run(["restore", "--from", damaged, "--data", target]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/damaged\.backup is damaged or not a database \(integrity_check: /);
    expect(fs.existsSync(databaseFile(target))).toBe(false);
    expect(fs.readdirSync(target)).toEqual(["trellis.server-lock"]);

    const text = path.join(work, "notes.txt");
    fs.writeFileSync(text, "these are not the pages you are looking for\n".repeat(200));
    const notDb = await cli().run(["restore", "--from", text, "--data", target]);
    expect(notDb.code).toBe(1);
    expect(notDb.stderr).toMatch(/notes\.txt is damaged or not a database \(integrity_check: file is not a database\)/);

    const emptyDb = path.join(work, "empty.db");
    const empty = new Database(emptyDb);
    empty.exec("CREATE TABLE t (x)");
    empty.close();
    const foreign = await cli().run(["restore", "--from", emptyDb, "--data", target]);
    expect(foreign.code).toBe(1);
    expect(foreign.stderr).toMatch(/empty\.db is not a Trellis database \(it has no __drizzle_migrations table\)/);
    expect(fs.existsSync(databaseFile(target))).toBe(false);
  }, 60_000);
});
