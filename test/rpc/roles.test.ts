/**
 * Roles end to end over every RPC protocol: the built-in roles of a fresh database (listed
 * with no parameters, readable, never updated or deleted), custom roles with validated
 * capability lists, the update-mask rules for capabilities, delete refused while bound, and
 * list filters. Every hostile case asserts the error details and that the database is
 * unchanged.
 */
import { type Client, ConnectError, createClient } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Capability } from "../../gen/chainguard/capabilities/capabilities_pb.js";
import { GroupsService } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { IdentitiesService } from "../../gen/chainguard/platform/iam/v2beta1/identities_pb.js";
import { RoleBindingsService } from "../../gen/chainguard/platform/iam/v2beta1/role_bindings_pb.js";
import { RolesService } from "../../gen/chainguard/platform/iam/v2beta1/roles_pb.js";
import { BadRequestSchema, ErrorInfoSchema, PreconditionFailureSchema } from "../../gen/google/rpc/error_details_pb.js";
import { BUILT_IN_ROLES, builtInRoleUid } from "../../src/store/builtin-roles.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { expectRejectedAndUnchanged } from "../support/db.js";
import { closeGrpcClients, Code, rpcTransports } from "../support/transports.js";

const { CAP_IAM_GROUPS_LIST, CAP_REPO_LIST, CAP_TAG_LIST, CAP_REPO_INTERNAL_ADMIN, CAP_INTERNAL, UNKNOWN } = Capability;

describe.each(rpcTransports)("RolesService over $name", (transport) => {
  let t: TestApp;
  let client: Client<typeof RolesService>;
  let bindingsClient: Client<typeof RoleBindingsService>;
  let org: string;
  let folder: string;
  let identity: string;

  /** Runs a call that must fail without writing; checks code, ErrorInfo and the violated field or precondition type. */
  async function rejects(fn: () => Promise<unknown>, code: Code, field?: string): Promise<ConnectError> {
    const err = (await expectRejectedAndUnchanged(t, fn)) as ConnectError;
    expect(err).toBeInstanceOf(ConnectError);
    expect(err.code, err.rawMessage).toBe(code);
    const reason = Code[code].replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase();
    expect(err.findDetails(ErrorInfoSchema).map((i) => [i.reason, i.domain])).toEqual([[reason, "iam.chainguard.dev"]]);
    if (field !== undefined && code === Code.InvalidArgument) {
      expect(
        err.findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => v.field),
        err.rawMessage,
      ).toContain(field);
    }
    if (field !== undefined && code === Code.FailedPrecondition) {
      expect(err.findDetails(PreconditionFailureSchema)[0]?.violations.map((v) => v.type)).toEqual([field]);
    }
    return err;
  }

  const createRole = (name: string, capabilities: Capability[] = [CAP_IAM_GROUPS_LIST], parent = org) =>
    client.createRole({ parent, role: { name, description: "custom", capabilities } });

  beforeAll(async () => {
    t = await startTestApp();
    const tr = transport.create(t.url);
    client = createClient(RolesService, tr);
    bindingsClient = createClient(RoleBindingsService, tr);
    const groupsClient = createClient(GroupsService, tr);
    org = (await groupsClient.createGroup({ group: { name: "roles org" } })).uid;
    folder = (await groupsClient.createGroup({ parent: org, group: { name: "roles folder" } })).uid;
    identity = (
      await createClient(IdentitiesService, tr).createIdentity({
        parent: org,
        identity: { name: "robot", relationship: { case: "servicePrincipal", value: 1 } },
      })
    ).uid;
  });
  afterAll(async () => {
    closeGrpcClients();
    await t.close();
  });

  it("serves the built-in roles of a fresh database with no parameters", async () => {
    const all = await client.listRoles({});
    const builtIn = all.roles.filter((r) => !r.uid.includes("/"));
    expect(builtIn.map((r) => r.name).sort()).toEqual(BUILT_IN_ROLES.map((r) => r.name).sort());
    for (const role of builtIn) {
      const def = BUILT_IN_ROLES.find((r) => r.name === role.name);
      expect(role.uid).toBe(builtInRoleUid(role.name));
      expect(role.description).toBe(def?.description);
      expect(role.capabilities).toEqual(def?.capabilities);
    }
    const viewer = await client.getRole({ uid: builtInRoleUid("viewer") });
    expect(viewer).toMatchObject({ name: "viewer", description: "Viewer Role (built-in)" });
    expect(viewer.capabilities).toContain(Capability.CAP_REPO_BLOBS_GET);
    for (const name of ["owner", "editor", "registry.pull", "registry.push", "advisories.viewer"]) {
      expect((await client.getRole({ uid: builtInRoleUid(name) })).name).toBe(name);
    }
    const roots = await client.listRoles({ uidp: { inRoot: true } });
    expect(roots.roles.map((r) => r.uid).sort()).toEqual(BUILT_IN_ROLES.map((r) => builtInRoleUid(r.name)).sort());
    expect(roots.totalCount).toBe(BigInt(BUILT_IN_ROLES.length));
  });

  it("creates a custom role under a group, dropping duplicate capabilities", async () => {
    const role = await createRole("puller", [CAP_REPO_LIST, CAP_TAG_LIST, CAP_REPO_LIST]);
    expect(role.uid).toMatch(new RegExp(`^${org}/[0-9a-f]{16}$`));
    expect(role).toMatchObject({ name: "puller", description: "custom", capabilities: [CAP_REPO_LIST, CAP_TAG_LIST] });
    expect(role.updateTime).toEqual(role.createTime);
    expect(await client.getRole({ uid: role.uid })).toEqual(role);
    const all = await client.listRoles({ pageSize: 200 });
    expect(all.roles.map((r) => r.uid)).toContain(role.uid);
    expect(all.roles.map((r) => r.uid)).toContain(builtInRoleUid("owner"));
  });

  it("rejects invalid roles and capabilities, writing nothing", async () => {
    const cases: { req: Parameters<typeof client.createRole>[0]; field: string }[] = [
      { req: { parent: org, role: { name: "empty", capabilities: [] } }, field: "capabilities" },
      { req: { parent: org, role: { name: "unknown", capabilities: [CAP_REPO_LIST, UNKNOWN] } }, field: "capabilities[1]" },
      { req: { parent: org, role: { name: "internal", capabilities: [CAP_REPO_INTERNAL_ADMIN] } }, field: "capabilities[0]" },
      { req: { parent: org, role: { name: "staff", capabilities: [CAP_INTERNAL] } }, field: "capabilities[0]" },
      { req: { parent: org, role: { name: "undefined", capabilities: [CAP_TAG_LIST, 99_999 as Capability] } }, field: "capabilities[1]" },
      { req: { parent: org, role: { name: "Bad Name", capabilities: [CAP_REPO_LIST] } }, field: "name" },
      { req: { parent: org, role: { name: "ok name", description: "two\nlines", capabilities: [CAP_REPO_LIST] } }, field: "description" },
      { req: { parent: "nope", role: { name: "ok name", capabilities: [CAP_REPO_LIST] } }, field: "parent" },
      { req: { parent: "", role: { name: "ok name", capabilities: [CAP_REPO_LIST] } }, field: "parent" },
      { req: { parent: org }, field: "role" },
    ];
    for (const c of cases) await rejects(() => client.createRole(c.req), Code.InvalidArgument, c.field);
    await rejects(() => createRole("orphan", [CAP_REPO_LIST], "e".repeat(40)), Code.NotFound);
  });

  it("updates name and description keeping capabilities, and replaces capabilities when masked", async () => {
    const role = await createRole("updatable", [CAP_REPO_LIST]);
    const a = await client.updateRole({ role: { uid: role.uid, description: "after" } });
    expect(a).toMatchObject({ name: "updatable", description: "after", capabilities: [CAP_REPO_LIST] });
    const b = await client.updateRole({ role: { uid: role.uid, capabilities: [CAP_TAG_LIST, CAP_TAG_LIST] } });
    expect(b.capabilities).toEqual([CAP_TAG_LIST]);
    const c = await client.updateRole({
      role: { uid: role.uid, name: "renamed", capabilities: [CAP_REPO_LIST] },
      updateMask: { paths: ["name"] },
    });
    expect(c).toMatchObject({ name: "renamed", capabilities: [CAP_TAG_LIST] });
    expect(await client.getRole({ uid: role.uid })).toEqual(c);

    await rejects(() => client.updateRole({ role: { uid: role.uid }, updateMask: { paths: ["capabilities"] } }), Code.InvalidArgument, "capabilities");
    await rejects(() => client.updateRole({ role: { uid: role.uid, capabilities: [CAP_INTERNAL] } }), Code.InvalidArgument, "capabilities[0]");
    await rejects(() => client.updateRole({ role: { uid: role.uid, name: "X" } }), Code.InvalidArgument, "name");
    await rejects(() => client.updateRole({ role: { uid: role.uid }, updateMask: { paths: ["create_time"] } }), Code.InvalidArgument, "update_mask");
    await rejects(() => client.updateRole({ role: { uid: `${org}/0000000000000000`, name: "ghost" } }), Code.NotFound);
  });

  it("refuses to update or delete a built-in role (BUILT_IN_ROLE)", async () => {
    const viewer = builtInRoleUid("viewer");
    const upd = await rejects(() => client.updateRole({ role: { uid: viewer, description: "mine now" } }), Code.FailedPrecondition, "BUILT_IN_ROLE");
    expect(upd.rawMessage).toBe("Precondition failed: cannot update a built-in role");
    await rejects(() => client.updateRole({ role: { uid: viewer, capabilities: [CAP_REPO_LIST] } }), Code.FailedPrecondition, "BUILT_IN_ROLE");
    await rejects(() => client.deleteRole({ uid: viewer }), Code.FailedPrecondition, "BUILT_IN_ROLE");
    expect((await client.getRole({ uid: viewer })).description).toBe("Viewer Role (built-in)");
  });

  it("refuses to delete a bound role (RESOURCE_IN_USE), then deletes it once unbound", async () => {
    const role = await createRole("bound role", [CAP_REPO_LIST], folder);
    const binding = await bindingsClient.createRoleBinding({ parent: folder, roleBinding: { identityUid: identity, roleUid: role.uid } });
    const err = await rejects(() => client.deleteRole({ uid: role.uid }), Code.FailedPrecondition, "RESOURCE_IN_USE");
    expect(err.rawMessage).toBe("Precondition failed: cannot delete role with role bindings");
    await bindingsClient.deleteRoleBinding({ uid: binding.uid });
    await client.deleteRole({ uid: role.uid });
    expect((await client.getRole({ uid: role.uid }).catch((e) => e)).code).toBe(Code.NotFound);
    await rejects(() => client.deleteRole({ uid: role.uid }), Code.NotFound);
    await rejects(() => client.deleteRole({ uid: "bad" }), Code.InvalidArgument, "uid");
  });

  it("filters by uidp and exact name and orders by name", async () => {
    const mine = [await createRole("zeta", [CAP_REPO_LIST], folder), await createRole("alpha", [CAP_REPO_LIST], folder)];
    const children = await client.listRoles({ uidp: { childrenOf: folder }, orderBy: "name" });
    expect(children.roles.map((r) => r.name)).toEqual(["alpha", "zeta"]);
    expect((await client.listRoles({ uidp: { childrenOf: folder }, orderBy: "name desc" })).roles.map((r) => r.uid)).toEqual([...mine].map((r) => r.uid));
    expect((await client.listRoles({ name: "viewer" })).roles.map((r) => r.uid)).toEqual([builtInRoleUid("viewer")]);
    expect((await client.listRoles({ name: "zeta", uidp: { descendantsOf: org } })).roles.map((r) => r.uid)).toEqual([mine[0]?.uid]);
    const page = await client.listRoles({ pageSize: 3, orderBy: "created_at" });
    expect(page.roles).toHaveLength(3);
    expect(page.nextPageToken).not.toBe("");
  });
});
