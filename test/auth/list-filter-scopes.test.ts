/**
 * A List narrowed by its UIDPFilter to a group (`uidp.descendants_of`, `uidp.children_of`)
 * answers like a Get on that group: PERMISSION_DENIED when the caller cannot see it, instead
 * of an empty list. Every List with a UIDPFilter (found from the descriptors, as authorization
 * finds them, so a new List is covered without editing this file), both fields, on every door.
 *
 *   A ─ A1 ─ A2      alice: owner at A      carol: owner at A1 (rights only below A)
 *   B                dave: no bindings      the operator: everything
 *
 * - alice names B (another tenant), an unknown uid under B and an unknown root: 403;
 * - carol names A, the group above her binding: 403, as GetGroup(A) is for her;
 * - dave names A: 403;
 * - alice names A and A1 (rights at the group or an ancestor), carol names A1 and A2, the
 *   operator names B: served, or UNIMPLEMENTED for a method Trellis cannot answer (the v1
 *   ListEolTags, ListBuildReports, GetBuildStatus): that answer is made by the method after
 *   authorization let the call through, so it proves the same thing as a served call.
 */
import type { DescMethod, DescMethodUnary, DescService } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Groups as GroupsV1 } from "../../gen/chainguard/platform/iam/groups_v1_pb.js";
import { AccountAssociationsService } from "../../gen/chainguard/platform/iam/v2beta1/account_associations_pb.js";
import { GroupInvitesService } from "../../gen/chainguard/platform/iam/v2beta1/group_invites_pb.js";
import { GroupsService } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { IdentitiesService } from "../../gen/chainguard/platform/iam/v2beta1/identities_pb.js";
import { IdentityProvidersService } from "../../gen/chainguard/platform/iam/v2beta1/identity_providers_pb.js";
import { RoleBindingsService } from "../../gen/chainguard/platform/iam/v2beta1/role_bindings_pb.js";
import { RolesService } from "../../gen/chainguard/platform/iam/v2beta1/roles_pb.js";
import { Registry as RegistryV1 } from "../../gen/chainguard/platform/registry/registry_v1_pb.js";
import { ReposService } from "../../gen/chainguard/platform/registry/v2beta1/repos_pb.js";
import { TagsService } from "../../gen/chainguard/platform/registry/v2beta1/tags_pb.js";
import { AdvisoriesService } from "../../gen/chainguard/platform/vulnerabilities/v2beta1/advisories_pb.js";
import { buildPlans } from "../../src/auth/iam-plan.js";
import { builtInRoleUid } from "../../src/store/builtin-roles.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { createUserIdentity, identityToken } from "../support/auth.js";
import { rest } from "../support/rest.js";
import { type CallDoor, callDoors } from "../support/call-method.js";
import { closeGrpcClients } from "../support/transports.js";

const SERVICES: DescService[] = [
  GroupsService,
  IdentitiesService,
  RolesService,
  RoleBindingsService,
  IdentityProvidersService,
  AccountAssociationsService,
  GroupInvitesService,
  ReposService,
  TagsService,
  AdvisoriesService,
  GroupsV1,
  RegistryV1,
];

/** Every List whose request has a UIDPFilter, with the JSON/proto names of the fields that name a group. */
const LISTS = [...buildPlans(SERVICES)].flatMap(([method, plan]) =>
  plan.kind === "list" && plan.namedScopes.length > 0 ? [{ method, filter: plan.namedScopes[0]![0]!, fields: plan.namedScopes.map((p) => p[1]!) }] : [],
);

let t: TestApp;
const tree = { A: "", A1: "", A2: "", B: "" };
const tokens = { alice: "", carol: "", dave: "" };

beforeAll(async () => {
  t = await startTestApp();
  const op = async (path: string, body: unknown) => {
    const r = await rest(t.url, "POST", path, body);
    if (r.status !== 200) throw new Error(`${path}: ${JSON.stringify(r.body)}`);
    return r.body;
  };
  tree.A = (await op("/iam/v2beta1/groups", { name: "tenant-a" })).uid;
  tree.A1 = (await op(`/iam/v2beta1/groups/${tree.A}`, { name: "aa1" })).uid;
  tree.A2 = (await op(`/iam/v2beta1/groups/${tree.A1}`, { name: "aa2" })).uid;
  tree.B = (await op("/iam/v2beta1/groups", { name: "tenant-b" })).uid;
  for (const [name, at] of [
    ["alice", tree.A],
    ["carol", tree.A1],
    ["dave", undefined],
  ] as const) {
    const uid = await createUserIdentity(t.dataDir, name);
    if (at) await op(`/iam/v2beta1/roleBindings/${at}`, { identityUid: uid, roleUid: builtInRoleUid("owner") });
    tokens[name] = await identityToken(t.app, uid);
  }
});
afterAll(async () => {
  closeGrpcClients();
  await t?.close();
});

interface Outcome {
  readonly code: number;
  readonly reason?: string;
}

/** One List narrowed to `named` by `filter.field`, on one door (test/support/call-method.ts). */
const callOn =
  (door: CallDoor) =>
  async (method: DescMethod, filter: string, field: string, named: string, token: string): Promise<Outcome> => {
    const out = await door.call(t.url, token, method as DescMethodUnary, { [filter]: { [field]: named } });
    return out.ok ? { code: 0 } : { code: out.code, reason: out.reason };
  };

/** What a method that cannot be served answers once authorization has let the call through. */
const PAST_AUTHORIZATION: Outcome = { code: 12, reason: "UNIMPLEMENTED" };

const DOORS = callDoors.map((door) => ({ name: door.name, call: callOn(door) }));

describe("Lists narrowed to a group the caller cannot see", () => {
  it("covers every List with a UIDPFilter (13 today), each with descendants_of and children_of", () => {
    expect(LISTS.length).toBeGreaterThanOrEqual(13);
    for (const l of LISTS) expect(l.fields.map((f) => f.name).sort()).toEqual(["children_of", "descendants_of"]);
  });

  describe.each(DOORS)("over $name", (door) => {
    it.each(LISTS.map((l) => ({ ...l, name: `${l.method.parent.name}.${l.method.name}` })))("$name", async ({ method, filter, fields }) => {
      for (const f of fields) {
        // The request as a client builds it (local names); the REST door lays it out in the query.
        const call = (named: string, token: string) => door.call(method, filter.localName, f.localName, named, token);
        const where = `${method.name} ${f.name}`;
        for (const [named, token, who] of [
          [tree.B, tokens.alice, "alice → B"],
          [`${tree.B}/0123456789abcdef`, tokens.alice, "alice → unknown under B"],
          ["0".repeat(40), tokens.alice, "alice → unknown root"],
          [tree.A, tokens.carol, "carol → A (above her binding)"],
          [tree.A, tokens.dave, "dave → A"],
        ] as const) {
          expect(await call(named, token), `${where}: ${who}`).toEqual({ code: 7, reason: "PERMISSION_DENIED" });
        }
        for (const [named, token, who] of [
          [tree.A, tokens.alice, "alice → A"],
          [tree.A1, tokens.alice, "alice → A1 (rights at an ancestor)"],
          [tree.A1, tokens.carol, "carol → A1"],
          [tree.A2, tokens.carol, "carol → A2"],
          [tree.B, t.token, "operator → B"],
        ] as const) {
          expect([{ code: 0 }, PAST_AUTHORIZATION], `${where}: ${who}`).toContainEqual(await call(named, token));
        }
      }
    });
  });
});
