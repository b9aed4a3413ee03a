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
import { type DescMethod, type DescService, getOption } from "@bufbuild/protobuf";
import { ConnectError, createClient } from "@connectrpc/connect";
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
import { http } from "../../gen/google/api/annotations_pb.js";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { buildPlans } from "../../src/auth/iam-plan.js";
import { builtInRoleUid } from "../../src/store/builtin-roles.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { createUserIdentity, identityToken } from "../support/auth.js";
import { rest } from "../support/rest.js";
import { closeGrpcClients, rpcTransports } from "../support/transports.js";

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
  plan.kind === "list" && plan.namedScopes.length > 0
    ? [{ method, filter: plan.namedScopes[0]![0]!, fields: plan.namedScopes.map((p) => p[1]!) }]
    : [],
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

type Call = (method: DescMethod, filter: string, field: string, named: string, token: string) => Promise<Outcome>;

const rpcCall = (transport: (typeof rpcTransports)[number]): Call => {
  // One transport per caller and door: a transport per call would leave an HTTP/2 session
  // open for each, and the server caps the connections one peer may hold.
  const byToken = new Map<string, ReturnType<typeof transport.create>>();
  return async (method, filter, field, named, token) => {
    let tr = byToken.get(token);
    if (!tr) {
      tr = transport.create(t.url, { token });
      byToken.set(token, tr);
    }
    const client = createClient(method.parent, tr) as unknown as Record<string, (req: unknown) => Promise<unknown>>;
    try {
      await client[method.localName]!({ [filter]: { [field]: named } });
      return { code: 0 };
    } catch (err) {
      if (!(err instanceof ConnectError)) throw err;
      return { code: err.code, reason: err.findDetails(ErrorInfoSchema)[0]?.reason };
    }
  };
};

/** The List's GET path from its google.api.http rule (no path variables on a List). */
function restPath(method: DescMethod): string {
  const rule = getOption(method, http);
  if (rule.pattern.case !== "get" || rule.pattern.value.includes("{")) throw new Error(`${method.name}: not a plain GET rule`);
  return rule.pattern.value;
}

const restCall: Call = async (method, filter, field, named, token) => {
  const r = await rest(t.url, "GET", `${restPath(method)}?${filter}.${field}=${named}`, undefined, { authorization: `Bearer ${token}` });
  if (r.status === 200) return { code: 0 };
  expect([403, 501], JSON.stringify(r.body)).toContain(r.status);
  return { code: r.body.code, reason: r.body.details?.[0]?.reason };
};

/** What a method that cannot be served answers once authorization has let the call through. */
const PAST_AUTHORIZATION: Outcome = { code: 12, reason: "UNIMPLEMENTED" };

const DOORS: { name: string; call: Call }[] = [
  ...rpcTransports.map((tr) => ({ name: tr.name, call: rpcCall(tr) })),
  { name: "rest", call: restCall },
];

describe("Lists narrowed to a group the caller cannot see", () => {
  it("covers every List with a UIDPFilter (13 today), each with descendants_of and children_of", () => {
    expect(LISTS.length).toBeGreaterThanOrEqual(13);
    for (const l of LISTS) expect(l.fields.map((f) => f.name).sort()).toEqual(["children_of", "descendants_of"]);
  });

  describe.each(DOORS)("over $name", (door) => {
    it.each(LISTS.map((l) => ({ ...l, name: `${l.method.parent.name}.${l.method.name}` })))("$name", async ({ method, filter, fields }) => {
      for (const f of fields) {
        // REST takes the proto names in the query; the RPC clients take the local names.
        const [filterName, fieldName] = door.name === "rest" ? [filter.name, f.name] : [filter.localName, f.localName];
        const call = (named: string, token: string) => door.call(method, filterName, fieldName, named, token);
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
