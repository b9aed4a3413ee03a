/**
 * The IAM repositories on PostgreSQL (identities, roles, role bindings; src/store/postgres/)
 * against the real cluster: the same script of calls on SQLite and on PostgreSQL gives the same
 * records and the same errors (code, message, reason, every detail), uids apart (fresh ones are
 * random, so each engine's are mapped onto the other's as they are created); and the invariants
 * hold with writers on two pools at once (two replicas): one binding per triple, an
 * organization keeps its last owner, no identity, role or binding without its group, one user
 * identity per person, and a revoked binding stops granting on the other replica at once.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ApiError, GrpcCode } from "../../src/errors/api-error.js";
import { builtInRoleUid } from "../../src/store/builtin-roles.js";
import type { GrantView } from "../../src/store/grant-view.js";
import type { GroupsRepository } from "../../src/store/groups.js";
import type { IdentitiesRepository, IdentityOrder, NewIdentity } from "../../src/store/identities.js";
import type { KeysetQuery } from "../../src/store/lists.js";
import { openPostgres, type OpenedPostgres } from "../../src/store/postgres/connection.js";
import { createPostgresGroupsRepository } from "../../src/store/postgres/groups.js";
import { createPostgresIdentitiesRepository } from "../../src/store/postgres/identities.js";
import { createPostgresRoleBindingsRepository } from "../../src/store/postgres/role-bindings.js";
import { createPostgresRolesRepository, ensureBuiltInRolesPostgres } from "../../src/store/postgres/roles.js";
import * as pgSchema from "../../src/store/postgres/schema.js";
import type { RoleBindingsRepository } from "../../src/store/role-bindings.js";
import type { RolesRepository } from "../../src/store/roles.js";
import { openDatabase, type OpenedDatabase } from "../../src/store/sqlite/db.js";
import { createIdentitiesRepository } from "../../src/store/sqlite/identities.js";
import { createRoleBindingsRepository } from "../../src/store/sqlite/role-bindings.js";
import { createRolesRepository, ensureBuiltInRoles } from "../../src/store/sqlite/roles.js";
import * as sqliteSchema from "../../src/store/sqlite/schema.js";
import { apiErrorShape } from "../support/store-answers.js";
import { describePostgres, freshPostgresDatabase } from "../support/postgres.js";

const NOW = 1_700_000_000_000;
const ORG_A = "a".repeat(40);
const ORG_B = "b".repeat(40);
const TEAM = `${ORG_A}/${"1".repeat(16)}`;
const OWNER = builtInRoleUid("owner");
const VIEWER = builtInRoleUid("viewer");

interface Repos {
  identities: IdentitiesRepository;
  roles: RolesRepository;
  bindings: RoleBindingsRepository;
}

async function outcome(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    (value) => ({ ok: value ?? null }),
    (err: unknown) => ({ error: apiErrorShape(err) }),
  );
}

async function rejection(p: Promise<unknown>): Promise<ApiError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  apiErrorShape(err);
  return err as ApiError;
}

describePostgres("IAM repositories on PostgreSQL", () => {
  let dataDir: string;
  let sqlite: OpenedDatabase;
  let replicaA: OpenedPostgres;
  let replicaB: OpenedPostgres;
  let lite: Repos;
  let a: Repos;
  let b: Repos;
  let groupsA: GroupsRepository;

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-pg-iam-"));
    sqlite = openDatabase(dataDir);
    const url = await freshPostgresDatabase("iam");
    replicaA = await openPostgres({ url, poolSize: 8 });
    replicaB = await openPostgres({ url, poolSize: 8 });
    lite = { identities: createIdentitiesRepository(sqlite.db), roles: createRolesRepository(sqlite.db), bindings: createRoleBindingsRepository(sqlite.db) };
    const repos = (db: OpenedPostgres["db"]): Repos => ({
      identities: createPostgresIdentitiesRepository(db),
      roles: createPostgresRolesRepository(db),
      bindings: createPostgresRoleBindingsRepository(db),
    });
    a = repos(replicaA.db);
    b = repos(replicaB.db);
    groupsA = createPostgresGroupsRepository(replicaA.db);
    const groupRows = [
      { uid: ORG_A, parentUid: null, name: "org a", description: "", verified: false, kind: 0, createTime: NOW, updateTime: NOW },
      { uid: TEAM, parentUid: ORG_A, name: "team", description: "", verified: false, kind: 0, createTime: NOW, updateTime: NOW },
      { uid: ORG_B, parentUid: null, name: "org b", description: "", verified: false, kind: 0, createTime: NOW, updateTime: NOW },
    ];
    sqlite.db.insert(sqliteSchema.groups).values(groupRows).run();
    await replicaA.db.insert(pgSchema.groups).values(groupRows);
    await ensureBuiltInRoles(sqlite.db, NOW);
    // Several replicas starting together each write the built-in roles: no collision.
    await Promise.all([
      ensureBuiltInRolesPostgres(replicaA.db, NOW),
      ensureBuiltInRolesPostgres(replicaB.db, NOW),
      ensureBuiltInRolesPostgres(replicaA.db, NOW),
    ]);
  });
  afterAll(async () => {
    await replicaA?.close();
    await replicaB?.close();
    sqlite?.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it("writes the same built-in roles as SQLite, and leaves them alone when run again", async () => {
    const all = { order: "uid" as const, desc: false, offset: 0, limit: 100 };
    expect(await a.roles.list({ uidp: { inRoot: true } }, all)).toEqual(await lite.roles.list({ uidp: { inRoot: true } }, all));
    await ensureBuiltInRolesPostgres(replicaB.db, NOW + 5);
    expect((await a.roles.get(OWNER))?.updateTime).toBe(NOW);
    // A role someone tampered with is put back, with the new update time.
    await replicaA.db.update(pgSchema.roles).set({ capabilities: "[]" }).where(eq(pgSchema.roles.uid, VIEWER));
    await ensureBuiltInRolesPostgres(replicaB.db, NOW + 6);
    sqlite.db.update(sqliteSchema.roles).set({ capabilities: "[]" }).where(eq(sqliteSchema.roles.uid, VIEWER)).run();
    await ensureBuiltInRoles(sqlite.db, NOW + 6);
    expect(await a.roles.list({ uidp: { inRoot: true } }, all)).toEqual(await lite.roles.list({ uidp: { inRoot: true } }, all));
    const viewer = await a.roles.get(VIEWER);
    expect(viewer?.capabilities).toEqual((await lite.roles.get(VIEWER))?.capabilities);
    expect(viewer?.updateTime).toBe(NOW + 6);
  });

  it("gives the SQLite repositories' records and errors for the same script of calls", async () => {
    // pg uid suffix → SQLite uid suffix, learnt as records are created on both.
    const suffixes = new Map<string, string>();
    const learn = (liteUid: string, pgUid: string) => {
      const l = liteUid.slice(liteUid.lastIndexOf("/") + 1);
      const p = pgUid.slice(pgUid.lastIndexOf("/") + 1);
      if (l !== p) suffixes.set(p, l);
    };
    const canon = (value: unknown) => {
      let text = JSON.stringify(value);
      for (const [p, l] of suffixes) text = text.split(p).join(l);
      return JSON.parse(text) as unknown;
    };
    /** The PostgreSQL uid that corresponds to a SQLite one. */
    const pgUid = (liteUid: string) => {
      let out = liteUid;
      for (const [p, l] of suffixes) out = out.split(l).join(p);
      return out;
    };
    let step = 0;
    /** Runs one call on both engines (uids translated) and expects the same outcome. */
    const both = async <T>(call: (r: Repos, uid: (u: string) => string) => Promise<T>, creates?: (v: T) => string[], mask?: RegExp) => {
      step++;
      const fromLite = await outcome(call(lite, (u) => u));
      const fromPg = await outcome(call(a, pgUid));
      if (creates && "ok" in (fromLite as object) && "ok" in (fromPg as object)) {
        const l = creates((fromLite as { ok: T }).ok);
        const p = creates((fromPg as { ok: T }).ok);
        for (const [i, u] of l.entries()) learn(u, p[i]!);
      }
      // `mask`: uids made inside a transaction that was then rolled back, random on each engine.
      const masked = (v: unknown) => (mask ? (JSON.parse(JSON.stringify(v).replace(mask, "<rolled back>")) as unknown) : v);
      expect(masked(canon(fromPg)), `step ${step}`).toEqual(masked(fromLite));
      return (fromLite as { ok?: T }).ok as T;
    };

    const claim: NewIdentity = {
      parentUid: ORG_A,
      name: "ci",
      description: "the CI robot",
      company: "",
      relationship: { kind: "claim_match", issuer: { exact: "https://issuer" }, subject: { pattern: "repo:.*" }, claims: { aud: "x" }, claimPatterns: {} },
    };
    const robot = await both(
      (r) => r.identities.create(claim, NOW),
      (v) => [v.uid],
    );
    const keys = await both(
      (r) =>
        r.identities.create(
          {
            parentUid: TEAM,
            name: "keys",
            description: "",
            company: "acme",
            relationship: { kind: "static_keys", issuer: "https://iss", subject: "sub", issuerKeys: "{}", expirationTime: NOW + 1000, audiences: [] },
          },
          NOW + 1,
        ),
      (v) => [v.uid],
    );
    await both((r) => r.identities.create({ ...claim, parentUid: "c".repeat(40) }, NOW));
    const user = await both((r) => r.identities.findOrCreateUser({ issuer: "https://idp", subject: "alice", name: "Alice", email: "a@x" }, NOW + 2));
    await both((r) => r.identities.findOrCreateUser({ issuer: "https://idp", subject: "alice", name: "ignored", email: "" }, NOW + 3));
    const bob = await both((r) => r.identities.findOrCreateUser({ issuer: "https://idp", subject: "bob", name: "Bob", email: "b@x" }, NOW + 2));
    await both((r, u) =>
      r.identities.update(
        u(robot.uid),
        (current) => ({ name: `${current.name}!`, relationship: { kind: "aws_identity", awsAccount: "123456789012" } }),
        NOW + 4,
      ),
    );
    await both((r, u) => r.identities.update(u(`${ORG_A}/ffffffffffffffff`), () => ({ name: "x" }), NOW));
    await both((r, u) =>
      r.identities.update(
        u(robot.uid),
        (_current, view: GrantView) => {
          if (view.grantsOf(user.uid).length === 0) throw new ApiError(GrpcCode.PermissionDenied, "no grants");
          return {};
        },
        NOW,
      ),
    );
    await both((r) => r.identities.updateMetadata(user.uid, { company: "acme", metadata: { role: "dev", updates_opt_in: true } }, NOW + 5));
    await both((r) => r.identities.updateMetadata(user.uid, { metadata: { role: "lead" } }, NOW + 6));
    await both((r) => r.identities.updateMetadata("d".repeat(40), {}, NOW));
    await both((r, u) => r.identities.touchLastSeen(u(keys.uid), NOW + 7));
    await both((r) => r.identities.touchLastSeen("d".repeat(40), NOW + 7));

    const custom = await both(
      (r) => r.roles.create({ parentUid: ORG_A, name: "custom", description: "d", capabilities: [3, 1] }, NOW + 8),
      (v) => [v.uid],
    );
    const teamRole = await both(
      (r) => r.roles.create({ parentUid: TEAM, name: "team role", description: "", capabilities: [] }, NOW + 8),
      (v) => [v.uid],
    );
    await both((r) => r.roles.create({ parentUid: "c".repeat(40), name: "x", description: "", capabilities: [] }, NOW));
    await both((r) =>
      r.roles.create({ parentUid: ORG_A, name: "refused", description: "", capabilities: [] }, NOW, (view) => {
        throw new ApiError(GrpcCode.PermissionDenied, `owner caps ${JSON.stringify(view.roleCapabilities(OWNER)?.length)}`);
      }),
    );
    await both((r) => r.roles.update(OWNER, { name: "x" }, NOW));
    await both((r, u) =>
      r.roles.update(u(custom.uid), { description: "new", capabilities: [1] }, NOW + 9, (_view, current) => expect(current.capabilities).toEqual([3, 1])),
    );
    await both((r) => r.roles.update("d".repeat(40), {}, NOW));
    await both((r) => r.roles.delete(OWNER));

    const f = (i: number) => ({ identityUid: `requests[${i}].identity`, roleUid: `requests[${i}].role`, request: `requests[${i}]` });
    const created = await both(
      (r, u) =>
        r.bindings.create(
          ORG_A,
          [
            { identityUid: user.uid, roleUid: OWNER, fields: f(0) },
            { identityUid: u(robot.uid), roleUid: u(custom.uid), fields: f(1) },
            { identityUid: bob.uid, roleUid: VIEWER, fields: f(2) },
          ],
          NOW + 10,
        ),
      (v) => v.map((x) => x.uid),
    );
    const teamBinding = await both(
      (r, u) => r.bindings.create(TEAM, [{ identityUid: u(keys.uid), roleUid: u(teamRole.uid), fields: f(0) }], NOW + 11),
      (v) => v.map((x) => x.uid),
    );
    // bad references: a team's identity and role at the organization, another org's role, missing ones
    await both((r, u) =>
      r.bindings.create(
        ORG_A,
        [
          { identityUid: u(keys.uid), roleUid: u(teamRole.uid), fields: f(0) },
          { identityUid: "d".repeat(40), roleUid: "d".repeat(40), fields: f(1) },
        ],
        NOW,
      ),
    );
    await both((r, u) => r.bindings.create(ORG_B, [{ identityUid: user.uid, roleUid: u(custom.uid), fields: f(0) }], NOW));
    await both((r) => r.bindings.create(ORG_A, [{ identityUid: user.uid, roleUid: OWNER, fields: f(4) }], NOW));
    await both(
      (r) =>
        r.bindings.create(
          ORG_B,
          [
            { identityUid: bob.uid, roleUid: VIEWER, fields: f(0) },
            { identityUid: bob.uid, roleUid: VIEWER, fields: f(1) },
          ],
          NOW,
        ),
      undefined,
      new RegExp(`${ORG_B}/[0-9a-f]{16}`, "g"),
    );
    await both((r) => r.bindings.create("c".repeat(40), [{ identityUid: bob.uid, roleUid: VIEWER, fields: f(0) }], NOW));
    await both((r) =>
      r.bindings.create(ORG_B, [{ identityUid: user.uid, roleUid: VIEWER, fields: f(0) }], NOW, (view, before, after) => {
        throw new ApiError(GrpcCode.PermissionDenied, JSON.stringify([view.grantsOf(user.uid).length, before, after, view.groupsBinding(OWNER)]));
      }),
    );
    const single = { identityUid: "identity", roleUid: "role" };
    await both((r, u) => r.bindings.update(u(created[2]!.uid), { roleUid: OWNER }, single));
    await both((r, u) => r.bindings.update(u(created[0]!.uid), { roleUid: VIEWER }, single)); // the last owner
    await both((r, u) => r.bindings.update(u(created[1]!.uid), { identityUid: user.uid, roleUid: OWNER }, single)); // exists
    await both((r, u) => r.bindings.update(u(created[1]!.uid), { identityUid: u(keys.uid) }, single)); // not visible
    await both((r, u) => r.bindings.update(u(`${ORG_A}/ffffffffffffffff`), {}, single));
    await both((r, u) => r.bindings.delete(u(created[0]!.uid))); // the last owner? no: bob is an owner now
    await both((r, u) => r.bindings.delete(u(created[2]!.uid))); // now the last owner
    await both((r, u) => r.bindings.delete(u(`${ORG_A}/ffffffffffffffff`)));
    await both((r) => r.identities.delete(bob.uid)); // bob is the last owner
    await both((r, u) => r.roles.delete(u(custom.uid))); // in use
    await both((r, u) => r.identities.delete(u(keys.uid), (_view, current) => expect(current.company).toBe("acme")));
    await both((r, u) => r.bindings.get(u(teamBinding[0]!.uid))); // gone with its identity
    await both((r, u) => r.roles.delete(u(teamRole.uid)));
    await both((r, u) => r.roles.delete(u(teamRole.uid)));
    await both((r, u) => r.identities.delete(u(keys.uid)));
    await both((r) => r.bindings.grantsOf(bob.uid));
    await both((r, u) => r.bindings.grantsOf(u(robot.uid)));

    // Lists, pages and counts, in every order and filter.
    const pages = async <O extends string>(
      list: (page: KeysetQuery<O>) => Promise<{ uid: string }[]>,
      value: (row: never, order: O) => string | number,
      order: O,
      desc: boolean,
    ) => {
      const seen: unknown[] = [];
      let after: KeysetQuery<O>["after"];
      for (let guard = 0; guard < 50; guard++) {
        const page = await list({ order, desc, after, offset: 0, limit: 2 });
        seen.push(...page);
        if (page.length < 2) return seen;
        const last = page[page.length - 1]!;
        after = { value: value(last as never, order), uid: last.uid };
      }
      throw new Error("paging did not end");
    };
    const identityValue = (row: Record<string, unknown>, order: IdentityOrder) =>
      ({ uid: row.uid, name: row.name, create_time: row.createTime, update_time: row.updateTime })[order] as string | number;
    for (const filter of [
      { uidp: {} },
      { uidp: { inRoot: true } },
      { uidp: { descendantsOf: ORG_A } },
      { uidp: {}, kind: "aws_identity" as const },
      { uidp: {}, name: "Alice" },
      { uidp: {}, within: [TEAM] },
    ]) {
      for (const order of ["uid", "name", "create_time", "update_time"] as const) {
        for (const desc of [false, true]) {
          await both(async (r) => pages((p) => r.identities.list(filter, p), identityValue as never, order, desc));
          await both(async (r) => pages((p) => r.roles.list(filter, p), identityValue as never, order, desc));
        }
      }
      await both((r) => r.identities.count(filter));
      await both((r) => r.roles.count(filter));
    }
    const bindingValue = (row: Record<string, unknown>, order: "uid" | "create_time") => (order === "uid" ? row.uid : row.createTime) as string | number;
    for (const filter of [
      { uidp: {} },
      { uidp: { descendantsOf: ORG_A } },
      { uidp: {}, identityUid: user.uid },
      { uidp: {}, roleUid: VIEWER },
      { uidp: {}, groupUid: ORG_A },
      { uidp: {}, within: [ORG_B] },
    ]) {
      for (const order of ["uid", "create_time"] as const) {
        for (const desc of [false, true]) await both(async (r) => pages((p) => r.bindings.list(filter, p), bindingValue as never, order, desc));
      }
      await both((r) => r.bindings.count(filter));
    }
  });

  it("creates the same binding once when two replicas create it at the same moment", async () => {
    const user = await a.identities.findOrCreateUser({ issuer: "https://idp", subject: "race-binding", name: "R", email: "" }, NOW);
    for (let round = 0; round < 6; round++) {
      const group = await groupsA.create({ parentUid: ORG_B, name: `race ${round}`, description: "", verified: false, kind: 0 }, NOW);
      const outcomes = await Promise.allSettled(
        Array.from({ length: 4 }, (_, i) =>
          (i % 2 ? a : b).bindings.create(group.uid, [{ identityUid: user.uid, roleUid: VIEWER, fields: { identityUid: "i", roleUid: "r" } }], NOW),
        ),
      );
      expect(outcomes.filter((o) => o.status === "fulfilled")).toHaveLength(1);
      for (const o of outcomes) if (o.status === "rejected") expect((await rejection(Promise.reject(o.reason))).code).toBe(GrpcCode.AlreadyExists);
      expect(await a.bindings.count({ uidp: {}, groupUid: group.uid })).toBe(1);
    }
  });

  it("keeps an organization's last owner when two replicas remove its two owners at once", async () => {
    const [u1, u2] = await Promise.all(["o1", "o2"].map((s) => a.identities.findOrCreateUser({ issuer: "https://idp", subject: s, name: s, email: "" }, NOW)));
    for (let round = 0; round < 12; round++) {
      const org = await groupsA.create({ parentUid: null, name: `owned ${round}`, description: "", verified: false, kind: 0 }, NOW, u1!.uid);
      const [second] = await a.bindings.create(org.uid, [{ identityUid: u2!.uid, roleUid: OWNER, fields: { identityUid: "i", roleUid: "r" } }], NOW);
      const [first] = await a.bindings.list({ uidp: {}, groupUid: org.uid, identityUid: u1!.uid }, { order: "uid", desc: false, offset: 0, limit: 1 });
      // Both replicas delete an owner binding; every fourth round one re-targets it instead.
      const outcomes = await Promise.allSettled([
        a.bindings.delete(first!.uid),
        round % 4 === 3 ? b.bindings.update(second!.uid, { roleUid: VIEWER }, { identityUid: "i", roleUid: "r" }) : b.bindings.delete(second!.uid),
      ]);
      expect(outcomes.filter((o) => o.status === "fulfilled")).toHaveLength(1);
      const refused = outcomes.find((o) => o.status === "rejected") as PromiseRejectedResult;
      const err = await rejection(Promise.reject(refused.reason));
      expect(err.code).toBe(GrpcCode.FailedPrecondition);
      expect(err.preconditionViolations[0]?.type).toBe("LAST_OWNER");
      expect(await a.bindings.count({ uidp: {}, groupUid: org.uid, roleUid: OWNER })).toBe(1);
    }
  });

  it("leaves no identity, role or binding without its group when one replica deletes the group while another creates under it", async () => {
    const user = await a.identities.findOrCreateUser({ issuer: "https://idp", subject: "orphans", name: "O", email: "" }, NOW);
    let deleted = 0;
    for (let round = 0; round < 8; round++) {
      const group = await groupsA.create({ parentUid: ORG_B, name: `gone ${round}`, description: "", verified: false, kind: 0 }, NOW);
      const kind = round % 3;
      const create =
        kind === 0
          ? b.identities.create(
              { parentUid: group.uid, name: "x", description: "", company: "", relationship: { kind: "service_principal", servicePrincipal: 1 } },
              NOW,
            )
          : kind === 1
            ? b.roles.create({ parentUid: group.uid, name: "x", description: "", capabilities: [] }, NOW)
            : b.bindings.create(group.uid, [{ identityUid: user.uid, roleUid: VIEWER, fields: { identityUid: "i", roleUid: "r" } }], NOW);
      const [del, made] = await Promise.allSettled([groupsA.delete(group.uid), create]);
      for (const o of [del, made]) if (o!.status === "rejected") apiErrorShape(o!.reason);
      if (del!.status === "fulfilled") {
        deleted++;
        // Bindings at a group go with it (the group's delete removes them); identities and roles block it.
        if (kind !== 2) expect((await rejection(Promise.reject((made as PromiseRejectedResult).reason))).code).toBe(GrpcCode.NotFound);
      } else {
        expect(made!.status).toBe("fulfilled");
      }
    }
    const orphans = await replicaA.pool.query(
      `SELECT 'identity' AS k, uid FROM identities i WHERE parent_uid IS NOT NULL AND NOT EXISTS (SELECT 1 FROM groups g WHERE g.uid = i.parent_uid)
       UNION ALL SELECT 'role', uid FROM roles r WHERE parent_uid IS NOT NULL AND NOT EXISTS (SELECT 1 FROM groups g WHERE g.uid = r.parent_uid)
       UNION ALL SELECT 'binding', uid FROM role_bindings rb WHERE NOT EXISTS (SELECT 1 FROM groups g WHERE g.uid = rb.group_uid)`,
    );
    expect(orphans.rows).toEqual([]);
    expect(deleted).toBeGreaterThanOrEqual(0);
  });

  it("never binds an identity or a role that another replica deletes at the same time", async () => {
    for (let round = 0; round < 6; round++) {
      const identity = await a.identities.create(
        { parentUid: ORG_B, name: `d${round}`, description: "", company: "", relationship: { kind: "service_principal", servicePrincipal: 1 } },
        NOW,
      );
      const role = await a.roles.create({ parentUid: ORG_B, name: `d${round}`, description: "", capabilities: [] }, NOW);
      const fields = { identityUid: "identity", roleUid: "role" };
      const outcomes = await Promise.allSettled([
        round % 2 ? a.identities.delete(identity.uid) : a.roles.delete(role.uid),
        b.bindings.create(ORG_B, [{ identityUid: identity.uid, roleUid: round % 2 ? VIEWER : role.uid, fields }], NOW),
      ]);
      for (const o of outcomes)
        if (o.status === "rejected")
          expect([GrpcCode.InvalidArgument, GrpcCode.FailedPrecondition]).toContain((await rejection(Promise.reject(o.reason))).code);
      const dangling = await replicaA.pool.query(
        "SELECT uid FROM role_bindings rb WHERE NOT EXISTS (SELECT 1 FROM identities i WHERE i.uid = rb.identity_uid) OR NOT EXISTS (SELECT 1 FROM roles r WHERE r.uid = rb.role_uid)",
      );
      expect(dangling.rows).toEqual([]);
    }
  });

  it("creates one user identity when two replicas sign the same person in for the first time", async () => {
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        (i % 2 ? a : b).identities.findOrCreateUser({ issuer: "https://idp", subject: "first-time", name: "F", email: "f@x" }, NOW + i),
      ),
    );
    expect(new Set(results.map((r) => r.uid)).size).toBe(1);
    const { rows } = await replicaA.pool.query("SELECT count(*)::int AS n FROM identities WHERE uid = $1", [results[0]!.uid]);
    expect(rows[0].n).toBe(1);
  });

  it("stops granting on every replica at the next call once one replica deletes the binding", async () => {
    const user = await a.identities.findOrCreateUser({ issuer: "https://idp", subject: "revoked", name: "V", email: "" }, NOW);
    const [binding] = await a.bindings.create(ORG_B, [{ identityUid: user.uid, roleUid: VIEWER, fields: { identityUid: "i", roleUid: "r" } }], NOW);
    expect((await b.bindings.grantsOf(user.uid)).map((g) => g.groupUid)).toEqual([ORG_B]);
    await a.bindings.delete(binding!.uid);
    expect(await b.bindings.grantsOf(user.uid)).toEqual([]);
  });
});
