/**
 * The authorization plans read from the descriptors: every method of the served surface gets
 * a plan (none falls back to operator-only), and the special shapes of docs/published-api.md "Authorization annotations" land
 * where they should.
 */
import { describe, expect, it } from "vitest";
import { Capability } from "../../../gen/chainguard/capabilities/capabilities_pb.js";
import { holdsAt, visibleGroups } from "../../../src/auth/authorize.js";
import { buildPlans, type MethodPlan, readPath } from "../../../src/auth/iam-plan.js";
import { apiServices } from "../../../src/server/routes.js";

const services = apiServices({ store: {} } as never).map((s) => s.service);
const plans = buildPlans(services);
const planOf = (service: string, method: string): MethodPlan => {
  const m = services.find((s) => s.typeName.endsWith(service))?.methods.find((x) => x.name === method);
  if (!m) throw new Error(`no ${service}/${method}`);
  return plans.get(m) as MethodPlan;
};

describe("IAM plans from the descriptors", () => {
  it("every served method has a plan other than operator-only", () => {
    const failing = [...plans].filter(([, p]) => p.kind === "operatorOnly").map(([m]) => `${m.parent.typeName}/${m.name}`);
    expect(failing).toEqual([]);
  });

  it("scoped methods find their scope field, nested for Update", () => {
    const get = planOf("v2beta1.GroupsService", "GetGroup");
    expect(get.kind === "scoped" && get.scopePath.map((f) => f.name)).toEqual(["uid"]);
    const update = planOf("v2beta1.GroupsService", "UpdateGroup");
    expect(update.kind === "scoped" && update.scopePath.map((f) => f.name)).toEqual(["group", "uid"]);
    const createIdentity = planOf("v2beta1.IdentitiesService", "CreateIdentity");
    expect(createIdentity.kind === "scoped" && createIdentity.scopePath.map((f) => f.name)).toEqual(["parent"]);
    const idp = planOf("v2beta1.IdentityProvidersService", "CreateIdentityProvider");
    expect(idp.kind === "scoped" && idp.capabilities).toEqual([Capability.CAP_IAM_IDENTITY_PROVIDERS_CREATE, Capability.CAP_IAM_ROLE_BINDINGS_CREATE]);
  });

  it("the unscoped shapes: Lists, group creation, GetRole, caller-only methods, the exchange", () => {
    expect(planOf("v2beta1.GroupsService", "ListGroups").kind).toBe("list");
    expect(planOf("v2beta1.RolesService", "ListRoles").kind).toBe("list");
    expect(planOf("v2beta1.GroupsService", "CreateGroup").kind).toBe("create");
    expect(planOf("iam.Groups", "Create").kind).toBe("create");
    expect(planOf("v2beta1.RolesService", "GetRole").kind).toBe("getRole");
    expect(planOf("v2beta1.IdentitiesService", "LookupIdentity").kind).toBe("authenticated");
    expect(planOf("oidc.SecurityTokenService", "Exchange").kind).toBe("disabled");
  });

  it("an unscoped method over a UIDPFilter is planned as a List; one naming no group needs the rights somewhere", () => {
    // v1 GetBuildStatus sums build reports over the filtered tree: it sees what a List would.
    const status = planOf("registry.Registry", "GetBuildStatus");
    expect(status.kind === "list" && status.namedScopes.map((p) => p.map((f) => f.name).join("."))).toEqual(["uidp.descendants_of", "uidp.children_of"]);
    // v1 GetPackageVersionMetadata is about public packages, not about any group.
    const versions = planOf("registry.Registry", "GetPackageVersionMetadata");
    expect(versions).toEqual({ kind: "anywhere", capabilities: [Capability.CAP_VERSION_LIST] });
  });

  it("readPath follows nested messages and treats unset as empty", () => {
    const update = planOf("v2beta1.GroupsService", "UpdateGroup");
    if (update.kind !== "scoped") throw new Error("not scoped");
    expect(readPath({ group: { uid: "abc" } }, update.scopePath)).toBe("abc");
    expect(readPath({}, update.scopePath)).toBe("");
  });
});

describe("capabilities over the tree", () => {
  const A = "a".repeat(40);
  const grants = [
    { groupUid: A, capabilities: [1] },
    { groupUid: `${A}/1111111111111111`, capabilities: [2] },
    { groupUid: `${A}/2222222222222222`, capabilities: [1, 2] },
  ];
  it("a binding grants at its group and below, never above or beside", () => {
    expect(holdsAt(grants, `${A}/1111111111111111/3333333333333333`, [1, 2])).toBe(true); // 1 from A, 2 from A/1
    expect(holdsAt(grants, A, [2])).toBe(false);
    expect(holdsAt(grants, `${A}/4444444444444444`, [2])).toBe(false);
    expect(holdsAt(grants, "b".repeat(40), [1])).toBe(false);
    expect(holdsAt(grants, `${A}0`, [1])).toBe(false); // a prefix that is no ancestor
  });
  it("visible groups are the qualifying bound groups, minus those under another", () => {
    expect(visibleGroups(grants, [1])).toEqual([A]);
    expect(visibleGroups(grants, [1, 2]).sort()).toEqual([`${A}/1111111111111111`, `${A}/2222222222222222`]);
    expect(visibleGroups(grants, [3])).toEqual([]);
  });
});
