/**
 * RoleBindings end to end over every RPC protocol: hydrated responses that follow renames,
 * which identities and roles a group may bind (its own and its ancestors', user identities,
 * built-in roles; never another organization's), duplicates, update, idempotent delete, list
 * filters and the atomic batch create. Every hostile case asserts the error details and that
 * the database is unchanged.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { type Client, ConnectError, createClient } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Capability } from "../../gen/chainguard/capabilities/capabilities_pb.js";
import { GroupsService } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { IdentitiesService } from "../../gen/chainguard/platform/iam/v2beta1/identities_pb.js";
import { type CreateRoleBindingRequestSchema, RoleBindingsService } from "../../gen/chainguard/platform/iam/v2beta1/role_bindings_pb.js";
import { RolesService } from "../../gen/chainguard/platform/iam/v2beta1/roles_pb.js";
import { BadRequestSchema, ErrorInfoSchema, ResourceInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { builtInRoleUid } from "../../src/store/builtin-roles.js";
import { newUidp } from "../../src/store/uidp.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { expectRejectedAndUnchanged, queryDb } from "../support/db.js";
import { closeGrpcClients, Code, rpcTransports } from "../support/transports.js";

type SubRequest = MessageInitShape<typeof CreateRoleBindingRequestSchema>;

const ISSUER = "https://token.actions.githubusercontent.com";
const VIEWER = builtInRoleUid("viewer");
const EDITOR = builtInRoleUid("editor");

/**
 * Runs a call that must fail without writing to the test app's database; checks the code,
 * ErrorInfo and exactly the violated fields (when given).
 */
async function rejectsIn(t: TestApp, fn: () => Promise<unknown>, code: Code, ...fields: string[]): Promise<ConnectError> {
  const err = (await expectRejectedAndUnchanged(t, fn)) as ConnectError;
  expect(err).toBeInstanceOf(ConnectError);
  expect(err.code, err.rawMessage).toBe(code);
  const reason = Code[code].replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase();
  expect(err.findDetails(ErrorInfoSchema).map((i) => [i.reason, i.domain])).toEqual([[reason, "iam.chainguard.dev"]]);
  if (fields.length > 0) {
    expect(
      err
        .findDetails(BadRequestSchema)[0]
        ?.fieldViolations.map((v) => v.field)
        .sort(),
      err.rawMessage,
    ).toEqual(fields.sort());
  }
  return err;
}

describe.each(rpcTransports)("RoleBindingsService over $name", (transport) => {
  let t: TestApp;
  let client: Client<typeof RoleBindingsService>;
  let groupsClient: Client<typeof GroupsService>;
  let identitiesClient: Client<typeof IdentitiesService>;
  let rolesClient: Client<typeof RolesService>;
  /** orgA ⊃ folderA ⊃ subA; orgB is another organization. */
  let orgA: string;
  let folderA: string;
  let subA: string;
  let orgB: string;
  let idOrg: string;
  let idSub: string;
  let idForeign: string;
  let user: string;
  let roleOrg: string;
  let roleFolder: string;
  let roleForeign: string;

  const rejects = (fn: () => Promise<unknown>, code: Code, ...fields: string[]) => rejectsIn(t, fn, code, ...fields);
  const bind = (parent: string, identityUid: string, roleUid: string) => client.createRoleBinding({ parent, roleBinding: { identityUid, roleUid } });
  const newIdentity = async (parent: string, name: string) =>
    (
      await identitiesClient.createIdentity({
        parent,
        identity: {
          name,
          description: `${name} description`,
          relationship: { case: "claimMatch", value: { iss: { case: "issuer", value: ISSUER }, sub: { case: "subject", value: `repo:${name}` } } },
        },
      })
    ).uid;
  const newRole = async (parent: string, name: string) =>
    (await rolesClient.createRole({ parent, role: { name, description: `${name} description`, capabilities: [Capability.CAP_REPO_LIST] } })).uid;

  beforeAll(async () => {
    t = await startTestApp();
    const tr = transport.create(t.url);
    client = createClient(RoleBindingsService, tr);
    groupsClient = createClient(GroupsService, tr);
    identitiesClient = createClient(IdentitiesService, tr);
    rolesClient = createClient(RolesService, tr);
    orgA = (await groupsClient.createGroup({ group: { name: "org a", description: "first" } })).uid;
    folderA = (await groupsClient.createGroup({ parent: orgA, group: { name: "folder a" } })).uid;
    subA = (await groupsClient.createGroup({ parent: folderA, group: { name: "sub a" } })).uid;
    orgB = (await groupsClient.createGroup({ group: { name: "org b" } })).uid;
    idOrg = await newIdentity(orgA, "org robot");
    idSub = await newIdentity(subA, "sub robot");
    idForeign = await newIdentity(orgB, "foreign robot");
    roleOrg = await newRole(orgA, "org role");
    roleFolder = await newRole(folderA, "folder role");
    roleForeign = await newRole(orgB, "foreign role");
    // A user identity is a root, made at a user's first sign-in; write one directly.
    user = newUidp(null);
    await queryDb(t, "INSERT INTO identities (uid, name, email, create_time, update_time) VALUES (?, 'alice', 'alice@example.com', 0, 0)", [user]);
  });
  afterAll(async () => {
    closeGrpcClients();
    await t.close();
  });

  it("creates a binding and hydrates the identity, group and role", async () => {
    const b = await bind(folderA, idOrg, VIEWER);
    expect(b.uid).toMatch(new RegExp(`^${folderA}/[0-9a-f]{16}$`));
    expect(b).toMatchObject({
      identityUid: idOrg,
      roleUid: VIEWER,
      identity: { uid: idOrg, name: "org robot", description: "org robot description", subject: "repo:org robot", issuer: ISSUER, email: "" },
      group: { uid: folderA, name: "folder a", description: "" },
      role: { uid: VIEWER, name: "viewer", description: "Viewer Role (built-in)" },
    });
    expect(b.createTime).toBeDefined();
    expect(await client.getRoleBinding({ uid: b.uid })).toEqual(b);
    expect((await client.listRoleBindings({ uidp: { ids: [b.uid] } })).roleBindings).toEqual([b]);

    const u = await bind(orgB, user, VIEWER);
    expect(u.identity).toMatchObject({ uid: user, name: "alice", email: "alice@example.com", subject: "", issuer: "" });
  });

  it("binds identities and custom roles of the group or its ancestors", async () => {
    expect((await bind(subA, idOrg, roleOrg)).role?.name).toBe("org role");
    expect((await bind(subA, idSub, roleFolder)).group?.uid).toBe(subA);
    expect((await bind(folderA, user, roleFolder)).identityUid).toBe(user);
  });

  it("rejects missing, malformed, dangling and out-of-scope references, writing nothing", async () => {
    await rejects(() => client.createRoleBinding({ parent: orgA }), Code.InvalidArgument, "identity_uid", "role_uid");
    await rejects(() => bind(orgA, "", VIEWER), Code.InvalidArgument, "identity_uid");
    await rejects(() => bind(orgA, idOrg, "viewer"), Code.InvalidArgument, "role_uid");
    await rejects(() => bind("not/a/uid", idOrg, VIEWER), Code.InvalidArgument, "parent");
    await rejects(() => bind("", idOrg, VIEWER), Code.InvalidArgument, "parent");
    const dangling = await rejects(() => bind(orgA, `${orgA}/0123456789abcdef`, VIEWER), Code.InvalidArgument, "identity_uid");
    expect(dangling.findDetails(BadRequestSchema)[0]?.fieldViolations[0]?.description).toContain("does not exist");
    await rejects(() => bind(orgA, idOrg, "0".repeat(40)), Code.InvalidArgument, "role_uid");
    await rejects(() => bind(orgA, `${orgA}/0123456789abcdef`, `${orgA}/0123456789abcdef`), Code.InvalidArgument, "identity_uid", "role_uid");
    // Another organization's identity or role, and a descendant group's.
    await rejects(() => bind(orgA, idForeign, VIEWER), Code.InvalidArgument, "identity_uid");
    await rejects(() => bind(folderA, idSub, VIEWER), Code.InvalidArgument, "identity_uid");
    await rejects(() => bind(orgA, idOrg, roleForeign), Code.InvalidArgument, "role_uid");
    await rejects(() => bind(orgA, idOrg, roleFolder), Code.InvalidArgument, "role_uid");
    await rejects(() => bind(orgB, idOrg, roleOrg), Code.InvalidArgument, "identity_uid", "role_uid");
    const missingGroup = await rejects(() => bind("9".repeat(40), user, VIEWER), Code.NotFound);
    expect(missingGroup.findDetails(ResourceInfoSchema)[0]).toMatchObject({ resourceType: "group" });
  });

  it("answers ALREADY_EXISTS with ResourceInfo for a duplicate binding", async () => {
    const first = await bind(orgA, idOrg, EDITOR);
    const err = await rejects(() => bind(orgA, idOrg, EDITOR), Code.AlreadyExists);
    expect(err.findDetails(ResourceInfoSchema)[0]).toMatchObject({ resourceType: "role binding", resourceName: first.uid });
    // The same identity and role at another group is a different binding.
    expect((await bind(folderA, idOrg, EDITOR)).uid).not.toBe(first.uid);
  });

  it("hydrates from current data after the identity, group and role are renamed", async () => {
    const group = (await groupsClient.createGroup({ parent: orgA, group: { name: "before group" } })).uid;
    const identity = await newIdentity(group, "before identity");
    const role = await newRole(group, "before role");
    const b = await bind(group, identity, role);
    await identitiesClient.updateIdentity({ identity: { uid: identity, name: "after identity", description: "changed" } });
    await groupsClient.updateGroup({ group: { uid: group, name: "after group", description: "changed too" } });
    await rolesClient.updateRole({ role: { uid: role, name: "after role" } });
    const got = await client.getRoleBinding({ uid: b.uid });
    expect(got.identity).toMatchObject({ name: "after identity", description: "changed" });
    expect(got.group).toMatchObject({ name: "after group", description: "changed too" });
    expect(got.role).toMatchObject({ name: "after role", description: "before role description" });
    expect((await client.listRoleBindings({ group })).roleBindings).toEqual([got]);
    expect(got.createTime).toEqual(b.createTime);
  });

  it("updates the identity or role of a binding with the create checks", async () => {
    const group = (await groupsClient.createGroup({ parent: orgA, group: { name: "update group" } })).uid;
    const b = await bind(group, idOrg, VIEWER);
    const other = await bind(group, idOrg, roleOrg);
    const moved = await client.updateRoleBinding({ roleBinding: { uid: b.uid, roleUid: EDITOR } });
    expect(moved).toMatchObject({ uid: b.uid, identityUid: idOrg, roleUid: EDITOR, role: { name: "editor" } });
    const masked = await client.updateRoleBinding({
      roleBinding: { uid: b.uid, identityUid: user, roleUid: roleForeign },
      updateMask: { paths: ["identity_uid"] },
    });
    expect(masked).toMatchObject({ identityUid: user, roleUid: EDITOR, identity: { name: "alice" } });

    await rejects(() => client.updateRoleBinding({ roleBinding: { uid: b.uid, roleUid: roleForeign } }), Code.InvalidArgument, "role_uid");
    await rejects(() => client.updateRoleBinding({ roleBinding: { uid: b.uid, identityUid: idForeign } }), Code.InvalidArgument, "identity_uid");
    await rejects(() => client.updateRoleBinding({ roleBinding: { uid: b.uid }, updateMask: { paths: ["role_uid"] } }), Code.InvalidArgument, "role_uid");
    await rejects(
      () => client.updateRoleBinding({ roleBinding: { uid: b.uid, roleUid: EDITOR }, updateMask: { paths: ["group"] } }),
      Code.InvalidArgument,
      "update_mask",
    );
    const dup = await rejects(() => client.updateRoleBinding({ roleBinding: { uid: other.uid, identityUid: user, roleUid: EDITOR } }), Code.AlreadyExists);
    expect(dup.findDetails(ResourceInfoSchema)[0]?.resourceName).toBe(b.uid);
    await rejects(() => client.updateRoleBinding({ roleBinding: { uid: `${group}/0000000000000000`, roleUid: EDITOR } }), Code.NotFound);
    await rejects(() => client.updateRoleBinding({}), Code.InvalidArgument, "role_binding");
    // Restating the binding's own values is not a duplicate of itself.
    expect((await client.updateRoleBinding({ roleBinding: { uid: b.uid, roleUid: EDITOR } })).uid).toBe(b.uid);
  });

  it("deletes idempotently and answers NOT_FOUND on Get of a missing binding", async () => {
    const b = await bind(subA, user, VIEWER);
    await client.deleteRoleBinding({ uid: b.uid });
    await client.deleteRoleBinding({ uid: b.uid });
    const err = (await client.getRoleBinding({ uid: b.uid }).catch((e) => e)) as ConnectError;
    expect(err.code).toBe(Code.NotFound);
    expect(err.findDetails(ResourceInfoSchema)[0]?.resourceName).toBe(b.uid);
    await rejects(() => client.deleteRoleBinding({ uid: "../x" }), Code.InvalidArgument, "uid");
    await rejects(() => client.getRoleBinding({ uid: "" }), Code.InvalidArgument, "uid");
  });
});

describe.each(rpcTransports)("ListRoleBindings and BatchCreateRoleBindings over $name", (transport) => {
  let t: TestApp;
  let client: Client<typeof RoleBindingsService>;
  let org: string;
  let team: string;
  let foreign: string;
  let ids: string[];
  let foreignIdentity: string;
  let seeded: string[];

  const rejects = (fn: () => Promise<unknown>, code: Code, ...fields: string[]) => rejectsIn(t, fn, code, ...fields);
  const sub = (identityUid: string, roleUid = "", parent = ""): SubRequest => ({ parent, roleBinding: { identityUid, roleUid } });

  beforeAll(async () => {
    t = await startTestApp();
    const tr = transport.create(t.url);
    client = createClient(RoleBindingsService, tr);
    const groupsClient = createClient(GroupsService, tr);
    const identitiesClient = createClient(IdentitiesService, tr);
    org = (await groupsClient.createGroup({ group: { name: "batch org" } })).uid;
    team = (await groupsClient.createGroup({ parent: org, group: { name: "batch team" } })).uid;
    foreign = (await groupsClient.createGroup({ group: { name: "foreign org" } })).uid;
    ids = [];
    for (let i = 0; i < 4; i++) {
      ids.push(
        (
          await identitiesClient.createIdentity({
            parent: org,
            identity: { name: `robot ${i}`, relationship: { case: "servicePrincipal", value: 2 } },
          })
        ).uid,
      );
    }
    foreignIdentity = (
      await identitiesClient.createIdentity({ parent: foreign, identity: { name: "stranger", relationship: { case: "servicePrincipal", value: 2 } } })
    ).uid;
    seeded = [];
    for (const [parent, identityUid, roleUid] of [
      [org, ids[0], VIEWER],
      [org, ids[1], EDITOR],
      [team, ids[0], EDITOR],
    ] as const) {
      seeded.push((await client.createRoleBinding({ parent, roleBinding: { identityUid, roleUid } })).uid);
    }
  });
  afterAll(async () => {
    closeGrpcClients();
    await t.close();
  });

  it("filters by identity, group, role and uidp, and orders by creation", async () => {
    const uids = async (req: Parameters<typeof client.listRoleBindings>[0]) => (await client.listRoleBindings(req)).roleBindings.map((b) => b.uid);
    expect(await uids({ identity: ids[0] })).toEqual([seeded[0], seeded[2]].sort());
    expect(await uids({ group: org })).toEqual([seeded[0], seeded[1]].sort());
    expect(await uids({ role: EDITOR })).toEqual([seeded[1], seeded[2]].sort());
    expect(await uids({ role: EDITOR, identity: ids[0] })).toEqual([seeded[2]]);
    expect(await uids({ uidp: { childrenOf: team } })).toEqual([seeded[2]]);
    expect(await uids({ uidp: { descendantsOf: org }, orderBy: "created_at" })).toContain(seeded[2]);
    expect(await uids({ group: foreign })).toEqual([]);
    const page = await client.listRoleBindings({ group: org, orderBy: "create_time desc", pageSize: 1 });
    expect(page.roleBindings.map((b) => b.uid)).toEqual([seeded[1]]);
    expect(page.totalCount).toBe(2n);
    const next = await client.listRoleBindings({ group: org, orderBy: "create_time desc", pageSize: 1, pageToken: page.nextPageToken });
    expect(next.roleBindings.map((b) => b.uid)).toEqual([seeded[0]]);
    await rejects(() => client.listRoleBindings({ identity: "robot" }), Code.InvalidArgument, "identity");
    await rejects(() => client.listRoleBindings({ orderBy: "name" }), Code.InvalidArgument, "order_by");
  });

  it("batch-creates bindings in request order with the batch role as default", async () => {
    const res = await client.batchCreateRoleBindings({
      parent: team,
      roleUid: VIEWER,
      requests: [sub(ids[3] as string), sub(ids[2] as string, VIEWER, team), sub(ids[1] as string)],
    });
    expect(res.roleBindings.map((b) => [b.identityUid, b.roleUid, b.group?.uid])).toEqual([
      [ids[3], VIEWER, team],
      [ids[2], VIEWER, team],
      [ids[1], VIEWER, team],
    ]);
    expect(res.roleBindings.every((b) => b.uid.startsWith(`${team}/`) && b.role?.name === "viewer")).toBe(true);
    const mixed = await client.batchCreateRoleBindings({ parent: org, requests: [sub(ids[2] as string, EDITOR), sub(ids[3] as string, VIEWER)] });
    expect(mixed.roleBindings.map((b) => b.roleUid)).toEqual([EDITOR, VIEWER]);
  });

  it("writes nothing when any entry of a batch is bad", async () => {
    const good = (i: number) => sub(ids[i] as string);
    const dangling = await rejects(
      () =>
        client.batchCreateRoleBindings({
          parent: org,
          roleUid: builtInRoleUid("registry.pull"),
          requests: [good(0), good(1), good(2), sub(`${org}/0123456789abcdef`)],
        }),
      Code.InvalidArgument,
      "requests[3].role_binding.identity_uid",
    );
    expect(dangling.findDetails(BadRequestSchema)[0]?.fieldViolations).toHaveLength(1);
    const pull = builtInRoleUid("registry.pull");
    await rejects(
      () => client.batchCreateRoleBindings({ parent: org, roleUid: pull, requests: [good(0), sub(foreignIdentity)] }),
      Code.InvalidArgument,
      "requests[1].role_binding.identity_uid",
    );
    await rejects(
      () => client.batchCreateRoleBindings({ parent: org, requests: [sub(ids[0] as string, pull), sub(ids[1] as string, "bad")] }),
      Code.InvalidArgument,
      "requests[1].role_binding.role_uid",
    );
    await rejects(
      () => client.batchCreateRoleBindings({ parent: org, roleUid: pull, requests: [good(0), sub(ids[1] as string, EDITOR)] }),
      Code.InvalidArgument,
      "requests[1].role_binding.role_uid",
    );
    await rejects(
      () => client.batchCreateRoleBindings({ parent: org, roleUid: pull, requests: [good(0), sub(ids[1] as string, "", team)] }),
      Code.InvalidArgument,
      "requests[1].parent",
    );
    await rejects(
      () => client.batchCreateRoleBindings({ parent: org, requests: [sub(ids[0] as string)] }),
      Code.InvalidArgument,
      "requests[0].role_binding.role_uid",
    );
    const foreignRole = await rejects(
      () => client.batchCreateRoleBindings({ parent: foreign, roleUid: pull, requests: [sub(foreignIdentity), sub(ids[0] as string)] }),
      Code.InvalidArgument,
      "requests[1].role_binding.identity_uid",
    );
    expect(foreignRole.findDetails(BadRequestSchema)[0]?.fieldViolations).toHaveLength(1);
    await rejects(() => client.batchCreateRoleBindings({ parent: org, roleUid: pull, requests: [] }), Code.InvalidArgument, "requests");
    await rejects(
      () => client.batchCreateRoleBindings({ parent: org, roleUid: pull, requests: Array.from({ length: 26 }, () => good(0)) }),
      Code.InvalidArgument,
      "requests",
    );
    await rejects(() => client.batchCreateRoleBindings({ parent: "", roleUid: pull, requests: [good(0)] }), Code.InvalidArgument, "parent");
    await rejects(() => client.batchCreateRoleBindings({ parent: "8".repeat(40), roleUid: pull, requests: [good(0)] }), Code.NotFound);
    // An existing binding, or the same binding twice in one batch, is ALREADY_EXISTS for the whole batch.
    const existing = await rejects(
      () => client.batchCreateRoleBindings({ parent: org, requests: [sub(ids[2] as string, pull), sub(ids[0] as string, VIEWER)] }),
      Code.AlreadyExists,
    );
    expect(existing.findDetails(ResourceInfoSchema)[0]?.resourceName).toBe(seeded[0]);
    await rejects(() => client.batchCreateRoleBindings({ parent: org, roleUid: pull, requests: [good(3), good(3)] }), Code.AlreadyExists);
    expect((await client.listRoleBindings({ role: pull })).roleBindings).toEqual([]);
  });
});
