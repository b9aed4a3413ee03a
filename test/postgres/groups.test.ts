/**
 * The groups repository on PostgreSQL (src/store/postgres/groups.ts) against the real cluster:
 * the same answers as the SQLite repository for the same rows (keyset order bytewise, every
 * filter, paging by cursor, counts), the same errors, and its invariants kept with writers on
 * two pools at once (two replicas): no child without its parent, delete only if empty, and
 * a child's kind always its root's.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ApiError, GrpcCode } from "../../src/errors/api-error.js";
import { builtInRoleUid } from "../../src/store/builtin-roles.js";
import { GROUP_ORDERS, type GroupListFilter, type GroupRecord, type GroupsRepository } from "../../src/store/groups.js";
import { openDatabase, type OpenedDatabase } from "../../src/store/sqlite/db.js";
import { createGroupsRepository } from "../../src/store/sqlite/groups.js";
import { openPostgres, type OpenedPostgres } from "../../src/store/postgres/connection.js";
import { createPostgresGroupsRepository } from "../../src/store/postgres/groups.js";
import * as pgSchema from "../../src/store/postgres/schema.js";
import * as sqliteSchema from "../../src/store/sqlite/schema.js";
import { expectSamePages } from "../support/store-answers.js";
import { describePostgres, freshPostgresDatabase } from "../support/postgres.js";

const NOW = 1_700_000_000_000;
const ROOT_A = "a".repeat(40);
const ROOT_B = "b".repeat(40);

/** Rows both engines get, with names whose bytewise order differs from a dictionary's. */
function seedRows(): GroupRecord[] {
  const names = ["beta", "Beta", "_under", "alpha", "Zed", "alpha", "a b", "a-b", "a.b", "0zero"];
  const rows: GroupRecord[] = [];
  const add = (uid: string, parentUid: string | null, i: number) =>
    rows.push({
      uid,
      parentUid,
      name: names[i % names.length]!,
      description: `d${i}`,
      verified: i % 3 === 0,
      kind: 0,
      createTime: NOW + (i % 4),
      updateTime: NOW + 10 - (i % 5),
    });
  add(ROOT_A, null, 0);
  add(ROOT_B, null, 4);
  let i = 1;
  for (const root of [ROOT_A, ROOT_B]) {
    for (let c = 0; c < 4; c++) {
      const child = `${root}/${(c * 0x1111).toString(16).padStart(16, "0")}`;
      add(child, root, i++);
      for (let g = 0; g < 3; g++) add(`${child}/${(0xf000 + g).toString(16).padStart(16, "0")}`, child, i++);
    }
  }
  return rows;
}

async function rejection(p: Promise<unknown>): Promise<ApiError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof ApiError)) throw new Error(`expected an ApiError, got ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`);
  return err;
}

describePostgres("groups on PostgreSQL", () => {
  let dataDir: string;
  let sqlite: OpenedDatabase;
  let replicaA: OpenedPostgres;
  let replicaB: OpenedPostgres;
  let lite: GroupsRepository;
  let a: GroupsRepository;
  let b: GroupsRepository;

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-pg-groups-"));
    sqlite = openDatabase(dataDir);
    const url = await freshPostgresDatabase("groups");
    replicaA = await openPostgres({ url, poolSize: 8 });
    replicaB = await openPostgres({ url, poolSize: 8 });
    lite = createGroupsRepository(sqlite.db);
    a = createPostgresGroupsRepository(replicaA.db);
    b = createPostgresGroupsRepository(replicaB.db);
    const rows = seedRows();
    sqlite.db.insert(sqliteSchema.groups).values(rows).run();
    await replicaA.db.insert(pgSchema.groups).values(rows);
    // The built-in owner role, which SQLite's start-up seeds (owner bindings refer to it).
    await replicaA.db
      .insert(pgSchema.roles)
      .values({ uid: builtInRoleUid("owner"), name: "owner", builtIn: true, capabilities: "[1]", createTime: NOW, updateTime: NOW });
  });
  afterAll(async () => {
    await replicaA?.close();
    await replicaB?.close();
    sqlite?.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it("lists, pages, counts and finds exactly what the SQLite repository does for the same rows", async () => {
    const child = `${ROOT_A}/${(0x1111).toString(16).padStart(16, "0")}`;
    const filters: GroupListFilter[] = [
      { uidp: {} },
      { uidp: { inRoot: true } },
      { uidp: { childrenOf: ROOT_A } },
      { uidp: { descendantsOf: ROOT_B } },
      { uidp: { ancestorsOf: `${child}/000000000000f001` } },
      { uidp: { ids: [ROOT_B, child, "f".repeat(40)] } },
      { uidp: {}, name: "alpha" },
      { uidp: {}, within: [child, ROOT_B] },
      { uidp: { descendantsOf: ROOT_A }, within: [] },
    ];
    for (const filter of filters) {
      await expectSamePages(lite, a, filter, GROUP_ORDERS, { limit: 3 });
      expect(await a.count(filter)).toBe(await lite.count(filter));
      expect(await a.listAll(filter, 5)).toEqual(await lite.listAll(filter, 5));
    }
    // a skip after a cursor, as the request's `skip` does
    const page = { order: "name" as const, desc: false, after: { value: "Beta", uid: ROOT_B }, offset: 2, limit: 4 };
    expect(await a.list({ uidp: {} }, page)).toEqual(await lite.list({ uidp: {} }, page));
    for (const name of ["beta", "alpha", "missing"]) expect(await a.findVerifiedRoot(name)).toEqual(await lite.findVerifiedRoot(name));
    expect(await a.get(child)).toEqual(await lite.get(child));
  });

  it("gives the SQLite repository's errors: parent missing, not empty, owner not a user", async () => {
    const missing = await rejection(a.create({ parentUid: `${"c".repeat(40)}`, name: "x", description: "", verified: false, kind: 0 }, NOW));
    expect(missing.code).toBe(GrpcCode.NotFound);
    const notEmpty = await rejection(a.delete(ROOT_A));
    expect(notEmpty.code).toBe(GrpcCode.FailedPrecondition);
    expect(notEmpty.message).toContain("cannot delete group with child groups");
    expect(notEmpty.metadata).toEqual({ child_kind: "groups" });
    expect((await rejection(a.update("d".repeat(40), { name: "x" }, NOW))).code).toBe(GrpcCode.NotFound);
    expect((await rejection(a.delete("d".repeat(40)))).code).toBe(GrpcCode.NotFound);
    const notUser = await rejection(a.create({ parentUid: null, name: "org", description: "", verified: false, kind: 0 }, NOW, `${ROOT_A}/0000000000000000`));
    expect(notUser.code).toBe(GrpcCode.PermissionDenied);
  });

  it("creates an organization with its owner binding, and deletes it with its bindings after the guard read the grants", async () => {
    const user = "e".repeat(40);
    await replicaA.db.insert(pgSchema.identities).values({ uid: user, name: "user", createTime: NOW, updateTime: NOW });
    const org = await b.create({ parentUid: null, name: "org", description: "", verified: false, kind: 2 }, NOW, user);
    const bindings = await replicaA.db.select().from(pgSchema.roleBindings);
    expect(bindings.filter((r) => r.groupUid === org.uid).map((r) => [r.identityUid, r.roleUid])).toEqual([[user, builtInRoleUid("owner")]]);

    // The guard sees what the SQLite GrantView would: the caller's grants and the roles' capabilities.
    const seen: unknown[] = [];
    const refused = await rejection(
      a.delete(org.uid, (view, roleUids) => {
        seen.push(
          view.grantsOf(user),
          roleUids,
          roleUids.map((r) => view.roleCapabilities(r)),
        );
        throw new ApiError(GrpcCode.PermissionDenied, "no");
      }),
    );
    expect(refused.code).toBe(GrpcCode.PermissionDenied);
    expect(seen).toEqual([[{ groupUid: org.uid, capabilities: [1] }], [builtInRoleUid("owner")], [[1]]]);
    expect(await a.get(org.uid)).toBeDefined(); // refused by the guard: nothing deleted

    await a.delete(org.uid, () => {});
    expect(await a.get(org.uid)).toBeUndefined();
    expect((await replicaA.db.select().from(pgSchema.roleBindings)).filter((r) => r.groupUid === org.uid)).toEqual([]);
  });

  it("never leaves a child without its parent when one replica deletes the parent while another creates children", async () => {
    let deleted = 0;
    let kept = 0;
    for (let round = 0; round < 12; round++) {
      const parent = await a.create({ parentUid: ROOT_B, name: `race ${round}`, description: "", verified: false, kind: 0 }, NOW);
      const creates = Array.from({ length: 4 }, (_, i) =>
        (i % 2 ? a : b).create({ parentUid: parent.uid, name: `child ${i}`, description: "", verified: false, kind: 0 }, NOW),
      );
      const outcomes = await Promise.allSettled([b.delete(parent.uid), ...creates]);
      const [del, ...made] = outcomes;
      // Every failure is the API's own answer, never a storage error leaking out.
      for (const o of outcomes) if (o.status === "rejected") expect(o.reason, String(o.reason)).toBeInstanceOf(ApiError);
      const created = made.filter((o) => o.status === "fulfilled").length;
      if (del!.status === "fulfilled") {
        deleted += 1;
        expect(created).toBe(0);
        for (const o of made) expect((o as PromiseRejectedResult).reason.code).toBe(GrpcCode.NotFound);
      } else {
        kept += 1;
        expect((del as PromiseRejectedResult).reason.code).toBe(GrpcCode.FailedPrecondition);
        expect(created).toBeGreaterThan(0);
      }
    }
    const orphans = await replicaA.pool.query(
      "SELECT uid FROM groups g WHERE parent_uid IS NOT NULL AND NOT EXISTS (SELECT 1 FROM groups p WHERE p.uid = g.parent_uid)",
    );
    expect(orphans.rows).toEqual([]);
    expect(deleted + kept).toBe(12);
  });

  it("keeps every child's kind its root's when one replica changes the root's kind while another creates under it", async () => {
    const root = await a.create({ parentUid: null, name: "kinds", description: "", verified: false, kind: 1 }, NOW);
    const folder = await a.create({ parentUid: root.uid, name: "folder", description: "", verified: false, kind: 0 }, NOW);
    for (let round = 0; round < 8; round++) {
      await Promise.all([
        a.update(root.uid, { kind: 2 + (round % 3) }, NOW),
        ...Array.from({ length: 3 }, (_, i) => b.create({ parentUid: folder.uid, name: `k${round}.${i}`, description: "", verified: false, kind: 0 }, NOW)),
      ]);
      const { rows } = await replicaA.pool.query("SELECT DISTINCT kind FROM groups WHERE uid = $1 OR (uid > $2 AND uid < $3)", [
        root.uid,
        `${root.uid}/`,
        `${root.uid}0`,
      ]);
      expect(rows).toEqual([{ kind: 2 + (round % 3) }]);
    }
  });
});
