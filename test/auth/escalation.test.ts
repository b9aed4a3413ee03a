/**
 * No caller can raise its own power, on every door. Each attack is made by "mallory", a user
 * who holds one narrow right through a custom role at an organization founded by "alice"
 * (its owner); every refusal must carry the right code and reason and leave the database
 * exactly as it was. Next to each attack, the legitimate use of the same right still works.
 *
 * Each door gets its own organization (and users), so the doors never see each other's
 * writes and any test runs alone (`-t`).
 */
import type { DescMessage, DescMethodUnary, MessageInitShape } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Capability } from "../../gen/chainguard/capabilities/capabilities_pb.js";
import { Groups } from "../../gen/chainguard/platform/iam/groups_v1_pb.js";
import { GroupsService } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { IdentitiesService } from "../../gen/chainguard/platform/iam/v2beta1/identities_pb.js";
import { RoleBindingsService } from "../../gen/chainguard/platform/iam/v2beta1/role_bindings_pb.js";
import { RolesService } from "../../gen/chainguard/platform/iam/v2beta1/roles_pb.js";
import { builtInRoleUid } from "../../src/store/builtin-roles.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { createUserIdentity, identityToken } from "../support/auth.js";
import { type CallDoor, type CallOutcome, callDoors } from "../support/call-method.js";
import { snapshotDb } from "../support/db.js";
import { rest } from "../support/rest.js";
import { closeGrpcClients } from "../support/transports.js";

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  closeGrpcClients();
  await t.close();
});

/** As the operator (the support client's default token). */
async function op(method: string, path: string, body?: unknown) {
  const r = await rest(t.url, method, path, body);
  if (r.status !== 200) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

interface User {
  readonly uid: string;
  readonly token: string;
}

async function user(name: string): Promise<User> {
  const uid = await createUserIdentity(t.dataDir, name);
  return { uid, token: await identityToken(t.app, uid) };
}

/** An organization founded by alice (so she is its only owner) and mallory, bound to nothing yet. */
async function world(door: CallDoor, tag: string) {
  const slug = `${door.name.replace(/[^a-z]/g, "")}-${tag}`;
  const alice = await user(`alice-${slug}`);
  const mallory = await user(`mallory-${slug}`);
  const founded = await rest(t.url, "POST", "/iam/v2beta1/groups", { name: `org-${slug}`.slice(0, 63) }, { authorization: `Bearer ${alice.token}` });
  expect(founded.status).toBe(200);
  const org = founded.body.uid as string;
  const listed = await op("GET", `/iam/v2beta1/roleBindings?group=${org}`);
  const aliceOwner = listed.roleBindings[0].uid as string;
  /** Binds mallory (or anyone) to a new custom role with exactly these capabilities at the org. */
  let roleCount = 0;
  const narrow = async (who: string, capabilities: Capability[]) => {
    roleCount++;
    const role = (await op("POST", `/iam/v2beta1/roles/${org}`, { name: `narrow-${roleCount}`, capabilities: capabilities.map((c) => Capability[c]) }))
      .uid as string;
    const binding = (await op("POST", `/iam/v2beta1/roleBindings/${org}`, { identityUid: who, roleUid: role })).uid as string;
    return { role, binding };
  };
  const bind = async (who: string, role: string) =>
    (await op("POST", `/iam/v2beta1/roleBindings/${org}`, { identityUid: who, roleUid: builtInRoleUid(role) })).uid as string;
  return { org, alice, mallory, aliceOwner, narrow, bind };
}

function as(door: CallDoor, who: User) {
  return <M extends DescMessage>(method: DescMethodUnary<M>, request: MessageInitShape<M>) => door.call(t.url, who.token, method, request);
}

/** The call is refused with `code` (and `reason`/precondition type) and the database did not change. */
async function expectRefused(call: () => Promise<CallOutcome>, code: number, reason: string, preconditionType?: string) {
  const before = await snapshotDb(t);
  const out = await call();
  expect(out, JSON.stringify(out)).toMatchObject({ ok: false, code, reason });
  if (preconditionType !== undefined && !out.ok) expect(out.preconditionTypes).toEqual([preconditionType]);
  expect(await snapshotDb(t)).toBe(before);
}

function expectOk(out: CallOutcome) {
  expect(out, JSON.stringify(out)).toMatchObject({ ok: true });
  return (out as { body: Record<string, unknown> }).body;
}

const ESCALATION = [7, "PRIVILEGE_ESCALATION"] as const;

describe.each(callDoors)("no caller raises its own power over $name", (door) => {
  it("re-targeting a binding (identity or role) needs the binding's role, granted and taken away", async () => {
    const w = await world(door, "rb");
    await w.narrow(w.mallory.uid, [Capability.CAP_IAM_ROLE_BINDINGS_UPDATE, Capability.CAP_IAM_ROLE_BINDINGS_DELETE]);
    const mallory = as(door, w.mallory);
    // The reported attack: only identity_uid changes, and mallory would become owner.
    await expectRefused(
      () =>
        mallory(RoleBindingsService.method.updateRoleBinding, {
          roleBinding: { uid: w.aliceOwner, identityUid: w.mallory.uid },
          updateMask: { paths: ["identity_uid"] },
        }),
      ...ESCALATION,
    );
    // Without a mask, the same.
    await expectRefused(
      () => mallory(RoleBindingsService.method.updateRoleBinding, { roleBinding: { uid: w.aliceOwner, identityUid: w.mallory.uid } }),
      ...ESCALATION,
    );
    // Taking owner away from alice (down to a role mallory could grant) is refused too, and so is deleting it.
    const carol = await user(`carol-${door.name.replace(/[^a-z]/g, "")}`);
    const carolViewer = await w.bind(carol.uid, "viewer");
    await expectRefused(
      () =>
        mallory(RoleBindingsService.method.updateRoleBinding, {
          roleBinding: { uid: w.aliceOwner, roleUid: builtInRoleUid("viewer") },
          updateMask: { paths: ["role_uid"] },
        }),
      ...ESCALATION,
    );
    await expectRefused(() => mallory(RoleBindingsService.method.deleteRoleBinding, { uid: w.aliceOwner }), ...ESCALATION);
    // Moving a viewer binding needs viewer's capabilities, which mallory's narrow role lacks.
    await expectRefused(
      () =>
        mallory(RoleBindingsService.method.updateRoleBinding, {
          roleBinding: { uid: carolViewer, identityUid: w.mallory.uid },
          updateMask: { paths: ["identity_uid"] },
        }),
      ...ESCALATION,
    );
    // An owner re-targets and deletes bindings as before.
    const alice = as(door, w.alice);
    const dave = await user(`dave-${door.name.replace(/[^a-z]/g, "")}`);
    expectOk(
      await alice(RoleBindingsService.method.updateRoleBinding, {
        roleBinding: { uid: carolViewer, identityUid: dave.uid },
        updateMask: { paths: ["identity_uid"] },
      }),
    );
    expectOk(await alice(RoleBindingsService.method.deleteRoleBinding, { uid: carolViewer }));
  });

  it("a role update or create adds only capabilities the caller holds where the role applies", async () => {
    const w = await world(door, "ro");
    const own = await w.narrow(w.mallory.uid, [Capability.CAP_IAM_ROLES_UPDATE, Capability.CAP_IAM_ROLES_CREATE, Capability.CAP_IAM_GROUPS_LIST]);
    const mallory = as(door, w.mallory);
    // The reported attack: mallory adds a capability to her own role.
    await expectRefused(
      () =>
        mallory(RolesService.method.updateRole, {
          role: {
            uid: own.role,
            capabilities: [Capability.CAP_IAM_ROLES_UPDATE, Capability.CAP_IAM_ROLES_CREATE, Capability.CAP_IAM_GROUPS_LIST, Capability.CAP_IAM_GROUPS_DELETE],
          },
          updateMask: { paths: ["capabilities"] },
        }),
      ...ESCALATION,
    );
    // ...or to an unbound role she could later get bound to; or creates one with it.
    const spare = (await op("POST", `/iam/v2beta1/roles/${w.org}`, { name: "spare", capabilities: ["CAP_IAM_GROUPS_LIST"] })).uid as string;
    await expectRefused(
      () =>
        mallory(RolesService.method.updateRole, {
          role: { uid: spare, capabilities: [Capability.CAP_IAM_ROLE_BINDINGS_CREATE] },
          updateMask: { paths: ["capabilities"] },
        }),
      ...ESCALATION,
    );
    await expectRefused(
      () => mallory(RolesService.method.createRole, { parent: w.org, role: { name: "sneaky", capabilities: [Capability.CAP_IAM_GROUPS_DELETE] } }),
      ...ESCALATION,
    );
    // Capabilities she holds: fine, on update and on create; so is dropping one.
    expectOk(
      await mallory(RolesService.method.updateRole, {
        role: { uid: spare, capabilities: [Capability.CAP_IAM_GROUPS_LIST, Capability.CAP_IAM_ROLES_CREATE] },
        updateMask: { paths: ["capabilities"] },
      }),
    );
    expectOk(await mallory(RolesService.method.createRole, { parent: w.org, role: { name: "fair", capabilities: [Capability.CAP_IAM_GROUPS_LIST] } }));
    expectOk(
      await mallory(RolesService.method.updateRole, {
        role: { uid: spare, capabilities: [Capability.CAP_IAM_GROUPS_LIST] },
        updateMask: { paths: ["capabilities"] },
      }),
    );
  });

  it("changing how an owner-bound identity is assumed needs what its bindings grant", async () => {
    const w = await world(door, "id");
    await w.narrow(w.mallory.uid, [Capability.CAP_IAM_IDENTITY_UPDATE, Capability.CAP_IAM_IDENTITY_DELETE]);
    const robot = (
      await op("POST", `/iam/v2beta1/identities/${w.org}`, { name: "deploy robot", claimMatch: { issuer: "https://ci.example.test", subject: "deploy" } })
    ).uid as string;
    await w.bind(robot, "owner");
    const mallory = as(door, w.mallory);
    const claims = (issuer: string, subject: string) => ({
      iss: { case: "issuer" as const, value: issuer },
      sub: { case: "subject" as const, value: subject },
    });
    const mine = claims("https://idp.example.test", "mallory");
    // The reported attack: claim_match re-pointed at mallory's own IdP subject.
    await expectRefused(
      () =>
        mallory(IdentitiesService.method.updateIdentity, {
          identity: { uid: robot, relationship: { case: "claimMatch", value: mine } },
          updateMask: { paths: ["claim_match"] },
        }),
      ...ESCALATION,
    );
    await expectRefused(
      () => mallory(IdentitiesService.method.updateIdentity, { identity: { uid: robot, relationship: { case: "claimMatch", value: mine } } }),
      ...ESCALATION,
    );
    // Any other way in: static keys of her own.
    const staticKeys = {
      issuer: "https://keys.example.test",
      subject: "mallory",
      issuerKeys: JSON.stringify({ keys: [{ kty: "EC", crv: "P-256", x: "x", y: "y" }] }),
    };
    await expectRefused(
      () =>
        mallory(IdentitiesService.method.updateIdentity, {
          identity: { uid: robot, relationship: { case: "staticKeys", value: staticKeys } },
          updateMask: { paths: ["static_keys"] },
        }),
      ...ESCALATION,
    );
    // Deleting it takes owner away from it: refused as well.
    await expectRefused(() => mallory(IdentitiesService.method.deleteIdentity, { uid: robot }), ...ESCALATION);
    // Its description is not how it is assumed; an unbound identity grants nothing.
    expectOk(
      await mallory(IdentitiesService.method.updateIdentity, {
        identity: { uid: robot, description: "renamed by mallory" },
        updateMask: { paths: ["description"] },
      }),
    );
    const idle = (
      await op("POST", `/iam/v2beta1/identities/${w.org}`, { name: "idle robot", claimMatch: { issuer: "https://ci.example.test", subject: "idle" } })
    ).uid as string;
    expectOk(
      await mallory(IdentitiesService.method.updateIdentity, {
        identity: { uid: idle, relationship: { case: "claimMatch", value: mine } },
        updateMask: { paths: ["claim_match"] },
      }),
    );
    // The owner may re-point its robot.
    expectOk(
      await as(door, w.alice)(IdentitiesService.method.updateIdentity, {
        identity: { uid: robot, relationship: { case: "claimMatch", value: claims("https://ci.example.test", "deploy-2") } },
        updateMask: { paths: ["claim_match"] },
      }),
    );
  });

  it("only the operator sets `verified`, on v2beta1 and v1 alike", async () => {
    const w = await world(door, "vf");
    const mallory = as(door, w.mallory);
    const alice = as(door, w.alice);
    const OPERATOR_ONLY = [7, "OPERATOR_ONLY_FIELD"] as const;
    await expectRefused(() => mallory(GroupsService.method.createGroup, { parent: "", group: { name: "victim.example", verified: true } }), ...OPERATOR_ONLY);
    await expectRefused(() => mallory(Groups.method.create, { parent: "", group: { name: "victim.example", verified: true } }), ...OPERATOR_ONLY);
    // Even the organization's owner cannot verify it.
    await expectRefused(
      () => alice(GroupsService.method.updateGroup, { group: { uid: w.org, verified: true }, updateMask: { paths: ["verified"] } }),
      ...OPERATOR_ONLY,
    );
    await expectRefused(() => alice(GroupsService.method.updateGroup, { group: { uid: w.org, verified: true } }), ...OPERATOR_ONLY);
    await expectRefused(() => alice(Groups.method.update, { id: w.org, name: "renamed", verified: true }), ...OPERATOR_ONLY);
    // Writes that leave it alone keep working; the operator sets it.
    expectOk(
      await alice(GroupsService.method.updateGroup, {
        group: { uid: w.org, description: "ours", verified: false },
        updateMask: { paths: ["description", "verified"] },
      }),
    );
    expectOk(
      await as(door, { uid: "", token: t.token })(GroupsService.method.updateGroup, {
        group: { uid: w.org, verified: true },
        updateMask: { paths: ["verified"] },
      }),
    );
    // Now verified: the owner may not clear it either, but a v1 PUT (which cannot say "unchanged") keeps it.
    await expectRefused(
      () => alice(GroupsService.method.updateGroup, { group: { uid: w.org, verified: false }, updateMask: { paths: ["verified"] } }),
      ...OPERATOR_ONLY,
    );
    const v1 = expectOk(await alice(Groups.method.update, { id: w.org, name: `org-v1-${door.name.replace(/[^a-z]/g, "")}`.slice(0, 63) }));
    expect(v1.verified).toBe(true);
  });

  it("the last owner of an organization cannot be removed; the organization can be deleted", async () => {
    const w = await world(door, "lo");
    const alice = as(door, w.alice);
    const LAST_OWNER = [9, "FAILED_PRECONDITION", "LAST_OWNER"] as const;
    await expectRefused(() => alice(RoleBindingsService.method.deleteRoleBinding, { uid: w.aliceOwner }), ...LAST_OWNER);
    await expectRefused(
      () =>
        alice(RoleBindingsService.method.updateRoleBinding, {
          roleBinding: { uid: w.aliceOwner, roleUid: builtInRoleUid("viewer") },
          updateMask: { paths: ["role_uid"] },
        }),
      ...LAST_OWNER,
    );
    await expectRefused(
      () =>
        alice(RoleBindingsService.method.updateRoleBinding, {
          roleBinding: { uid: w.aliceOwner, identityUid: w.mallory.uid },
          updateMask: { paths: ["identity_uid"] },
        }),
      ...LAST_OWNER,
    );
    // Deleting the identity that holds it (only the operator can delete a user identity).
    const operator = as(door, { uid: "", token: t.token });
    await expectRefused(() => operator(IdentitiesService.method.deleteIdentity, { uid: w.alice.uid }), ...LAST_OWNER);
    // With a second owner, either may go.
    const second = await w.bind(w.mallory.uid, "owner");
    expectOk(await alice(RoleBindingsService.method.deleteRoleBinding, { uid: second }));
    // groups.delete alone does not delete a group from under its owner (deleting takes the
    // group's bindings with it); the owner above may.
    const folder = (await op("POST", `/iam/v2beta1/groups/${w.org}`, { name: "team" })).uid as string;
    const carol = await user(`carol-lo-${door.name.replace(/[^a-z]/g, "")}`);
    await op("POST", `/iam/v2beta1/roleBindings/${folder}`, { identityUid: carol.uid, roleUid: builtInRoleUid("owner") });
    const narrow = await w.narrow(w.mallory.uid, [Capability.CAP_IAM_GROUPS_DELETE]);
    await expectRefused(() => as(door, w.mallory)(GroupsService.method.deleteGroup, { uid: folder }), ...ESCALATION);
    expectOk(await alice(GroupsService.method.deleteGroup, { uid: folder }));
    await op("DELETE", `/iam/v2beta1/roleBindings/${narrow.binding}`);
    await op("DELETE", `/iam/v2beta1/roles/${narrow.role}`);
    // The founder deletes the organization with its bindings (hers and mallory's included).
    expectOk(await alice(GroupsService.method.deleteGroup, { uid: w.org }));
    const left = await op("GET", `/iam/v2beta1/roleBindings?group=${w.org}`);
    expect(left.roleBindings ?? []).toEqual([]);
  });
});
