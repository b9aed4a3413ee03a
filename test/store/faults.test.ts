/**
 * Storage faults (docs/security.md "Faults never leave it down"): a damaged file is refused at start-up (F11), another
 * connection holding the write lock makes writes wait without blocking reads, then
 * UNAVAILABLE past a bound (F7),
 * a full disk makes writes UNAVAILABLE with nothing written while reads go on (F4).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { toConnectError } from "../../src/errors/to-connect-error.js";
import { builtInRoleUid } from "../../src/store/builtin-roles.js";
import { createGroupsRepository } from "../../src/store/sqlite/groups.js";
import { databaseFile, openDatabase } from "../../src/store/sqlite/db.js";
import { createClient } from "@connectrpc/connect";
import { GroupsService } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { startTestApp } from "../support/app.js";
import { rpcTransports } from "../support/transports.js";
import { rest } from "../support/rest.js";

const dirs: string[] = [];
function tempDir() {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-faults-"));
  dirs.push(d);
  return d;
}
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

describe("storage faults", () => {
  it("F11: refuses to open a damaged database, naming the file", async () => {
    const dir = tempDir();
    const opened = openDatabase(dir);
    const groups = createGroupsRepository(opened.db);
    for (let i = 0; i < 200; i++)
      await groups.create({ parentUid: null, name: `group ${i}`, description: "x".repeat(200), verified: false, kind: 0 }, Date.now());
    opened.close();
    const file = databaseFile(dir);
    const bytes = fs.readFileSync(file);
    const pageSize = bytes.readUInt16BE(16);
    // Scribble over the middle of the third page (a table b-tree page, past the schema page).
    bytes.fill(0xa5, pageSize * 2 + 8, pageSize * 3 - 8);
    fs.writeFileSync(file, bytes);
    expect(() => openDatabase(dir)).toThrow(new RegExp(`database ${file.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")} is damaged`));
    // The refusal released the data-directory lock: opening again is refused for the damage,
    // not for a lock left behind.
    expect(() => openDatabase(dir)).toThrow(/is damaged/);
  });

  it("F7: a write lock held elsewhere past the busy bound gives UNAVAILABLE, nothing written", async () => {
    // A short bound (the pinned one is LIMITS.storageBusyMs) keeps the test quick.
    const t = await startTestApp({}, { storageBusyMs: 50 });
    const other = new Database(t.dbFile);
    try {
      other.exec("BEGIN IMMEDIATE");
      const refused = await Promise.all([0, 1, 2].map((i) => rest(t.url, "POST", "/iam/v2beta1/groups", { name: `blocked ${i}` })));
      for (const res of refused) {
        expect(res.status).toBe(503);
        expect(res.body.code).toBe(14);
        expect(res.body.details[0].reason).toBe("STORAGE_BUSY");
        expect(res.body.message).toContain("nothing was changed");
      }
      other.exec("ROLLBACK");
      // Reads and writes work again once the lock is gone.
      expect((await rest(t.url, "GET", "/iam/v2beta1/groups")).body.groups).toEqual([]);
      expect((await rest(t.url, "POST", "/iam/v2beta1/groups", { name: "unblocked" })).status).toBe(200);
    } finally {
      other.close();
      await t.close();
    }
  });

  it("F7: writes waiting for a lock held elsewhere never stall reads; they succeed once it is released", async () => {
    const t = await startTestApp();
    const other = new Database(t.dbFile);
    try {
      // An invite to delete while the lock is held: a write outside a create or update.
      const org = (await rest(t.url, "POST", "/iam/v2beta1/groups", { name: "org" })).body.uid as string;
      const invite = await rest(t.url, "POST", `/iam/v2beta1/groupInvites/${org}`, { roleUid: builtInRoleUid("viewer"), ttl: "3600s" });
      expect(invite.status).toBe(200);
      other.exec("BEGIN IMMEDIATE");
      const events: string[] = [];
      // Six writes on three doors, in flight together while the lock is held.
      const groups = createClient(GroupsService, rpcTransports[1]!.create(t.url));
      const writes = [
        ...[0, 1, 2].map((i) =>
          rest(t.url, "POST", "/iam/v2beta1/groups", { name: `rest ${i}` }).then((r) => {
            events.push(`write ${r.status}`);
            return r.status;
          }),
        ),
        ...[0, 1, 2].map((i) =>
          groups.createGroup({ group: { name: `connect ${i}` } }).then(() => {
            events.push("write 200");
            return 200;
          }),
        ),
      ];
      writes.push(
        rest(t.url, "DELETE", `/iam/v2beta1/groupInvites/${invite.body.uid}`).then((r) => {
          events.push(`write ${r.status}`);
          return r.status;
        }),
      );
      // Reads on two doors are answered while every write still waits.
      const read = await rest(t.url, "GET", "/iam/v2beta1/groups");
      events.push(`read ${read.status}`);
      await groups.listGroups({});
      events.push("read connect");
      expect(events).toEqual(["read 200", "read connect"]);
      other.exec("ROLLBACK");
      expect(await Promise.all(writes)).toEqual([200, 200, 200, 200, 200, 200, 200]);
      expect((await rest(t.url, "GET", "/iam/v2beta1/groups")).body.groups).toHaveLength(7);
      expect(other.prepare("SELECT count(*) AS n FROM group_invites").get()).toEqual({ n: 0 });
    } finally {
      other.close();
      await t.close();
    }
  });

  it("F4: a full disk fails the write as UNAVAILABLE and rolls it back; reads still work", async () => {
    const dir = tempDir();
    const opened = openDatabase(dir);
    try {
      const groups = createGroupsRepository(opened.db);
      const root = await groups.create({ parentUid: null, name: "root", description: "", verified: false, kind: 0 }, Date.now());
      const sqlite = opened.db.$client;
      // No room to grow: the next page the database needs is refused with SQLITE_FULL.
      sqlite.pragma(`max_page_count = ${sqlite.pragma("page_count", { simple: true })}`);
      let failure: unknown;
      try {
        for (let i = 0; i < 500; i++)
          await groups.create({ parentUid: root.uid, name: `child ${i}`, description: "y".repeat(400), verified: false, kind: 0 }, Date.now());
      } catch (err) {
        failure = err;
      }
      expect((failure as { code?: string }).code).toBe("SQLITE_FULL");
      const { error, unexpected } = toConnectError(failure, "iam.chainguard.dev");
      expect(error.code).toBe(14);
      expect(error.rawMessage).toContain("disk is full");
      expect(unexpected).toBe(failure); // logged by the pipeline
      // The failed transaction left nothing half-written, and reads are fine.
      expect(sqlite.pragma("integrity_check", { simple: true })).toBe("ok");
      const count = await groups.count({ uidp: {} });
      expect(count).toBe((sqlite.prepare("SELECT count(*) AS n FROM groups").get() as { n: number }).n);
    } finally {
      opened.close();
    }
  });
});
