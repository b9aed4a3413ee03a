/**
 * The authorization matrix: role × method × target group × door, GENERATED from the
 * capability annotations the server itself reads (`planFor` in src/auth/iam-plan.ts over the
 * method descriptors). Nothing here restates which capability a method needs: the expected
 * answer of every case is computed from the method's plan and the role's capabilities.
 *
 *   O (organization) ─ team ─ sub          P (another organization)
 *   each caller is bound at `team` with one role: viewer, editor, owner (built-in) or
 *   "narrow", a custom role holding a handful of update rights and nothing to read with.
 *
 * Targets: `team` (where the caller is bound), `O` (its ancestor), `sub` (a descendant) and
 * `P` (unrelated). Every IAM read and write method with a scope (v2beta1 and the v1 Groups
 * endpoints) has at least one request variant below; a method without one fails the first
 * test, so a new method cannot escape the matrix. The variants include every update path of
 * the anti-escalation rules (re-targeted and deleted bindings, widened roles, re-pointed and
 * deleted identities, invites and identity providers granting a role later, `verified`):
 * such a variant names what it would grant, and is expected to be refused with
 * PRIVILEGE_ESCALATION (or OPERATOR_ONLY_FIELD) when the role does not hold it.
 *
 * Expected, per case:
 * - scoped, create and GetRole plans: allowed exactly when the target is `team` or `sub`, the
 *   role holds every capability of the plan, and the variant grants nothing the role lacks;
 *   allowed = OK (UNIMPLEMENTED for CheckAccountAssociation, which needs the cloud provider), refused = PERMISSION_DENIED
 *   with the reason above, and the database unchanged (snapshotDb).
 * - unscoped Lists: never refused; the fixture made at the target is listed exactly when the
 *   plan would allow reading there.
 *
 * Doors and run time (2 cores): the FULL matrix runs over REST (the door the reported
 * attacks used); each RPC door (gRPC, Connect JSON, Connect proto over h2, gRPC-web) runs a
 * seeded random sample of SAMPLE_PER_DOOR cases. The seed is printed; set MATRIX_SEED to
 * replay a run. Every case makes its own fixtures (as the operator) so cases never depend on
 * each other, and no case changes what a caller holds.
 */
import type { DescMessage, DescMethodUnary, DescService, MessageInitShape } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Capability } from "../../gen/chainguard/capabilities/capabilities_pb.js";
import { Groups } from "../../gen/chainguard/platform/iam/groups_v1_pb.js";
import { AccountAssociationsService, AccountProviderType } from "../../gen/chainguard/platform/iam/v2beta1/account_associations_pb.js";
import { GroupInvitesService } from "../../gen/chainguard/platform/iam/v2beta1/group_invites_pb.js";
import { GroupsService } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { IdentitiesService } from "../../gen/chainguard/platform/iam/v2beta1/identities_pb.js";
import { IdentityProvidersService } from "../../gen/chainguard/platform/iam/v2beta1/identity_providers_pb.js";
import { RoleBindingsService } from "../../gen/chainguard/platform/iam/v2beta1/role_bindings_pb.js";
import { RolesService } from "../../gen/chainguard/platform/iam/v2beta1/roles_pb.js";
import { type MethodPlan, planFor } from "../../src/auth/iam-plan.js";
import { BUILT_IN_ROLES, builtInRoleUid } from "../../src/store/builtin-roles.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { createUserIdentity, identityToken } from "../support/auth.js";
import { type CallDoor, type CallOutcome, callDoors } from "../support/call-method.js";
import { snapshotDb } from "../support/db.js";
import { rest } from "../support/rest.js";
import { closeGrpcClients } from "../support/transports.js";

/** The services whose methods the matrix covers: every IAM service, both versions. */
const SERVICES: readonly DescService[] = [
  GroupsService,
  IdentitiesService,
  RolesService,
  RoleBindingsService,
  GroupInvitesService,
  IdentityProvidersService,
  AccountAssociationsService,
  Groups,
];
const SAMPLE_PER_DOOR = 100;
const SEED = Number(process.env.MATRIX_SEED ?? 20261125);

/** Methods answered UNIMPLEMENTED once authorized (they need systems Trellis does not call). */
const UNIMPLEMENTED = new Set(["CheckAccountAssociation"]);

/** Write rights only, among them every one whose use can grant a role (so each guard is reached). */
const NARROW_CAPABILITIES = [
  Capability.CAP_IAM_ROLE_BINDINGS_CREATE,
  Capability.CAP_IAM_ROLE_BINDINGS_UPDATE,
  Capability.CAP_IAM_ROLE_BINDINGS_DELETE,
  Capability.CAP_IAM_ROLES_CREATE,
  Capability.CAP_IAM_ROLES_UPDATE,
  Capability.CAP_IAM_IDENTITY_UPDATE,
  Capability.CAP_IAM_IDENTITY_DELETE,
  Capability.CAP_IAM_GROUPS_UPDATE,
  Capability.CAP_IAM_GROUP_INVITES_CREATE,
  Capability.CAP_IAM_IDENTITY_PROVIDERS_CREATE,
  Capability.CAP_IAM_IDENTITY_PROVIDERS_UPDATE,
];

function capsOf(name: string): ReadonlySet<number> {
  const role = BUILT_IN_ROLES.find((r) => r.name === name);
  if (!role) throw new Error(`no built-in role ${name}`);
  return new Set(role.capabilities);
}
const ROLES: readonly { name: string; caps: ReadonlySet<number> }[] = [
  { name: "viewer", caps: capsOf("viewer") },
  { name: "editor", caps: capsOf("editor") },
  { name: "owner", caps: capsOf("owner") },
  { name: "narrow", caps: new Set(NARROW_CAPABILITIES) },
];
const TARGETS = ["team", "O", "sub", "P"] as const;
type Target = (typeof TARGETS)[number];
/** Where a binding at `team` grants: the group itself and what lies below it. */
const REACHED: ReadonlySet<Target> = new Set(["team", "sub"]);

const holdsAll = (caps: ReadonlySet<number>, wanted: Iterable<number>) => [...wanted].every((c) => caps.has(c));

// ---- fixtures, made by the operator ------------------------------------------------------

let t: TestApp;
let counter = 0;
const unique = (prefix: string) => `${prefix}-${(counter++).toString(36)}`;

async function op(method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const r = await rest(t.url, method, path, body);
  if (r.status !== 200) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}
const uidOf = async (p: Promise<Record<string, unknown>>) => (await p).uid as string;
const fx = {
  group: (g: string) => uidOf(op("POST", `/iam/v2beta1/groups/${g}`, { name: unique("grp") })),
  identity: (g: string) =>
    uidOf(op("POST", `/iam/v2beta1/identities/${g}`, { name: unique("robot"), claimMatch: { issuer: "https://ci.example.test", subject: unique("job") } })),
  role: (g: string, caps: Capability[]) => uidOf(op("POST", `/iam/v2beta1/roles/${g}`, { name: unique("role"), capabilities: caps.map((c) => Capability[c]) })),
  binding: (g: string, identityUid: string, roleUid: string) => uidOf(op("POST", `/iam/v2beta1/roleBindings/${g}`, { identityUid, roleUid })),
  invite: (g: string) => uidOf(op("POST", `/iam/v2beta1/groupInvites/${g}`, { roleUid: builtInRoleUid("viewer"), ttl: "3600s" })),
  idp: (g: string) => uidOf(op("POST", `/iam/v2beta1/identityProviders/${g}`, { name: unique("idp"), defaultRole: builtInRoleUid("viewer"), oidc: OIDC })),
  /** A provider with a SCIM token issued (its SCIM etag is then "1"). */
  scimIdp: async (g: string) => {
    const uid = await fx.idp(g);
    await op("POST", `/iam/v2beta1/identityProviders/${uid}:generateScimToken`, {});
    return uid;
  },
  association: (g: string) => uidOf(op("POST", `/iam/v2beta1/accountAssociations/${g}`, { name: unique("acct"), amazon: { account: "123456789012" } })),
};
const OIDC = { issuer: "https://idp.example.com/realms/acme", clientId: "trellis-console", clientSecret: "s3cret-value" };
const claimMatch = (subject: string) => ({
  case: "claimMatch" as const,
  value: { iss: { case: "issuer" as const, value: "https://idp.example.test" }, sub: { case: "subject" as const, value: subject } },
});
/** A fresh child of `g` whose only content is a binding of the built-in `role` (deleting it revokes that). */
async function boundChild(g: string, role: string): Promise<string> {
  const child = await fx.group(g);
  await fx.binding(child, await fx.identity(g), builtInRoleUid(role));
  return child;
}
const VIEWER = capsOf("viewer");
const OWNER = capsOf("owner");

// ---- the request variants, per method ------------------------------------------------------

/** One request shape for a method, with what it would grant beyond the method's own capability. */
interface Variant {
  readonly name: string;
  /** Makes the fixtures at group `g` and returns the request; `listed` is the uid a List must show. */
  prepare(g: string): Promise<{ request: unknown; listed?: string }>;
  /** The refusal a caller gets even where the method is allowed, when it may not make this change. */
  refusal?(caps: ReadonlySet<number>): string | undefined;
}
const grants = (needs: Iterable<number>) => (caps: ReadonlySet<number>) => (holdsAll(caps, needs) ? undefined : "PRIVILEGE_ESCALATION");
const operatorOnly = () => "OPERATOR_ONLY_FIELD";
const v = (name: string, prepare: Variant["prepare"], refusal?: Variant["refusal"]): Variant => ({ name, prepare, ...(refusal && { refusal }) });
const list = (fixture: (g: string) => Promise<string>) =>
  v("list", async (g) => {
    const uid = await fixture(g);
    return { request: { uidp: { ids: [uid] }, pageSize: 10 }, listed: uid };
  });

const VARIANTS: Readonly<Record<string, readonly Variant[]>> = {
  // GroupsService
  "chainguard.platform.iam.v2beta1.GroupsService/GetGroup": [v("get", async (g) => ({ request: { uid: g } }))],
  "chainguard.platform.iam.v2beta1.GroupsService/DeleteGroup": [
    v("empty child", async (g) => ({ request: { uid: await fx.group(g) } })),
    v("child with an owner bound", async (g) => ({ request: { uid: await boundChild(g, "owner") } }), grants(OWNER)),
  ],
  "chainguard.platform.iam.v2beta1.GroupsService/ListGroups": [list(fx.group)],
  "chainguard.platform.iam.v2beta1.GroupsService/CreateGroup": [
    v("folder", async (g) => ({ request: { parent: g, group: { name: unique("new") } } })),
    v("verified folder", async (g) => ({ request: { parent: g, group: { name: unique("new"), verified: true } } }), operatorOnly),
  ],
  "chainguard.platform.iam.v2beta1.GroupsService/UpdateGroup": [
    v("description", async (g) => ({ request: { group: { uid: g, description: unique("d") }, updateMask: { paths: ["description"] } } })),
    v("verified", async (g) => ({ request: { group: { uid: await fx.group(g), verified: true }, updateMask: { paths: ["verified"] } } }), operatorOnly),
  ],
  // Groups (v1)
  "chainguard.platform.iam.Groups/Create": [
    v("folder", async (g) => ({ request: { parent: g, group: { name: unique("new") } } })),
    v("verified folder", async (g) => ({ request: { parent: g, group: { name: unique("new"), verified: true } } }), operatorOnly),
  ],
  "chainguard.platform.iam.Groups/Update": [
    v("rename", async (g) => ({ request: { id: await fx.group(g), name: unique("renamed") } })),
    v("verified", async (g) => ({ request: { id: await fx.group(g), name: unique("renamed"), verified: true } }), operatorOnly),
  ],
  "chainguard.platform.iam.Groups/Delete": [
    v("empty child", async (g) => ({ request: { id: await fx.group(g) } })),
    v("child with a viewer bound", async (g) => ({ request: { id: await boundChild(g, "viewer") } }), grants(VIEWER)),
  ],
  "chainguard.platform.iam.Groups/List": [
    v("list", async (g) => {
      const uid = await fx.group(g);
      return { request: { uidp: { ids: [uid] } }, listed: uid };
    }),
  ],
  // IdentitiesService
  "chainguard.platform.iam.v2beta1.IdentitiesService/CreateIdentity": [
    v("claim match", async (g) => ({ request: { parent: g, identity: { name: unique("robot"), relationship: claimMatch(unique("s")) } } })),
  ],
  "chainguard.platform.iam.v2beta1.IdentitiesService/GetIdentity": [v("get", async (g) => ({ request: { uid: await fx.identity(g) } }))],
  "chainguard.platform.iam.v2beta1.IdentitiesService/DeleteIdentity": [
    v("unbound", async (g) => ({ request: { uid: await fx.identity(g) } })),
    v(
      "owner-bound",
      async (g) => {
        const id = await fx.identity(g);
        await fx.binding(g, id, builtInRoleUid("owner"));
        return { request: { uid: id } };
      },
      grants(OWNER),
    ),
  ],
  "chainguard.platform.iam.v2beta1.IdentitiesService/UpdateIdentity": [
    v("description", async (g) => ({ request: { identity: { uid: await fx.identity(g), description: unique("d") }, updateMask: { paths: ["description"] } } })),
    v(
      "re-point an owner-bound identity",
      async (g) => {
        const id = await fx.identity(g);
        await fx.binding(g, id, builtInRoleUid("owner"));
        return { request: { identity: { uid: id, relationship: claimMatch("attacker") }, updateMask: { paths: ["claim_match"] } } };
      },
      grants(OWNER),
    ),
    v(
      "re-point a viewer-bound identity",
      async (g) => {
        const id = await fx.identity(g);
        await fx.binding(g, id, builtInRoleUid("viewer"));
        return { request: { identity: { uid: id, relationship: claimMatch("attacker") }, updateMask: { paths: ["claim_match"] } } };
      },
      grants(VIEWER),
    ),
  ],
  "chainguard.platform.iam.v2beta1.IdentitiesService/ListIdentities": [list(fx.identity)],
  // RolesService
  "chainguard.platform.iam.v2beta1.RolesService/GetRole": [
    v("custom", async (g) => ({ request: { uid: await fx.role(g, [Capability.CAP_IAM_GROUPS_LIST]) } })),
  ],
  "chainguard.platform.iam.v2beta1.RolesService/ListRoles": [list((g) => fx.role(g, [Capability.CAP_IAM_GROUPS_LIST]))],
  "chainguard.platform.iam.v2beta1.RolesService/CreateRole": [
    v(
      "with groups.update",
      async (g) => ({ request: { parent: g, role: { name: unique("r"), capabilities: [Capability.CAP_IAM_GROUPS_UPDATE] } } }),
      grants([Capability.CAP_IAM_GROUPS_UPDATE]),
    ),
    v(
      "with groups.delete",
      async (g) => ({ request: { parent: g, role: { name: unique("r"), capabilities: [Capability.CAP_IAM_GROUPS_DELETE] } } }),
      grants([Capability.CAP_IAM_GROUPS_DELETE]),
    ),
  ],
  "chainguard.platform.iam.v2beta1.RolesService/UpdateRole": [
    v("description", async (g) => ({
      request: { role: { uid: await fx.role(g, [Capability.CAP_IAM_GROUPS_LIST]), description: unique("d") }, updateMask: { paths: ["description"] } },
    })),
    v(
      "add groups.delete",
      async (g) => {
        const role = await fx.role(g, [Capability.CAP_IAM_GROUPS_LIST]);
        return {
          request: {
            role: { uid: role, capabilities: [Capability.CAP_IAM_GROUPS_LIST, Capability.CAP_IAM_GROUPS_DELETE] },
            updateMask: { paths: ["capabilities"] },
          },
        };
      },
      grants([Capability.CAP_IAM_GROUPS_DELETE]),
    ),
    v("drop a capability", async (g) => {
      const role = await fx.role(g, [Capability.CAP_IAM_GROUPS_LIST, Capability.CAP_IAM_GROUPS_DELETE]);
      return { request: { role: { uid: role, capabilities: [Capability.CAP_IAM_GROUPS_LIST] }, updateMask: { paths: ["capabilities"] } } };
    }),
  ],
  "chainguard.platform.iam.v2beta1.RolesService/DeleteRole": [
    v("unused", async (g) => ({ request: { uid: await fx.role(g, [Capability.CAP_IAM_GROUPS_LIST]) } })),
  ],
  // RoleBindingsService
  "chainguard.platform.iam.v2beta1.RoleBindingsService/GetRoleBinding": [
    v("get", async (g) => ({ request: { uid: await fx.binding(g, await fx.identity(g), builtInRoleUid("viewer")) } })),
  ],
  "chainguard.platform.iam.v2beta1.RoleBindingsService/ListRoleBindings": [list(async (g) => fx.binding(g, await fx.identity(g), builtInRoleUid("viewer")))],
  "chainguard.platform.iam.v2beta1.RoleBindingsService/CreateRoleBinding": [
    v(
      "grant viewer",
      async (g) => ({ request: { parent: g, roleBinding: { identityUid: await fx.identity(g), roleUid: builtInRoleUid("viewer") } } }),
      grants(VIEWER),
    ),
    v(
      "grant owner",
      async (g) => ({ request: { parent: g, roleBinding: { identityUid: await fx.identity(g), roleUid: builtInRoleUid("owner") } } }),
      grants(OWNER),
    ),
  ],
  "chainguard.platform.iam.v2beta1.RoleBindingsService/BatchCreateRoleBindings": [
    v(
      "grant viewer",
      async (g) => ({ request: { parent: g, roleUid: builtInRoleUid("viewer"), requests: [{ roleBinding: { identityUid: await fx.identity(g) } }] } }),
      grants(VIEWER),
    ),
  ],
  "chainguard.platform.iam.v2beta1.RoleBindingsService/DeleteRoleBinding": [
    v("revoke viewer", async (g) => ({ request: { uid: await fx.binding(g, await fx.identity(g), builtInRoleUid("viewer")) } }), grants(VIEWER)),
    v("revoke owner", async (g) => ({ request: { uid: await fx.binding(g, await fx.identity(g), builtInRoleUid("owner")) } }), grants(OWNER)),
  ],
  "chainguard.platform.iam.v2beta1.RoleBindingsService/UpdateRoleBinding": [
    v(
      "re-target an owner binding (identity only)",
      async (g) => {
        const b = await fx.binding(g, await fx.identity(g), builtInRoleUid("owner"));
        return { request: { roleBinding: { uid: b, identityUid: await fx.identity(g) }, updateMask: { paths: ["identity_uid"] } } };
      },
      grants(OWNER),
    ),
    v(
      "re-target a viewer binding (identity only)",
      async (g) => {
        const b = await fx.binding(g, await fx.identity(g), builtInRoleUid("viewer"));
        return { request: { roleBinding: { uid: b, identityUid: await fx.identity(g) }, updateMask: { paths: ["identity_uid"] } } };
      },
      grants(VIEWER),
    ),
    v(
      "owner down to viewer (role only)",
      async (g) => {
        const b = await fx.binding(g, await fx.identity(g), builtInRoleUid("owner"));
        return { request: { roleBinding: { uid: b, roleUid: builtInRoleUid("viewer") }, updateMask: { paths: ["role_uid"] } } };
      },
      grants([...OWNER, ...VIEWER]),
    ),
  ],
  // GroupInvitesService
  "chainguard.platform.iam.v2beta1.GroupInvitesService/CreateGroupInvite": [
    v(
      "invite as viewer",
      async (g) => ({ request: { parent: g, groupInvite: { roleUid: builtInRoleUid("viewer"), ttl: { seconds: 3600n } } } }),
      grants(VIEWER),
    ),
    v("invite as owner", async (g) => ({ request: { parent: g, groupInvite: { roleUid: builtInRoleUid("owner"), ttl: { seconds: 3600n } } } }), grants(OWNER)),
  ],
  "chainguard.platform.iam.v2beta1.GroupInvitesService/GetGroupInvite": [v("get", async (g) => ({ request: { uid: await fx.invite(g) } }))],
  "chainguard.platform.iam.v2beta1.GroupInvitesService/DeleteGroupInvite": [v("delete", async (g) => ({ request: { uid: await fx.invite(g) } }))],
  "chainguard.platform.iam.v2beta1.GroupInvitesService/ListGroupInvites": [list(fx.invite)],
  // IdentityProvidersService
  "chainguard.platform.iam.v2beta1.IdentityProvidersService/CreateIdentityProvider": [
    v(
      "viewer by default",
      async (g) => ({
        request: { parent: g, identityProvider: { name: unique("idp"), defaultRole: builtInRoleUid("viewer"), configuration: { case: "oidc", value: OIDC } } },
      }),
      grants(VIEWER),
    ),
  ],
  "chainguard.platform.iam.v2beta1.IdentityProvidersService/GetIdentityProvider": [v("get", async (g) => ({ request: { uid: await fx.idp(g) } }))],
  "chainguard.platform.iam.v2beta1.IdentityProvidersService/UpdateIdentityProvider": [
    v("description", async (g) => ({
      request: { identityProvider: { uid: await fx.idp(g), description: unique("d") }, updateMask: { paths: ["description"] } },
    })),
    v(
      "owner by default",
      async (g) => ({
        request: { identityProvider: { uid: await fx.idp(g), defaultRole: builtInRoleUid("owner") }, updateMask: { paths: ["default_role"] } },
      }),
      grants(OWNER),
    ),
  ],
  "chainguard.platform.iam.v2beta1.IdentityProvidersService/DeleteIdentityProvider": [v("delete", async (g) => ({ request: { uid: await fx.idp(g) } }))],
  "chainguard.platform.iam.v2beta1.IdentityProvidersService/ListIdentityProviders": [list(fx.idp)],
  "chainguard.platform.iam.v2beta1.IdentityProvidersService/GenerateScimToken": [
    v("generate", async (g) => ({ request: { identityProviderUid: await fx.idp(g) } }), grants(VIEWER)),
  ],
  "chainguard.platform.iam.v2beta1.IdentityProvidersService/RegenerateScimToken": [
    v("regenerate", async (g) => ({ request: { identityProviderUid: await fx.scimIdp(g), etag: "1" } }), grants(VIEWER)),
  ],
  "chainguard.platform.iam.v2beta1.IdentityProvidersService/RevokeScimToken": [
    v("revoke", async (g) => ({ request: { identityProviderUid: await fx.scimIdp(g) } })),
  ],
  // A SCIM token provisions users with the provider's default role (viewer here): issuing one needs viewer.
  "chainguard.platform.iam.v2beta1.IdentityProvidersService/SetScimEnabled": [
    v("disable (no change)", async (g) => ({ request: { identityProviderUid: await fx.idp(g), enabled: false, etag: "0" } })),
  ],
  // AccountAssociationsService: one association per group, so each case uses a fresh child of the target.
  "chainguard.platform.iam.v2beta1.AccountAssociationsService/CreateAccountAssociation": [
    v("amazon", async (g) => ({ request: { parent: await fx.group(g), accountAssociation: { name: unique("acct"), amazon: { account: "123456789012" } } } })),
  ],
  "chainguard.platform.iam.v2beta1.AccountAssociationsService/GetAccountAssociation": [
    v("get", async (g) => ({ request: { uid: await fx.association(await fx.group(g)) } })),
  ],
  "chainguard.platform.iam.v2beta1.AccountAssociationsService/UpdateAccountAssociation": [
    v("description", async (g) => ({
      request: { accountAssociation: { uid: await fx.association(await fx.group(g)), description: unique("d") }, updateMask: { paths: ["description"] } },
    })),
  ],
  "chainguard.platform.iam.v2beta1.AccountAssociationsService/DeleteAccountAssociation": [
    v("delete", async (g) => ({ request: { uid: await fx.association(await fx.group(g)) } })),
  ],
  "chainguard.platform.iam.v2beta1.AccountAssociationsService/ListAccountAssociations": [list(async (g) => fx.association(await fx.group(g)))],
  "chainguard.platform.iam.v2beta1.AccountAssociationsService/CheckAccountAssociation": [
    v("check", async (g) => ({ request: { uid: await fx.association(await fx.group(g)), providerType: AccountProviderType.AMAZON } })),
  ],
};

// ---- the generated cases ------------------------------------------------------------------

interface MethodUnderTest {
  readonly key: string;
  readonly method: DescMethodUnary;
  readonly plan: Extract<MethodPlan, { capabilities: readonly number[] }>;
}

/** Every method the matrix must cover: those whose plan reads a scope or filters a List. */
const METHODS: readonly MethodUnderTest[] = SERVICES.flatMap((s) =>
  s.methods.flatMap((m) => {
    const plan = planFor(m);
    if (plan.kind === "authenticated" || plan.kind === "disabled" || plan.kind === "operatorOnly") return [];
    return [{ key: `${s.typeName}/${m.name}`, method: m as DescMethodUnary, plan }];
  }),
);

interface Case {
  readonly id: string;
  readonly role: (typeof ROLES)[number];
  readonly target: Target;
  readonly m: MethodUnderTest;
  readonly variant: Variant;
}

const CASES: readonly Case[] = METHODS.flatMap((m) =>
  (VARIANTS[m.key] ?? []).flatMap((variant) =>
    ROLES.flatMap((role) => TARGETS.map((target) => ({ id: `${role.name} ${m.key} [${variant.name}] at ${target}`, role, target, m, variant }))),
  ),
);

/** mulberry32: a small seeded generator, so a sample can be replayed from its seed. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = a;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

function sample(cases: readonly Case[], n: number, seed: number): Case[] {
  const rand = seeded(seed);
  const pool = [...cases];
  for (let i = pool.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [pool[i], pool[j]] = [pool[j] as Case, pool[i] as Case];
  }
  return pool.slice(0, n);
}

// ---- the world -----------------------------------------------------------------------------

const groupsOf: Record<Target, string> = { team: "", O: "", sub: "", P: "" };
const tokens = new Map<string, string>();

beforeAll(async () => {
  t = await startTestApp();
  groupsOf.O = await uidOf(op("POST", "/iam/v2beta1/groups", { name: "matrix-org" }));
  groupsOf.team = await fx.group(groupsOf.O);
  groupsOf.sub = await fx.group(groupsOf.team);
  groupsOf.P = await uidOf(op("POST", "/iam/v2beta1/groups", { name: "matrix-other" }));
  const narrow = await fx.role(groupsOf.O, NARROW_CAPABILITIES);
  for (const role of ROLES) {
    const uid = await createUserIdentity(t.dataDir, `matrix-${role.name}`);
    await fx.binding(groupsOf.team, uid, role.name === "narrow" ? narrow : builtInRoleUid(role.name));
    tokens.set(role.name, await identityToken(t.app, uid));
  }
  console.log(`authorization matrix: ${CASES.length} cases over rest, ${SAMPLE_PER_DOOR} sampled per RPC door, MATRIX_SEED=${SEED}`);
});
afterAll(async () => {
  closeGrpcClients();
  await t.close();
});

/** What the case must answer, from the plan, the role and the variant. */
function expected(c: Case): { allowed: true } | { allowed: false; reason: string } {
  const reachable = REACHED.has(c.target) && holdsAll(c.role.caps, c.m.plan.capabilities);
  if (!reachable) return { allowed: false, reason: "PERMISSION_DENIED" };
  const refusal = c.variant.refusal?.(c.role.caps);
  return refusal ? { allowed: false, reason: refusal } : { allowed: true };
}

async function runCase(door: CallDoor, c: Case): Promise<void> {
  const { request, listed } = await c.variant.prepare(groupsOf[c.target]);
  const token = tokens.get(c.role.name) as string;
  const call = () => door.call(t.url, token, c.m.method as DescMethodUnary<DescMessage>, request as MessageInitShape<DescMessage>);
  if (c.m.plan.kind === "list") {
    const out = await call();
    expect(out.ok, `${c.id}: ${JSON.stringify(out)}`).toBe(true);
    const rows = Object.values((out as { body: Record<string, unknown> }).body).find(Array.isArray) as { uid?: string; id?: string }[] | undefined;
    const uids = (rows ?? []).map((r) => r.uid ?? r.id);
    const reading = REACHED.has(c.target) && holdsAll(c.role.caps, c.m.plan.capabilities);
    expect(uids.includes(listed), `${c.id}: listed ${JSON.stringify(uids)}`).toBe(reading);
    return;
  }
  const want = expected(c);
  if (want.allowed) {
    const out = await call();
    if (UNIMPLEMENTED.has(c.m.method.name)) expect(out, c.id).toMatchObject({ ok: false, code: 12 });
    else expect(out, `${c.id}: ${JSON.stringify(out)}`).toMatchObject({ ok: true });
    return;
  }
  const before = await snapshotDb(t);
  const out: CallOutcome = await call();
  expect(out, `${c.id}: ${JSON.stringify(out)}`).toMatchObject({ ok: false, code: 7, reason: want.reason });
  expect(await snapshotDb(t), `${c.id}: the database changed`).toBe(before);
}

describe("authorization matrix", () => {
  it("covers every scoped IAM method, and every variant names a method that exists", () => {
    const missing = METHODS.filter((m) => !VARIANTS[m.key]?.length).map((m) => m.key);
    expect(missing).toEqual([]);
    const known = new Set(METHODS.map((m) => m.key));
    expect(Object.keys(VARIANTS).filter((k) => !known.has(k))).toEqual([]);
    // The matrix is not vacuous: each role is allowed somewhere and refused somewhere.
    for (const role of ROLES) {
      const outcomes = new Set(CASES.filter((c) => c.role === role && c.m.plan.kind !== "list").map((c) => expected(c).allowed));
      expect([...outcomes].sort(), role.name).toEqual([false, true]);
    }
  });

  const restDoor = callDoors.find((d) => d.name === "rest") as CallDoor;
  it(`the full matrix over ${restDoor.name}`, { timeout: 180_000 }, async () => {
    for (const c of CASES) await runCase(restDoor, c);
  });

  callDoors.forEach((door, i) => {
    if (door === restDoor) return;
    it(`a seeded sample over ${door.name}`, { timeout: 60_000 }, async () => {
      for (const c of sample(CASES, SAMPLE_PER_DOOR, SEED + i)) await runCase(door, c);
    });
  });
});
