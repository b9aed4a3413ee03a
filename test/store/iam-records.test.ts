/**
 * The IAM repositories that have no suite of their own elsewhere (group access requests,
 * identity providers and their SCIM state, account associations, refresh tokens, token
 * revocations), on every engine through StoreEngine: the records they return (times in ms as
 * given), the order of a List (bytewise, so on PostgreSQL the columns' COLLATE "C" shows), and
 * every error's code, message, reason and details, written out here so that each engine must
 * give exactly these. What several replicas racing each other do is in
 * test/postgres/iam-records.test.ts.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ApiError } from "../../src/errors/api-error.js";
import { builtInRoleUid } from "../../src/store/builtin-roles.js";
import type { StoreRepositories } from "../../src/store/engine.js";
import type { NewIdentityProvider } from "../../src/store/identity-providers.js";
import type { NewRefreshToken } from "../../src/store/refresh-tokens.js";
import { parseStored, REVOCATIONS_NAME } from "../../src/store/token-revocations.js";
import { rejectionShape } from "../support/store-answers.js";
import { ENGINES, type OpenedEngine } from "../support/engines.js";

/** Milliseconds that a second-precision or microsecond store would change. */
const NOW = 1_800_000_000_123;
const HOUR = 60 * 60 * 1000;
const VIEWER = builtInRoleUid("viewer");
const OWNER = builtInRoleUid("owner");
const MISSING_GROUP = "f".repeat(40);

const notFoundShape = (resourceType: string, resourceName: string) => ({
  code: 5,
  message: `Not found: ${resourceType} ${JSON.stringify(resourceName)}`,
  reason: "NOT_FOUND",
  metadata: { resource_type: resourceType, resource_name: resourceName },
  fieldViolations: [],
  preconditionViolations: [],
  resourceInfo: { resourceType, resourceName },
});

describe.each(ENGINES)("IAM records on $name", (engineUnderTest) => {
  let opened: OpenedEngine;
  let r: StoreRepositories;
  let org: string;
  let alice: string;

  beforeEach(async () => {
    opened = await engineUnderTest.open(NOW);
    r = opened.engine.repositories;
    alice = (await r.identities.findOrCreateUser({ issuer: "https://idp.example", subject: "alice", name: "Alice", email: "alice@example.com" }, NOW)).uid;
    org = (await r.groups.create({ parentUid: null, name: "org", description: "", verified: true, kind: 0 }, NOW, alice)).uid;
  });
  afterEach(async () => {
    await opened.close();
  });

  describe("group access requests", () => {
    it("records a request once: a repeat is RESOURCE_EXHAUSTED, an unknown group or identity NOT_FOUND, in that order", async () => {
      expect(await r.groupAccessRequests.has(org, alice)).toBe(false);
      await r.groupAccessRequests.record(org, alice, NOW);
      expect(await r.groupAccessRequests.has(org, alice)).toBe(true);
      expect(await rejectionShape(r.groupAccessRequests.record(org, alice, NOW + 1))).toEqual({
        code: 8,
        message: "Resource exhausted: access to this group was already requested",
        reason: "RESOURCE_EXHAUSTED",
        metadata: {},
        fieldViolations: [],
        preconditionViolations: [],
        resourceInfo: undefined,
      });
      expect(await rejectionShape(r.groupAccessRequests.record(MISSING_GROUP, "nobody", NOW))).toEqual(notFoundShape("group", MISSING_GROUP));
      expect(await rejectionShape(r.groupAccessRequests.record(org, "nobody", NOW))).toEqual(notFoundShape("identity", "nobody"));
      expect(await r.groupAccessRequests.has(org, "nobody")).toBe(false);
    });
  });

  describe("identity providers", () => {
    const provider = (parentUid: string, name: string, defaultRole = VIEWER): NewIdentityProvider => ({
      parentUid,
      name,
      description: `provider ${name}`,
      defaultRole,
      oidc: {
        issuer: "https://login.example",
        clientId: "client",
        clientSecret: "s3cret",
        additionalScopes: ["email"],
        groupsClaim: "groups",
        pkceEnabled: true,
        correlationRule: 1,
      },
    });

    it("keeps the client secret inside: records say only that there is one, clientSecret reads it, an update without one keeps it", async () => {
      const created = await r.identityProviders.create(provider(org, "corp"), NOW);
      expect(created).toEqual({
        uid: expect.stringMatching(new RegExp(`^${org}/[0-9a-f]{16}$`)),
        parentUid: org,
        name: "corp",
        description: "provider corp",
        defaultRole: VIEWER,
        oidc: {
          issuer: "https://login.example",
          clientId: "client",
          additionalScopes: ["email"],
          groupsClaim: "groups",
          pkceEnabled: true,
          correlationRule: 1,
          hasClientSecret: true,
        },
        createTime: NOW,
        updateTime: NOW,
      });
      expect(JSON.stringify(await r.identityProviders.list({ uidp: {} }, { order: "uid", desc: false, offset: 0, limit: 10 }))).not.toContain("s3cret");
      expect(await r.identityProviders.get(created.uid)).toEqual(created);
      expect(await r.identityProviders.clientSecret(created.uid)).toBe("s3cret");
      const { hasClientSecret: _, ...settings } = created.oidc;
      const updated = await r.identityProviders.update(created.uid, () => ({ name: "renamed", oidc: { ...settings, clientId: "other" } }), NOW + 7);
      expect(updated).toEqual({ ...created, name: "renamed", oidc: { ...created.oidc, clientId: "other" }, updateTime: NOW + 7 });
      expect(await r.identityProviders.clientSecret(created.uid)).toBe("s3cret");
      await r.identityProviders.update(created.uid, () => ({ oidc: { ...settings, clientSecret: "" } }), NOW + 8);
      expect((await r.identityProviders.get(created.uid))?.oidc.hasClientSecret).toBe(false);
      expect(await r.identityProviders.clientSecret("nothing")).toBeUndefined();
    });

    it("refuses a missing group, a default role that cannot be granted there, and a missing provider, with SQLite's errors", async () => {
      const otherOrg = (await r.groups.create({ parentUid: null, name: "other", description: "", verified: false, kind: 0 }, NOW)).uid;
      const foreignRole = (await r.roles.create({ parentUid: otherOrg, name: "foreign", description: "", capabilities: [103] }, NOW)).uid;
      expect(await rejectionShape(r.identityProviders.create(provider(MISSING_GROUP, "x"), NOW))).toEqual(notFoundShape("group", MISSING_GROUP));
      const roleError = {
        code: 3,
        message: "Invalid argument: default_role: must name a built-in role or a custom role of the group or one of its ancestors",
        reason: "INVALID_ARGUMENT",
        metadata: {},
        fieldViolations: [{ field: "default_role", description: "must name a built-in role or a custom role of the group or one of its ancestors" }],
        preconditionViolations: [],
        resourceInfo: undefined,
      };
      expect(await rejectionShape(r.identityProviders.create(provider(org, "x", foreignRole), NOW))).toEqual(roleError);
      const created = await r.identityProviders.create(provider(org, "x"), NOW);
      expect(await rejectionShape(r.identityProviders.update(created.uid, () => ({ defaultRole: "no-such-role" }), NOW))).toEqual(roleError);
      expect(await rejectionShape(r.identityProviders.update("nothing", () => ({}), NOW))).toEqual(notFoundShape("identity provider", "nothing"));
      // The guard judges a changed default role inside the write; what it throws leaves the provider as it was.
      const seen: string[] = [];
      const refused = r.identityProviders.update(
        created.uid,
        () => ({ defaultRole: OWNER }),
        NOW + 1,
        (_view, groupUid, roleUid) => {
          seen.push(groupUid, roleUid);
          throw new ApiError(7, "Permission denied: no");
        },
      );
      expect(((await rejectionShape(refused)) as { code: number }).code).toBe(7);
      expect(seen).toEqual([org, OWNER]);
      expect(await r.identityProviders.get(created.uid)).toEqual(created);
      await r.identityProviders.delete(created.uid);
      expect(await rejectionShape(r.identityProviders.delete(created.uid))).toEqual(notFoundShape("identity provider", created.uid));
      // A group with a provider is not empty.
      await r.identityProviders.create(provider(org, "y"), NOW);
      const blocked = (await rejectionShape(r.groups.delete(org))) as { code: number; metadata: Record<string, string> };
      expect([blocked.code, blocked.metadata]).toEqual([9, { child_kind: "identity providers" }]);
    });

    it("lists in bytewise name order with keyset pages, and counts per filter", async () => {
      const folder = (await r.groups.create({ parentUid: org, name: "folder", description: "", verified: false, kind: 0 }, NOW)).uid;
      for (const [i, name] of ["b", "B", "_", "a", "Ä", "A"].entries()) await r.identityProviders.create(provider(i % 2 ? folder : org, name), NOW + i);
      const names = async (page: { desc: boolean; after?: { value: string; uid: string } }) =>
        (await r.identityProviders.list({ uidp: { descendantsOf: org } }, { order: "name", offset: 0, limit: 3, ...page })).map((p) => p.name);
      expect(await names({ desc: false })).toEqual(["A", "B", "_"]);
      const firstPage = await r.identityProviders.list({ uidp: {} }, { order: "name", desc: false, offset: 0, limit: 3 });
      const last = firstPage[2] as { name: string; uid: string };
      expect(await names({ desc: false, after: { value: last.name, uid: last.uid } })).toEqual(["a", "b", "Ä"]);
      expect(await names({ desc: true })).toEqual(["Ä", "b", "a"]);
      const byTime = await r.identityProviders.list({ uidp: {} }, { order: "create_time", desc: true, offset: 1, limit: 2 });
      expect(byTime.map((p) => [p.name, p.createTime])).toEqual([
        ["Ä", NOW + 4],
        ["a", NOW + 3],
      ]);
      expect(await r.identityProviders.count({ uidp: { childrenOf: folder } })).toBe(3);
      expect(await r.identityProviders.count({ uidp: {}, name: "a" })).toBe(1);
      expect(await r.identityProviders.count({ uidp: {}, within: [folder] })).toBe(3);
      expect(await r.identityProviders.count({ uidp: {}, within: [] })).toBe(0);
    });

    it("a List filter value holding NUL matches nothing and fails nothing (providers, associations, invites, bindings), as on SQLite", async () => {
      // Read methods skip the NUL rule (they store nothing), so such a value reaches the store;
      // PostgreSQL refuses NUL in any text parameter, so the filter must never bind it.
      await r.identityProviders.create(provider(org, "a"), NOW);
      await r.accountAssociations.create({ groupUid: org, name: "a", description: "", providers: {} }, NOW);
      await r.groupInvites.create({ parentUid: org, roleUid: VIEWER, email: "", singleUse: false, ttlMs: 60_000, creator: "{}" }, NOW);
      const page = { order: "uid" as const, desc: false, offset: 0, limit: 10 };
      const nul = "a\u0000";
      expect(await r.identityProviders.list({ uidp: {}, name: nul }, page)).toEqual([]);
      expect(await r.identityProviders.count({ uidp: {}, name: nul })).toBe(0);
      expect(await r.accountAssociations.list({ uidp: {}, name: nul }, page)).toEqual([]);
      expect(await r.accountAssociations.count({ uidp: {}, name: nul })).toBe(0);
      expect(await r.groupInvites.list({ uidp: {}, keyId: nul }, page)).toEqual([]);
      expect(await r.groupInvites.count({ uidp: {}, keyId: nul })).toBe(0);
      expect(await r.groupInvites.count({ uidp: {} })).toBe(1);
      for (const field of ["identityUid", "groupUid", "roleUid"] as const) {
        expect(await r.roleBindings.list({ uidp: {}, [field]: nul }, page), field).toEqual([]);
        expect(await r.roleBindings.count({ uidp: {}, [field]: nul }), field).toBe(0);
      }
      expect(await r.roleBindings.count({ uidp: {} })).toBeGreaterThan(0);
    });

    describe("SCIM state", () => {
      const allow = () => {};

      it("issues, refuses a second, rotates with an overlap, finds tokens by hash while valid, and revokes once", async () => {
        const idp = (await r.identityProviders.create(provider(org, "scim"), NOW)).uid;
        const scim = r.scimCredentials;
        expect(await scim.get(idp)).toEqual({
          enabled: false,
          hasToken: false,
          tokenExpireTime: null,
          previousTokenExpireTime: null,
          revokeTime: null,
          issued: false,
          etag: "0",
        });
        expect(await rejectionShape(scim.generate("nothing", { tokenHash: "h0", expireTime: null }, NOW, allow))).toEqual(
          notFoundShape("identity provider", "nothing"),
        );
        expect(await rejectionShape(scim.regenerate(idp, "0", { tokenHash: "h0", expireTime: null }, 0, NOW, allow))).toEqual(notFoundShape("SCIM token", idp));
        const first = await scim.generate(idp, { tokenHash: "h1", expireTime: NOW + HOUR }, NOW, allow);
        expect(first).toEqual({
          enabled: false,
          hasToken: true,
          tokenExpireTime: NOW + HOUR,
          previousTokenExpireTime: null,
          revokeTime: null,
          issued: true,
          etag: "1",
        });
        expect(await rejectionShape(scim.generate(idp, { tokenHash: "h2", expireTime: null }, NOW, allow))).toEqual({
          code: 9,
          message: "Precondition failed: the provider already has a SCIM token; use RegenerateScimToken to replace it",
          reason: "FAILED_PRECONDITION",
          metadata: { identity_provider_uid: idp },
          fieldViolations: [],
          preconditionViolations: [
            { type: "SCIM_TOKEN_EXISTS", subject: idp, description: "the provider already has a SCIM token; use RegenerateScimToken to replace it" },
          ],
          resourceInfo: undefined,
        });
        expect(await rejectionShape(scim.regenerate(idp, "0", { tokenHash: "h2", expireTime: null }, 0, NOW, allow))).toEqual({
          code: 10,
          message: "Aborted: the etag does not match the provider's current SCIM state; read it again (GetIdentityProvider) and retry",
          reason: "ETAG_MISMATCH",
          metadata: { identity_provider_uid: idp },
          fieldViolations: [],
          preconditionViolations: [],
          resourceInfo: undefined,
        });
        const rotated = await scim.regenerate(idp, "1", { tokenHash: "h2", expireTime: null }, 10 * 60 * 1000, NOW + 5, allow);
        expect(rotated).toEqual({ ...first, tokenExpireTime: null, previousTokenExpireTime: NOW + 5 + 10 * 60 * 1000, etag: "2" });
        expect(await scim.findByTokenHash("h2", NOW + 6)).toBe(idp);
        expect(await scim.findByTokenHash("h1", NOW + 6)).toBe(idp);
        expect(await scim.findByTokenHash("h1", NOW + 5 + 10 * 60 * 1000)).toBeUndefined();
        expect(await scim.findByTokenHash("h9", NOW)).toBeUndefined();
        const revoked = await scim.revoke(idp, NOW + 9);
        expect(revoked).toEqual({
          enabled: false,
          hasToken: false,
          tokenExpireTime: null,
          previousTokenExpireTime: null,
          revokeTime: NOW + 9,
          issued: true,
          etag: "3",
        });
        expect(await scim.revoke(idp, NOW + 10)).toEqual(revoked);
        expect(await scim.findByTokenHash("h2", NOW + 9)).toBeUndefined();
        expect(await scim.getMany([idp, "nothing"])).toEqual(
          new Map([
            [idp, revoked],
            ["nothing", await scim.get("nothing")],
          ]),
        );
        // The SCIM row goes with its provider.
        await r.identityProviders.delete(idp);
        expect((await scim.get(idp)).issued).toBe(false);
      });

      it("turns SCIM on only with enough owners and the current etag, running the guard on the provider", async () => {
        const idp = await r.identityProviders.create(provider(org, "scim"), NOW);
        const guarded: unknown[] = [];
        const guard = (_view: unknown, p: unknown) => {
          guarded.push(p);
        };
        expect(await rejectionShape(r.scimCredentials.setEnabled(idp.uid, true, "0", 2, NOW, guard))).toEqual({
          code: 9,
          message:
            "Precondition failed: turning SCIM on needs at least 2 identities bound owner at the organization by hand (it has 1), so provisioning cannot lock everyone out",
          reason: "FAILED_PRECONDITION",
          metadata: { group_uid: org, owners: "1" },
          fieldViolations: [],
          preconditionViolations: [
            {
              type: "SCIM_OWNERS",
              subject: org,
              description:
                "turning SCIM on needs at least 2 identities bound owner at the organization by hand (it has 1), so provisioning cannot lock everyone out",
            },
          ],
          resourceInfo: undefined,
        });
        expect(guarded).toEqual([{ uid: idp.uid, parentUid: org, defaultRole: VIEWER }]);
        const on = await r.scimCredentials.setEnabled(idp.uid, true, "0", 1, NOW + 1, guard);
        expect([on.enabled, on.etag]).toEqual([true, "1"]);
        expect(await r.scimCredentials.setEnabled(idp.uid, true, "1", 1, NOW + 2, guard)).toEqual(on);
        expect(((await rejectionShape(r.scimCredentials.setEnabled(idp.uid, false, "0", 1, NOW, guard))) as { reason: string }).reason).toBe("ETAG_MISMATCH");
        expect((await r.scimCredentials.setEnabled(idp.uid, false, "1", 1, NOW + 3, guard)).enabled).toBe(false);
      });
    });
  });

  describe("account associations", () => {
    it("creates one per group, updates, deletes idempotently, and blocks the group's delete while it exists", async () => {
      const providers = { amazon: { account: "123456789012" } };
      expect(await rejectionShape(r.accountAssociations.create({ groupUid: MISSING_GROUP, name: "x", description: "", providers }, NOW))).toEqual(
        notFoundShape("group", MISSING_GROUP),
      );
      const created = await r.accountAssociations.create({ groupUid: org, name: "assoc", description: "d", providers }, NOW);
      expect(created).toEqual({ uid: org, name: "assoc", description: "d", providers, createTime: NOW, updateTime: NOW });
      expect(await rejectionShape(r.accountAssociations.create({ groupUid: org, name: "again", description: "", providers }, NOW))).toEqual({
        code: 6,
        message: `Already exists: group ${org} already has an account association`,
        reason: "ALREADY_EXISTS",
        metadata: { resource_type: "account association", resource_name: org },
        fieldViolations: [],
        preconditionViolations: [],
        resourceInfo: { resourceType: "account association", resourceName: org, description: `group ${org} already has an account association` },
      });
      const google = { google: { projectId: "p", projectNumber: "1" } };
      expect(await r.accountAssociations.update(org, (current) => ({ providers: { ...current.providers, ...google } }), NOW + 3)).toEqual({
        ...created,
        providers: { ...providers, ...google },
        updateTime: NOW + 3,
      });
      expect(await rejectionShape(r.accountAssociations.update("nothing", () => ({}), NOW))).toEqual(notFoundShape("account association", "nothing"));
      expect(((await rejectionShape(r.groups.delete(org))) as { metadata: unknown }).metadata).toEqual({ child_kind: "account associations" });
      await r.accountAssociations.delete(org);
      await r.accountAssociations.delete(org);
      expect(await r.accountAssociations.get(org)).toBeUndefined();
    });
  });

  describe("refresh tokens", () => {
    const token = (hash: string, over: Partial<NewRefreshToken> = {}): NewRefreshToken => ({
      tokenHash: hash,
      familyId: "family-1",
      identityUid: alice,
      audiences: ["https://api.example"],
      capabilities: [103],
      issueTime: NOW,
      expireTime: NOW + HOUR,
      familyExpireTime: NOW + 24 * HOUR,
      ...over,
    });
    const next = (hash: string) => (previous: { familyId: string; identityUid: string; audiences: readonly string[]; familyExpireTime: number }) =>
      token(hash, {
        familyId: previous.familyId,
        identityUid: previous.identityUid,
        audiences: previous.audiences,
        issueTime: NOW + 1,
        expireTime: NOW + 2 * HOUR,
      });

    it("rotates a token once; a used one presented again ends its whole family", async () => {
      expect(await rejectionShape(r.refreshTokens.issue(token("t0", { identityUid: "nobody" }), NOW))).toEqual(notFoundShape("identity", "nobody"));
      await r.refreshTokens.issue(token("t1"), NOW);
      expect(await r.refreshTokens.find("t1")).toEqual({ ...token("t1"), usedTime: null });
      const rotated = await r.refreshTokens.rotate("t1", NOW + 5, next("t2"));
      expect(rotated).toEqual({ kind: "rotated", previous: { ...token("t1"), usedTime: null } });
      expect((await r.refreshTokens.find("t1"))?.usedTime).toBe(NOW + 5);
      expect(await r.refreshTokens.find("t2")).toEqual({ ...next("t2")(token("t1")), usedTime: null });
      expect(await r.refreshTokens.rotate("t1", NOW + 6, next("t3"))).toEqual({ kind: "reused" });
      expect([await r.refreshTokens.find("t1"), await r.refreshTokens.find("t2"), await r.refreshTokens.find("t3")]).toEqual([undefined, undefined, undefined]);
      expect(await r.refreshTokens.rotate("t2", NOW + 7, next("t4"))).toEqual({ kind: "unknown" });
    });

    it("refuses an expired token without writing, and prunes expired rows on the next issue", async () => {
      await r.refreshTokens.issue(token("old", { expireTime: NOW + 10, capabilities: undefined, scopes: ["a/b"] }), NOW);
      expect(await r.refreshTokens.find("old")).toEqual({
        ...token("old", { expireTime: NOW + 10, scopes: ["a/b"] }),
        capabilities: undefined,
        usedTime: null,
      });
      expect(await r.refreshTokens.rotate("old", NOW + 10, next("never"))).toEqual({ kind: "expired" });
      expect(await r.refreshTokens.find("never")).toBeUndefined();
      await r.refreshTokens.issue(token("fresh", { familyId: "family-2" }), NOW + 10);
      expect(await r.refreshTokens.find("old")).toBeUndefined();
      expect(await r.refreshTokens.find("fresh")).toBeDefined();
    });

    it("goes with a revocation of every token of its identity, not with one of a single token", async () => {
      await r.refreshTokens.issue(token("t1"), NOW);
      const checked: unknown[] = [];
      await r.tokenRevocations.revoke({ subject: alice, jti: "j1" }, NOW + 1000, HOUR, (_view, identity) => {
        checked.push(identity);
      });
      expect(checked).toEqual([{ uid: alice, parentUid: null }]);
      expect(await r.refreshTokens.find("t1")).toBeDefined();
      await r.tokenRevocations.revoke({ subject: alice }, NOW + 2000, HOUR);
      expect(await r.refreshTokens.find("t1")).toBeUndefined();
      const stored = parseStored(await opened.engine.serverValues.read(REVOCATIONS_NAME));
      expect(stored).toEqual({ tokens: [], subjects: [{ sub: alice, before: NOW + 2000, until: NOW + 2000 + HOUR }] });
    });
  });

  describe("token revocations", () => {
    it("keeps entries until they can match nothing, writes nothing when the check refuses, and tells the check when there is no identity", async () => {
      await r.tokenRevocations.revoke({ subject: "svc", jti: "a" }, NOW, 1000);
      await r.tokenRevocations.revoke({ subject: "svc", jti: "a" }, NOW + 1, 1000);
      await r.tokenRevocations.revoke({ subject: "other", jti: "b" }, NOW + 500, 1000);
      const read = async () => parseStored(await opened.engine.serverValues.read(REVOCATIONS_NAME));
      expect(await read()).toEqual({
        tokens: [
          { sub: "svc", jti: "a", until: NOW + 1000 },
          { sub: "other", jti: "b", until: NOW + 1500 },
        ],
        subjects: [],
      });
      const seen: unknown[] = [];
      const refused = r.tokenRevocations.revoke({ subject: "svc" }, NOW + 1000, 1000, (_view, identity) => {
        seen.push(identity);
        throw new ApiError(7, "Permission denied: no");
      });
      expect(((await rejectionShape(refused)) as { code: number }).code).toBe(7);
      expect(seen).toEqual([undefined]);
      await r.tokenRevocations.revoke({ subject: "svc" }, NOW + 1000, 1000);
      expect(await read()).toEqual({
        tokens: [{ sub: "other", jti: "b", until: NOW + 1500 }],
        subjects: [{ sub: "svc", before: NOW + 1000, until: NOW + 2000 }],
      });
      // The watcher every call reads sees the revocation at once on the engine that wrote it.
      const watched = opened.engine.serverValues.watch([REVOCATIONS_NAME], ([v]) => parseStored(v).subjects.length);
      expect(watched()).toBe(1);
    });
  });
});
