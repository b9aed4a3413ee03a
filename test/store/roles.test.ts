/**
 * Built-in roles at the store level: the capability table mirrors the generated enum and
 * holds nothing internal, `ensureBuiltInRoles` inserts, refreshes and is idempotent, a role
 * still used by a group invite cannot be deleted, and List/count per filter shape. On every
 * engine through StoreEngine; the built-in rows themselves (emptied, tampered) on SQLite alone.
 */
import { createHash } from "node:crypto";
import { getOption, hasOption } from "@bufbuild/protobuf";
import { eq } from "drizzle-orm";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Capability, CapabilitySchema, internal_only } from "../../gen/chainguard/capabilities/capabilities_pb.js";
import { ApiError, GrpcCode } from "../../src/errors/api-error.js";
import { grantableCapability } from "../../src/services/iam/roles.js";
import { BUILT_IN_ROLES, builtInRoleUid, CAPABILITY_NUMBERS } from "../../src/store/builtin-roles.js";
import type { RoleRecord } from "../../src/store/roles.js";
import type { Db } from "../../src/store/sqlite/db.js";
import { sqliteConnectionOf } from "../../src/store/sqlite/engine.js";
import { roles } from "../../src/store/sqlite/schema.js";
import { ENGINES, type OpenedEngine } from "../support/engines.js";

const NOW = 1_800_000_000_000;

describe("the built-in role definitions", () => {
  it("name capabilities exactly as the generated enum does, none internal", () => {
    for (const [name, number] of Object.entries(CAPABILITY_NUMBERS)) {
      expect(Capability[number as Capability], name).toBe(name);
      const value = CapabilitySchema.values.find((v) => v.number === number);
      expect(value && hasOption(value, internal_only) && getOption(value, internal_only), name).toBeFalsy();
    }
  });

  it("hold only capabilities a custom role could hold, and the published names", () => {
    for (const role of BUILT_IN_ROLES) {
      expect(role.capabilities.length, role.name).toBeGreaterThan(0);
      expect(
        role.capabilities.filter((c) => !grantableCapability(c)),
        role.name,
      ).toEqual([]);
      expect(new Set(role.capabilities).size).toBe(role.capabilities.length);
      expect(role.description).toMatch(/^[A-Z][A-Za-z ]+ Role \(built-in\)$/);
    }
    const names = BUILT_IN_ROLES.map((r) => r.name);
    for (const name of ["owner", "editor", "viewer", "console_viewer", "registry.pull", "registry.push", "registry.pull_token_creator", "apk.pull"]) {
      expect(names).toContain(name);
    }
    for (const name of ["advisories.viewer", "advisories.creator", "advisories.approver", "advisories.admin"]) expect(names).toContain(name);
    const caps = (name: string) => new Set(BUILT_IN_ROLES.find((r) => r.name === name)?.capabilities);
    expect(BUILT_IN_ROLES.find((r) => r.name === "viewer")?.description).toBe("Viewer Role (built-in)");
    // Bundle relations from the SDK: viewer ⊂ editor ⊂ owner; console_viewer has no blob reads.
    for (const c of caps("viewer")) expect(caps("editor").has(c)).toBe(true);
    for (const c of caps("editor")) expect(caps("owner").has(c)).toBe(true);
    expect(caps("console_viewer").has(Capability.CAP_REPO_BLOBS_GET)).toBe(false);
    expect(caps("viewer").has(Capability.CAP_REPO_BLOBS_GET)).toBe(true);
    expect(caps("editor").has(Capability.CAP_TAG_CREATE)).toBe(false);
    expect(caps("registry.push").has(Capability.CAP_TAG_CREATE)).toBe(true);
    expect(caps("owner").has(Capability.CAP_ADVISORIES_CREATE)).toBe(false);
    expect(caps("registry.pull_token_creator").has(Capability.CAP_IAM_IDENTITY_LIST)).toBe(false);
    expect([...caps("advisories.admin")].sort()).toEqual(
      [
        Capability.CAP_ADVISORIES_LIST,
        Capability.CAP_ADVISORIES_CREATE,
        Capability.CAP_ADVISORIES_UPDATE,
        Capability.CAP_ADVISORIES_APPROVE,
        Capability.CAP_ADVISORIES_DELETE,
      ].sort(),
    );
  });

  it("derive root uids from sha256 of the name", () => {
    const expected = createHash("sha256").update("trellis/builtin-role/viewer").digest("hex").slice(0, 40);
    expect(builtInRoleUid("viewer")).toBe(expected);
    expect(expected).toMatch(/^[0-9a-f]{40}$/);
  });
});

describe.each(ENGINES)("roles on $name", (engineUnderTest) => {
  let opened: OpenedEngine;
  beforeEach(async () => {
    // The engine opens with ensureBuiltInRoles(NOW) done.
    opened = await engineUnderTest.open(NOW);
  });
  afterEach(async () => {
    await opened.close();
  });

  describe("ensureBuiltInRoles", () => {
    it("leaves every built-in role, as defined, once; running it again changes nothing", async () => {
      const { roles: repo } = opened.engine.repositories;
      const builtIns = async () => (await repo.list({ uidp: {}, within: [] }, { order: "uid", desc: false, offset: 0, limit: 1000 })).filter((r) => r.builtIn);
      const first = await builtIns();
      expect(first.map((r) => r.uid)).toEqual(BUILT_IN_ROLES.map((r) => builtInRoleUid(r.name)).sort());
      for (const role of first) {
        const defined = BUILT_IN_ROLES.find((r) => builtInRoleUid(r.name) === role.uid);
        expect(role, role.name).toEqual({
          uid: role.uid,
          parentUid: null,
          name: defined?.name,
          description: defined?.description,
          capabilities: defined?.capabilities,
          builtIn: true,
          createTime: NOW,
          updateTime: NOW,
        });
        expect(await repo.get(role.uid)).toEqual(role);
      }
      await opened.engine.ensureBuiltInRoles(NOW + 1000);
      expect(await builtIns()).toEqual(first);
    });
  });

  describe("deleting a role", () => {
    it("is refused while a group invite grants it (RESOURCE_IN_USE), and built-ins never", async () => {
      const { roles: repo, groups, groupInvites } = opened.engine.repositories;
      const org = (await groups.create({ parentUid: null, name: "org", description: "", verified: false, kind: 0 }, NOW)).uid;
      const role = await repo.create({ parentUid: org, name: "member", description: "", capabilities: [103] }, NOW);
      await groupInvites.create({ parentUid: org, roleUid: role.uid, email: "", singleUse: false, ttlMs: 1, creator: "{}" }, NOW);
      const err = await repo.delete(role.uid).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ApiError);
      expect((err as ApiError).code).toBe(GrpcCode.FailedPrecondition);
      expect((err as ApiError).preconditionViolations[0]).toMatchObject({ type: "RESOURCE_IN_USE", description: "cannot delete role with group invites" });
      expect(await repo.get(role.uid)).toBeDefined();

      const builtIn = await repo.delete(builtInRoleUid("viewer")).catch((e: unknown) => e);
      expect((builtIn as ApiError).preconditionViolations[0]?.type).toBe("BUILT_IN_ROLE");
    });
  });

  describe("listing roles (statements prepared once per filter shape)", () => {
    it("answers each shape for the values asked, again with other values, built-ins visible within any scope", async () => {
      const { roles: repo, groups } = opened.engine.repositories;
      const orgs: string[] = [];
      for (const name of ["org-a", "org-b"]) orgs.push((await groups.create({ parentUid: null, name, description: "", verified: false, kind: 0 }, NOW)).uid);
      const [a, b] = orgs as [string, string];
      const custom: RoleRecord[] = [];
      for (const org of orgs)
        for (const name of ["reader", "writer"]) custom.push(await repo.create({ parentUid: org, name, description: "", capabilities: [] }, NOW));
      const builtIns = BUILT_IN_ROLES.map((r) => builtInRoleUid(r.name)).sort();
      const page = { order: "uid" as const, desc: false, offset: 0, limit: 1000 };
      const uids = async (filter: Parameters<typeof repo.list>[0]) => (await repo.list(filter, page)).map((r) => r.uid).sort();
      const expected = (pred: (r: RoleRecord) => boolean) =>
        custom
          .filter(pred)
          .map((r) => r.uid)
          .sort();

      for (const org of [a, b, a]) {
        expect(await uids({ uidp: { childrenOf: org } })).toEqual(expected((r) => r.parentUid === org));
        expect(await repo.count({ uidp: { childrenOf: org } })).toBe(2);
        expect(await uids({ uidp: { childrenOf: org }, name: "writer" })).toEqual(expected((r) => r.parentUid === org && r.name === "writer"));
        expect(await uids({ uidp: {}, within: [org] })).toEqual([...expected((r) => r.parentUid === org), ...builtIns].sort());
        expect(await repo.count({ uidp: {}, within: [org] })).toBe(2 + builtIns.length);
      }
      for (const name of ["reader", "writer", "nobody"]) {
        expect(await uids({ uidp: {}, name })).toEqual(expected((r) => r.name === name));
      }
      expect(await uids({ uidp: {}, within: [] })).toEqual(builtIns);
      const after = { value: custom[0]?.uid as string, uid: custom[0]?.uid as string };
      expect((await repo.list({ uidp: { childrenOf: a } }, { ...page, after })).map((r) => r.uid)).toEqual(
        expected((r) => r.parentUid === a && r.uid > after.uid),
      );
    });
  });
});

// The repositories never change or remove a built-in role (BUILT_IN_ROLE), so an empty table
// and a tampered or missing built-in row can only be made with the engine's own SQL; the raw
// rows are SQLite's layout (capabilities as JSON text).
describe.each(ENGINES.filter((e) => e.name === "sqlite"))("ensureBuiltInRoles on the stored rows, SQLite only", (engineUnderTest) => {
  let opened: OpenedEngine;
  let db: Db;
  const builtInRows = () =>
    db
      .select()
      .from(roles)
      .where(eq(roles.builtIn, true))
      .all()
      .sort((a, b) => a.uid.localeCompare(b.uid));

  beforeEach(async () => {
    opened = await engineUnderTest.open(NOW);
    db = sqliteConnectionOf(opened.engine);
    // Back to a database that has never had built-in roles.
    db.delete(roles).where(eq(roles.builtIn, true)).run();
  });
  afterEach(async () => {
    await opened.close();
  });

  it("inserts every built-in role once and is idempotent", async () => {
    expect(builtInRows()).toEqual([]);
    await opened.engine.ensureBuiltInRoles(NOW);
    const first = builtInRows();
    expect(first.map((r) => r.uid).sort()).toEqual(BUILT_IN_ROLES.map((r) => builtInRoleUid(r.name)).sort());
    expect(first.every((r) => r.parentUid === null && r.createTime === NOW && r.updateTime === NOW)).toBe(true);
    await opened.engine.ensureBuiltInRoles(NOW + 1000);
    expect(builtInRows()).toEqual(first);
  });

  it("restores a changed or missing built-in role", async () => {
    await opened.engine.ensureBuiltInRoles(NOW);
    const viewer = builtInRoleUid("viewer");
    const owner = builtInRoleUid("owner");
    db.update(roles).set({ description: "tampered", capabilities: "[103]" }).where(eq(roles.uid, viewer)).run();
    db.delete(roles).where(eq(roles.uid, owner)).run();
    await opened.engine.ensureBuiltInRoles(NOW + 5);
    const rows = builtInRows();
    const v = rows.find((r) => r.uid === viewer);
    expect(v).toMatchObject({ description: "Viewer Role (built-in)", createTime: NOW, updateTime: NOW + 5 });
    expect(JSON.parse(v?.capabilities ?? "[]")).toEqual(BUILT_IN_ROLES.find((r) => r.name === "viewer")?.capabilities);
    expect(rows.find((r) => r.uid === owner)).toMatchObject({ name: "owner", createTime: NOW + 5 });
    expect(rows.filter((r) => r.uid !== viewer && r.uid !== owner).every((r) => r.updateTime === NOW)).toBe(true);
  });
});
