/**
 * Down-scoped tokens (docs/auth.md "Down-scoping"): `cap` and `scopes` of a token exchange
 * give a token worth exactly "capabilities ∩ requested at groups ∩ requested", on every
 * exchange door (gRPC, Connect, gRPC-web, REST GET and form POST), and authorization honours
 * the reduction on every API door (the four RPC transports and REST) for every kind of
 * method: scoped Gets and writes, Lists (visible groups narrowed), anti-escalation (a
 * reduced token grants only what it holds after reduction) and the methods about the caller.
 */
import { decodeJwt } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Groups } from "../../gen/chainguard/platform/iam/groups_v1_pb.js";
import { GroupsService } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { IdentitiesService } from "../../gen/chainguard/platform/iam/v2beta1/identities_pb.js";
import { RoleBindingsService } from "../../gen/chainguard/platform/iam/v2beta1/role_bindings_pb.js";
import { SecurityTokenService } from "../../gen/chainguard/platform/oidc/oidc_pb.js";
import { Registry } from "../../gen/chainguard/platform/registry/registry_v1_pb.js";
import { CAP_CLAIM, SCOPES_CLAIM } from "../../src/auth/token-limits.js";
import { builtInRoleUid } from "../../src/store/builtin-roles.js";
import { userIdentityUid } from "../../src/store/identities.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { callDoors } from "../support/call-method.js";
import { snapshotDb } from "../support/db.js";
import { startTestIdp, type TestIdp } from "../support/idp.js";
import { rest } from "../support/rest.js";
import { exchangeDoors } from "../support/exchange-doors.js";
import { closeGrpcClients } from "../support/transports.js";

const CLIENT_ID = "trellis-cli";
const SUBJECT = "alice";

let t: TestApp;
let idp: TestIdp;
let org: string;
let alpha: string;
let alphaChild: string;
let beta: string;
let lister: string; // custom role at org: groups.list only
let user: string;

async function op(method: string, path: string, body?: unknown) {
  const r = await rest(t.url, method, path, body);
  if (r.status !== 200) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

beforeAll(async () => {
  idp = await startTestIdp();
  t = await startTestApp({ trust: { identityProviders: [{ issuer: idp.issuer, users: true, clientId: CLIENT_ID }] } });
  org = (await op("POST", "/iam/v2beta1/groups", { name: "acme" })).uid;
  alpha = (await op("POST", `/iam/v2beta1/groups/${org}`, { name: "alpha" })).uid;
  alphaChild = (await op("POST", `/iam/v2beta1/groups/${alpha}`, { name: "alpha-child" })).uid;
  beta = (await op("POST", `/iam/v2beta1/groups/${org}`, { name: "beta" })).uid;
  lister = (await op("POST", `/iam/v2beta1/roles/${org}`, { name: "lister", capabilities: ["CAP_IAM_GROUPS_LIST"] })).uid;
  // alice signs in once (creating her user identity) and is bound owner of the organization.
  user = userIdentityUid(idp.issuer, SUBJECT);
  const first = await exchangeRest(await aliceToken(), new URLSearchParams({ aud: t.app.issuer.audience }));
  expect(first.status, JSON.stringify(first.body)).toBe(200);
  await op("POST", `/iam/v2beta1/roleBindings/${org}`, { identityUid: user, roleUid: builtInRoleUid("owner") });
});
afterAll(async () => {
  closeGrpcClients();
  await t?.close();
  await idp?.close();
});

function aliceToken() {
  return idp.sign({ sub: SUBJECT, aud: CLIENT_ID });
}

function exchangeRest(presented: string, q: URLSearchParams) {
  return rest(t.url, "GET", `/sts/exchange?${q}`, undefined, { authorization: `Bearer ${presented}` });
}

interface Asked {
  readonly cap?: string[];
  readonly scopes?: string[];
  readonly scope?: string;
}
type Result = { token: string } | { code: number; reason?: string; field?: string };

/** Exchange asking for a reduction, on each of its doors (test/support/exchange-doors.ts). */
const scopedDoors = exchangeDoors.map((door) => ({
  name: door.name,
  async exchange(presented: string, asked: Asked): Promise<Result> {
    const out = await door.call(t.url, presented, SecurityTokenService.method.exchange, {
      aud: [t.app.issuer.audience],
      cap: asked.cap ?? [],
      scopes: asked.scopes ?? [],
      scope: asked.scope ?? "",
    });
    if (out.ok) return { token: String(out.body.token) };
    return { code: out.code, reason: out.reason, field: out.fields[0] };
  },
}));

function tokenOf(r: Result): string {
  if (!("token" in r)) throw new Error(`exchange refused: ${JSON.stringify(r)}`);
  return r.token;
}

describe.each(scopedDoors)("exchange with cap/scopes over $name", (door) => {
  it("mints exactly the reduction asked for, and the token is worth only that", async () => {
    const token = tokenOf(await door.exchange(await aliceToken(), { cap: ["groups.list", "groups.list"], scopes: [alpha] }));
    const claims = decodeJwt(token);
    expect(claims[CAP_CLAIM]).toEqual(["groups.list"]);
    expect(claims[SCOPES_CLAIM]).toEqual([alpha]);
    const listed = await rest(t.url, "GET", "/iam/v2beta1/groups", undefined, { authorization: `Bearer ${token}` });
    expect(listed.body.groups.map((g: { uid: string }) => g.uid).sort()).toEqual([alpha, alphaChild].sort());
    const other = await rest(t.url, "GET", `/iam/v2beta1/groups/${beta}`, undefined, { authorization: `Bearer ${token}` });
    expect(other.status).toBe(403);
  });

  it("resolves a group name, and takes the union of scope and scopes", async () => {
    const token = tokenOf(await door.exchange(await aliceToken(), { scope: "beta", scopes: ["alpha-child"] }));
    const claims = decodeJwt(token);
    expect(claims[CAP_CLAIM]).toBeUndefined();
    expect(claims[SCOPES_CLAIM]).toEqual([alphaChild, beta].sort());
  });

  it("without cap or scopes the token carries no reduction", async () => {
    const claims = decodeJwt(tokenOf(await door.exchange(await aliceToken(), {})));
    expect(claims[CAP_CLAIM]).toBeUndefined();
    expect(claims[SCOPES_CLAIM]).toBeUndefined();
  });

  it("an unknown capability, a malformed scope or a name that names no group is INVALID_ARGUMENT, changing nothing", async () => {
    const before = await snapshotDb(t);
    const presented = await aliceToken();
    expect(await door.exchange(presented, { cap: ["groups.list", "groups.own"] })).toMatchObject({ code: 3, reason: "INVALID_ARGUMENT", field: "cap" });
    expect(await door.exchange(presented, { cap: ["CAP_IAM_GROUPS_LIST"] })).toMatchObject({ code: 3, field: "cap" });
    expect(await door.exchange(presented, { scopes: [`${org}/XYZ`] })).toMatchObject({ code: 3, field: "scopes" });
    expect(await door.exchange(presented, { scopes: ["no-such-group"] })).toMatchObject({ code: 3, field: "scopes" });
    // A brand-new user with a bad scope is not created either.
    const newcomer = await idp.sign({ sub: `newcomer-${door.name.replace(/[^a-z]/g, "")}`, aud: CLIENT_ID });
    expect(await door.exchange(newcomer, { scopes: ["alpha"] })).toMatchObject({ code: 3, field: "scopes" });
    expect(await snapshotDb(t)).toBe(before);
  });

  it("a blank cap, scopes or scope is INVALID_ARGUMENT naming the field, never a token without reduction", async () => {
    const before = await snapshotDb(t);
    const presented = await aliceToken();
    // Each parses to nothing: read as "not asked", it once gave a token worth the whole identity.
    for (const cap of [[""], [" "], [",,"], [" , "], ["groups.list,"], ["groups.list", ""], [",groups.list"]]) {
      expect(await door.exchange(presented, { cap }), JSON.stringify(cap)).toMatchObject({ code: 3, reason: "INVALID_ARGUMENT", field: "cap" });
    }
    for (const scopes of [[""], [" "], [",,"], [`${alpha},`]]) {
      expect(await door.exchange(presented, { scopes }), JSON.stringify(scopes)).toMatchObject({ code: 3, field: "scopes" });
    }
    for (const scope of [" ", ",", `${alpha},,`]) {
      expect(await door.exchange(presented, { scope }), JSON.stringify(scope)).toMatchObject({ code: 3, field: "scope" });
    }
    expect(await snapshotDb(t)).toBe(before);
    // Spaces around real names are fine.
    expect(decodeJwt(tokenOf(await door.exchange(presented, { cap: [" groups.list , roles.list"] })))[CAP_CLAIM]).toEqual(["groups.list", "roles.list"]);
  });
});

describe("a down-scoped token on every API door", () => {
  let listOnly: string; // cap groups.list, scopes alpha
  let granter: string; // cap role_bindings.create + groups.list, scopes alpha
  beforeAll(async () => {
    listOnly = tokenOf(await scopedDoors[4]!.exchange(await aliceToken(), { cap: ["groups.list"], scopes: [alpha] }));
    granter = tokenOf(await scopedDoors[4]!.exchange(await aliceToken(), { cap: ["role_bindings.create", "groups.list"], scopes: [alpha] }));
  });

  describe.each(callDoors)("over $name", (door) => {
    it("scoped reads and writes: only the requested capabilities, only inside the requested groups", async () => {
      expect(await door.call(t.url, listOnly, GroupsService.method.getGroup, { uid: alpha })).toMatchObject({ ok: true });
      expect(await door.call(t.url, listOnly, GroupsService.method.getGroup, { uid: alphaChild })).toMatchObject({ ok: true });
      // The identity is owner at org, but the token was scoped to alpha.
      expect(await door.call(t.url, listOnly, GroupsService.method.getGroup, { uid: org })).toMatchObject({ ok: false, code: 7 });
      expect(await door.call(t.url, listOnly, GroupsService.method.getGroup, { uid: beta })).toMatchObject({ ok: false, code: 7 });
      // Owner holds groups.create at alpha; the token was reduced to groups.list.
      const before = await snapshotDb(t);
      expect(await door.call(t.url, listOnly, GroupsService.method.createGroup, { parent: alpha, group: { name: "nope" } })).toMatchObject({
        ok: false,
        code: 7,
      });
      expect(await door.call(t.url, listOnly, GroupsService.method.deleteGroup, { uid: alphaChild })).toMatchObject({ ok: false, code: 7 });
      expect(await snapshotDb(t)).toBe(before);
    });

    it("Lists see only the requested groups, and only with a requested capability", async () => {
      const listed = await door.call(t.url, listOnly, GroupsService.method.listGroups, {});
      expect(listed.ok).toBe(true);
      const uids = ((listed as { body: { groups?: { uid: string }[] } }).body.groups ?? []).map((g) => g.uid).sort();
      expect(uids).toEqual([alpha, alphaChild].sort());
      // Owner may list identities at org; this token holds no identity.list.
      const ids = await door.call(t.url, listOnly, IdentitiesService.method.listIdentities, {});
      expect(ids).toMatchObject({ ok: true });
      expect((ids as { body: { identities?: unknown[] } }).body.identities ?? []).toEqual([]);
      // The v1 List too.
      const v1 = await door.call(t.url, listOnly, Groups.method.list, {});
      expect(v1.ok, JSON.stringify(v1)).toBe(true);
      const v1Ids = ((v1 as { body: { items?: { id: string }[] } }).body.items ?? []).map((g) => g.id).sort();
      expect(v1Ids).toEqual([alpha, alphaChild].sort());
      // Naming the organization above the scope lists what the token sees under it, counted as such.
      const under = await door.call(t.url, listOnly, GroupsService.method.listGroups, { uidp: { descendantsOf: org } });
      expect(under).toMatchObject({ ok: true, body: { totalCount: "2" } });
      expect(((under as { body: { groups?: { uid: string }[] } }).body.groups ?? []).map((g) => g.uid).sort()).toEqual([alpha, alphaChild].sort());
      // Naming a group beside the scopes, where the token sees nothing at, above or below, is refused.
      expect(await door.call(t.url, listOnly, GroupsService.method.listGroups, { uidp: { descendantsOf: beta } })).toMatchObject({ ok: false, code: 7 });
    });

    it("anti-escalation: a reduced token grants only what it holds after reduction", async () => {
      const robot = (
        await op("POST", `/iam/v2beta1/identities/${org}`, {
          name: `robot ${door.name.replace(/[^a-z]/g, "")}`,
          claimMatch: { issuer: idp.issuer, subject: `robot-${door.name}` },
        })
      ).uid;
      const before = await snapshotDb(t);
      // viewer holds more than groups.list: granting it would hand out what the token lacks.
      const viewer = await door.call(t.url, granter, RoleBindingsService.method.createRoleBinding, {
        parent: alpha,
        roleBinding: { identityUid: robot, roleUid: builtInRoleUid("viewer") },
      });
      expect(viewer).toMatchObject({ ok: false, code: 7, reason: "PRIVILEGE_ESCALATION" });
      // Outside the scopes the token holds no role_bindings.create at all.
      const outside = await door.call(t.url, granter, RoleBindingsService.method.createRoleBinding, {
        parent: beta,
        roleBinding: { identityUid: robot, roleUid: lister },
      });
      expect(outside).toMatchObject({ ok: false, code: 7 });
      expect(await snapshotDb(t)).toBe(before);
      // A role made only of what the token holds can be granted, inside the scopes.
      const ok = await door.call(t.url, granter, RoleBindingsService.method.createRoleBinding, {
        parent: alpha,
        roleBinding: { identityUid: robot, roleUid: lister },
      });
      expect(ok, JSON.stringify(ok)).toMatchObject({ ok: true });
    });

    it("v1 CreateRepo replaces an existing repo only if the reduction keeps repo.update", async () => {
      // The identity is owner (it holds repo.update); the token was reduced to repo.create.
      const name = `kept-${door.name.replace(/[^a-z]/g, "")}`;
      const existing = (await op("POST", `/registry/v2beta1/repos/${alpha}`, { name, bundles: ["application"] })).uid;
      const creator = tokenOf(await scopedDoors[4]!.exchange(await aliceToken(), { cap: ["repo.create"], scopes: [alpha] }));
      const before = await snapshotDb(t);
      const replaced = await door.call(t.url, creator, Registry.method.createRepo, { parentId: alpha, repo: { name, description: "hijacked" } });
      expect(replaced).toMatchObject({ ok: false, code: 7 });
      expect(await snapshotDb(t)).toBe(before);
      const both = tokenOf(await scopedDoors[4]!.exchange(await aliceToken(), { cap: ["repo.create", "repo.update"], scopes: [alpha] }));
      const updated = await door.call(t.url, both, Registry.method.createRepo, { parentId: alpha, repo: { name, description: "updated" } });
      expect(updated, JSON.stringify(updated)).toMatchObject({ ok: true, body: { id: existing, description: "updated" } });
    });

    it("methods about the caller: reads answer, writes and founding an organization are refused", async () => {
      expect(await door.call(t.url, listOnly, IdentitiesService.method.lookupIdentity, { issuer: idp.issuer, subject: SUBJECT })).toMatchObject({ ok: true });
      const before = await snapshotDb(t);
      expect(await door.call(t.url, listOnly, IdentitiesService.method.updateIdentityMetadata, { identityMetadata: { company: "evil" } })).toMatchObject({
        ok: false,
        code: 7,
        reason: "TOKEN_DOWN_SCOPED",
      });
      expect(await door.call(t.url, listOnly, GroupsService.method.createGroup, { parent: "", group: { name: "side-org" } })).toMatchObject({
        ok: false,
        code: 7,
        reason: "TOKEN_DOWN_SCOPED",
      });
      expect(await door.call(t.url, listOnly, Groups.method.create, { parent: "", group: { name: "side-org-v1" } })).toMatchObject({
        ok: false,
        code: 7,
        reason: "TOKEN_DOWN_SCOPED",
      });
      expect(await snapshotDb(t)).toBe(before);
    });
  });
});

describe("down-scoping claims", () => {
  it("a token whose reduction claims are malformed is refused, never read as unreduced", async () => {
    for (const claims of [{ [CAP_CLAIM]: ["groups.own"] }, { [CAP_CLAIM]: "groups.list" }, { [SCOPES_CLAIM]: ["not a uidp"] }]) {
      const token = await t.app.issuer.mint({ subject: user, audience: t.app.issuer.audience, ttlSeconds: 600, claims });
      const r = await rest(t.url, "GET", `/iam/v2beta1/groups/${alpha}`, undefined, { authorization: `Bearer ${token}` });
      expect(r.status).toBe(401);
      expect(r.body.details[0].reason).toBe("TOKEN_INVALID");
    }
  });
});
