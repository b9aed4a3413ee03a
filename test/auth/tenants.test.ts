/**
 * Authorization across two tenants over a three-level tree, on every door:
 *
 *   A ─ A1 ─ A2      alice: owner at A      carol: viewer at A1 (not at A)
 *   B ─ B1 ─ B2      bob:   owner at B      dave:  no bindings
 *
 * No read, write or count leaks across tenants or up the tree; an unknown uid and a forbidden
 * one get the same PERMISSION_DENIED; founding an organization makes the founder its owner;
 * a deleted binding stops granting on the very next call.
 */
import type { DescMessage, DescMethodUnary, MessageInitShape } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GroupsService } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { IdentitiesService } from "../../gen/chainguard/platform/iam/v2beta1/identities_pb.js";
import { RoleBindingsService } from "../../gen/chainguard/platform/iam/v2beta1/role_bindings_pb.js";
import { RolesService } from "../../gen/chainguard/platform/iam/v2beta1/roles_pb.js";
import { builtInRoleUid } from "../../src/store/builtin-roles.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { createUserIdentity, identityToken } from "../support/auth.js";
import { snapshotDb } from "../support/db.js";
import { rest } from "../support/rest.js";
import { type CallDoor, callDoors } from "../support/call-method.js";
import { closeGrpcClients } from "../support/transports.js";

class DoorError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string | undefined,
  ) {
    super(`code ${code} (${reason})`);
  }
}

type Listed = { uids: string[]; total: number };
const uidsOf = (items: unknown): string[] => ((items as { uid: string }[] | undefined) ?? []).map((x) => x.uid);

/**
 * The operations the scenarios need, on one door (test/support/call-method.ts). Failures
 * throw DoorError.
 */
function operations(door: CallDoor) {
  const call = async <M extends DescMessage>(token: string, method: DescMethodUnary<M>, request: MessageInitShape<M>) => {
    const out = await door.call(t.url, token, method, request);
    if (!out.ok) throw new DoorError(out.code, out.reason);
    return out.body;
  };
  const total = (b: { totalCount?: unknown }) => Number(b.totalCount ?? 0);
  return {
    name: door.name,
    async listGroups(token: string, descendantsOf?: string): Promise<Listed> {
      const b = await call(token, GroupsService.method.listGroups, { pageSize: 200, uidp: descendantsOf ? { descendantsOf } : undefined });
      return { uids: uidsOf(b.groups), total: total(b) };
    },
    async getGroup(token: string, uid: string): Promise<string> {
      return String((await call(token, GroupsService.method.getGroup, { uid })).name);
    },
    async createGroup(token: string, parent: string, name: string): Promise<string> {
      return String((await call(token, GroupsService.method.createGroup, { parent, group: { name } })).uid);
    },
    async updateGroup(token: string, uid: string, description: string): Promise<void> {
      await call(token, GroupsService.method.updateGroup, { group: { uid, description }, updateMask: { paths: ["description"] } });
    },
    async deleteGroup(token: string, uid: string): Promise<void> {
      await call(token, GroupsService.method.deleteGroup, { uid });
    },
    async listRoleBindings(token: string): Promise<Listed> {
      const b = await call(token, RoleBindingsService.method.listRoleBindings, { pageSize: 200 });
      return { uids: uidsOf(b.roleBindings), total: total(b) };
    },
    async listIdentities(token: string): Promise<Listed> {
      const b = await call(token, IdentitiesService.method.listIdentities, { pageSize: 200 });
      return { uids: uidsOf(b.identities), total: total(b) };
    },
    async listRoles(token: string): Promise<{ names: string[]; total: number }> {
      const b = await call(token, RolesService.method.listRoles, { pageSize: 200 });
      return { names: ((b.roles as { name: string }[] | undefined) ?? []).map((x) => x.name), total: total(b) };
    },
  };
}

const doors = callDoors.map(operations);

let t: TestApp;
const tree: Record<"A" | "A1" | "A2" | "B" | "B1" | "B2", string> = { A: "", A1: "", A2: "", B: "", B1: "", B2: "" };
const users: Record<"alice" | "bob" | "carol" | "dave", { uid: string; token: string }> = {} as never;
const ids: { inA1: string; inB1: string } = { inA1: "", inB1: "" };
const bindings: Record<string, string> = {};

/** As the operator (the support client's default token). */
async function op(method: string, path: string, body?: unknown) {
  const r = await rest(t.url, method, path, body);
  if (r.status !== 200) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

async function bind(group: string, identityUid: string, role: string): Promise<string> {
  return (await op("POST", `/iam/v2beta1/roleBindings/${group}`, { identityUid, roleUid: builtInRoleUid(role) })).uid;
}

beforeAll(async () => {
  t = await startTestApp();
  tree.A = (await op("POST", "/iam/v2beta1/groups", { name: "tenant-a" })).uid;
  tree.A1 = (await op("POST", `/iam/v2beta1/groups/${tree.A}`, { name: "aa1" })).uid;
  tree.A2 = (await op("POST", `/iam/v2beta1/groups/${tree.A1}`, { name: "aa2" })).uid;
  tree.B = (await op("POST", "/iam/v2beta1/groups", { name: "tenant-b" })).uid;
  tree.B1 = (await op("POST", `/iam/v2beta1/groups/${tree.B}`, { name: "bb1" })).uid;
  tree.B2 = (await op("POST", `/iam/v2beta1/groups/${tree.B1}`, { name: "bb2" })).uid;
  for (const name of ["alice", "bob", "carol", "dave"] as const) {
    const uid = await createUserIdentity(t.dataDir, name);
    users[name] = { uid, token: await identityToken(t.app, uid) };
  }
  bindings.alice = await bind(tree.A, users.alice.uid, "owner");
  bindings.bob = await bind(tree.B, users.bob.uid, "owner");
  bindings.carol = await bind(tree.A1, users.carol.uid, "viewer");
  const claimMatch = { issuer: "https://ci.example.test", subject: "job" };
  ids.inA1 = (await op("POST", `/iam/v2beta1/identities/${tree.A1}`, { name: "ci a", claimMatch })).uid;
  ids.inB1 = (await op("POST", `/iam/v2beta1/identities/${tree.B1}`, { name: "ci b", claimMatch })).uid;
  await op("POST", `/iam/v2beta1/roles/${tree.B}`, { name: "b-custom", capabilities: ["CAP_IAM_GROUPS_LIST"] });
});
afterAll(async () => {
  closeGrpcClients();
  await t.close();
});

async function expectDenied(p: Promise<unknown>, code = 7, reason = "PERMISSION_DENIED") {
  const err = await p.then(
    () => expect.fail("the call succeeded"),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(DoorError);
  expect((err as DoorError).code).toBe(code);
  expect((err as DoorError).reason).toBe(reason);
}

/** Runs a write that must be denied and checks the database did not change. */
async function expectDeniedWrite(p: () => Promise<unknown>) {
  const before = await snapshotDb(t);
  await expectDenied(p());
  expect(await snapshotDb(t)).toBe(before);
}

describe.each(doors)("two tenants over $name", (door) => {
  it("Lists show each caller its own subtree only, and totalCount counts only that", async () => {
    const sorted = (xs: string[]) => [...xs].sort();
    const alice = await door.listGroups(users.alice.token);
    expect(sorted(alice.uids)).toEqual(sorted([tree.A, tree.A1, tree.A2]));
    expect(alice.total).toBe(3);
    const bob = await door.listGroups(users.bob.token);
    expect(sorted(bob.uids)).toEqual(sorted([tree.B, tree.B1, tree.B2]));
    expect(bob.total).toBe(3);
    // carol is bound at A1: she sees A1 and below, not A above it.
    const carol = await door.listGroups(users.carol.token);
    expect(sorted(carol.uids)).toEqual(sorted([tree.A1, tree.A2]));
    expect(carol.total).toBe(2);
    expect(await door.listGroups(users.dave.token)).toEqual({ uids: [], total: 0 });
    // A filter naming the other tenant is refused, as a Get of it is (list-filter-scopes.test.ts).
    await expectDenied(door.listGroups(users.alice.token, tree.B));
  });

  it("Gets across tenants or up the tree are PERMISSION_DENIED, the same as for unknown uids", async () => {
    expect(await door.getGroup(users.alice.token, tree.A2)).toBe("aa2");
    await expectDenied(door.getGroup(users.alice.token, tree.B1));
    await expectDenied(door.getGroup(users.alice.token, `${tree.B}/0123456789abcdef`)); // does not exist
    await expectDenied(door.getGroup(users.alice.token, "0".repeat(40))); // does not exist
    await expectDenied(door.getGroup(users.carol.token, tree.A)); // up the tree
    expect(await door.getGroup(users.carol.token, tree.A2)).toBe("aa2");
    await expectDenied(door.getGroup(users.dave.token, tree.A));
    // Inside her own tree, an unknown uid is an honest NOT_FOUND.
    await expectDenied(door.getGroup(users.alice.token, `${tree.A}/0123456789abcdef`), 5, "NOT_FOUND");
  });

  it("writes across tenants, up the tree or beyond the role are PERMISSION_DENIED and change nothing", async () => {
    await expectDeniedWrite(() => door.createGroup(users.alice.token, tree.B1, "intruder"));
    await expectDeniedWrite(() => door.updateGroup(users.alice.token, tree.B, "pwned"));
    await expectDeniedWrite(() => door.deleteGroup(users.alice.token, tree.B2));
    await expectDeniedWrite(() => door.createGroup(users.carol.token, tree.A, "up the tree"));
    await expectDeniedWrite(() => door.createGroup(users.carol.token, tree.A1, "viewer cannot"));
    await expectDeniedWrite(() => door.deleteGroup(users.carol.token, tree.A2));
    await expectDeniedWrite(() => door.updateGroup(users.dave.token, tree.A, "nobody"));
  });

  it("an owner writes inside its own tree", async () => {
    const folder = await door.createGroup(users.alice.token, tree.A2, `f-${door.name.replace(/[^a-z]/g, "")}`);
    await door.updateGroup(users.alice.token, folder, "mine");
    await door.deleteGroup(users.alice.token, folder);
  });

  it("role bindings, identities and roles are filtered the same way", async () => {
    const sorted = (xs: string[]) => [...xs].sort();
    const rbAlice = await door.listRoleBindings(users.alice.token);
    expect(sorted(rbAlice.uids)).toEqual(sorted([bindings.alice as string, bindings.carol as string]));
    expect(rbAlice.total).toBe(2);
    const rbCarol = await door.listRoleBindings(users.carol.token);
    expect(rbCarol).toEqual({ uids: [bindings.carol], total: 1 });

    expect(await door.listIdentities(users.alice.token)).toEqual({ uids: [ids.inA1], total: 1 });
    expect(await door.listIdentities(users.bob.token)).toEqual({ uids: [ids.inB1], total: 1 });
    expect(await door.listIdentities(users.dave.token)).toEqual({ uids: [], total: 0 });

    // Built-in roles are visible to everyone; a custom role only inside its tenant.
    const rolesAlice = await door.listRoles(users.alice.token);
    expect(rolesAlice.names).toContain("viewer");
    expect(rolesAlice.names).not.toContain("b-custom");
    const rolesBob = await door.listRoles(users.bob.token);
    expect(rolesBob.names).toContain("b-custom");
    expect(rolesBob.total).toBe(rolesAlice.total + 1);
  });

  it("founding an organization makes the founder its owner, in the same transaction", async () => {
    const founder = await createUserIdentity(t.dataDir, `founder-${door.name}`);
    const founderToken = await identityToken(t.app, founder);
    const org = await door.createGroup(founderToken, "", `org-${door.name.replace(/[^a-z]/g, "")}`);
    expect(await door.getGroup(founderToken, org)).toMatch(/^org-/);
    const listed = await op("GET", `/iam/v2beta1/roleBindings?uidp.children_of=${org}`);
    expect(listed.roleBindings).toHaveLength(1);
    expect(listed.roleBindings[0]).toMatchObject({ identity: { uid: founder }, role: { name: "owner" }, group: { uid: org } });
    // ...and nobody else's: alice still cannot see it.
    await expectDenied(door.getGroup(users.alice.token, org));
    // An organization is founded by a person: an assumable identity may not.
    const ciToken = await identityToken(t.app, ids.inA1);
    await expectDeniedWrite(() => door.createGroup(ciToken, "", "from ci"));
  });
});

describe("revocation", () => {
  it.each(doors.map((d) => [d.name, d] as const))("a deleted binding stops granting on the next call (%s)", async (_name, door) => {
    const erin = await createUserIdentity(t.dataDir, `erin-${door.name}`);
    const token = await identityToken(t.app, erin);
    const binding = await bind(tree.B1, erin, "viewer");
    expect(await door.getGroup(token, tree.B1)).toBe("bb1");
    expect((await door.listGroups(token)).total).toBe(2);
    await op("DELETE", `/iam/v2beta1/roleBindings/${binding}`);
    await expectDenied(door.getGroup(token, tree.B1));
    expect(await door.listGroups(token)).toEqual({ uids: [], total: 0 });
  });
});

describe("anti-escalation", () => {
  it("role_bindings.create alone cannot grant a role with capabilities the caller lacks", async () => {
    const pete = await createUserIdentity(t.dataDir, "pete");
    const token = await identityToken(t.app, pete);
    await bind(tree.B, pete, "registry.pull_token_creator");
    const robot = (
      await op("POST", `/iam/v2beta1/identities/${tree.B1}`, { name: "pull robot", claimMatch: { issuer: "https://ci.example.test", subject: "robot" } })
    ).uid;
    const as = (body: unknown, path = `/iam/v2beta1/roleBindings/${tree.B1}`) => rest(t.url, "POST", path, body, { authorization: `Bearer ${token}` });
    // Within its own capabilities: fine.
    expect((await as({ identityUid: robot, roleUid: builtInRoleUid("registry.pull") })).status).toBe(200);
    // Owner (or editor) would escalate, for the robot or for itself; nothing is written.
    for (const body of [
      { identityUid: robot, roleUid: builtInRoleUid("owner") },
      { identityUid: pete, roleUid: builtInRoleUid("editor") },
    ]) {
      const before = await snapshotDb(t);
      const res = await as(body);
      expect(res.status).toBe(403);
      expect(res.body.details[0].reason).toBe("PRIVILEGE_ESCALATION");
      expect(await snapshotDb(t)).toBe(before);
    }
    const batch = await as(
      { parent: tree.B1, requests: [{ roleBinding: { identityUid: robot, roleUid: builtInRoleUid("owner") } }] },
      "/iam/v2beta1/roleBindings:batchCreate",
    );
    expect(batch.status).toBe(403);
    expect(batch.body.details[0].reason).toBe("PRIVILEGE_ESCALATION");
  });
});

describe("page tokens across callers", () => {
  it("a page token replayed by another caller is refused, so it carries no rows or count over", async () => {
    const first = await rest(t.url, "GET", "/iam/v2beta1/groups?page_size=1", undefined, { authorization: `Bearer ${users.alice.token}` });
    expect(first.body.totalCount).toBe("3");
    const next = encodeURIComponent(first.body.nextPageToken);
    const own = await rest(t.url, "GET", `/iam/v2beta1/groups?page_size=1&page_token=${next}`, undefined, { authorization: `Bearer ${users.alice.token}` });
    expect(own.status).toBe(200);
    expect(own.body.totalCount).toBe("3");
    const replayed = await rest(t.url, "GET", `/iam/v2beta1/groups?page_size=1&page_token=${next}`, undefined, { authorization: `Bearer ${users.bob.token}` });
    expect(replayed.status).toBe(400);
    expect(replayed.body.code).toBe(3);
  });
});

describe("registry across tenants", () => {
  it("repos are listed, counted and read only inside the caller's tree", async () => {
    const repoA = (await op("POST", `/registry/v2beta1/repos/${tree.A1}`, { name: "nginx" })).uid;
    const repoB = (await op("POST", `/registry/v2beta1/repos/${tree.B1}`, { name: "redis" })).uid;
    const as = (who: keyof typeof users, path: string) => rest(t.url, "GET", path, undefined, { authorization: `Bearer ${users[who].token}` });
    const alice = await as("alice", "/registry/v2beta1/repos");
    expect(alice.body.repos.map((r: { uid: string }) => r.uid)).toEqual([repoA]);
    expect(alice.body.totalCount).toBe("1");
    expect((await as("alice", `/registry/v2beta1/repos/${repoA}`)).status).toBe(200);
    const denied = await as("alice", `/registry/v2beta1/repos/${repoB}`);
    expect(denied.status).toBe(403);
    const unknown = await as("alice", `/registry/v2beta1/repos/${tree.B1}/0123456789abcdef`);
    expect(unknown.status).toBe(403);
    expect(unknown.body.details[0].reason).toBe(denied.body.details[0].reason);
    expect((await as("dave", "/registry/v1/repos")).body.items ?? []).toEqual([]);
  });
});
