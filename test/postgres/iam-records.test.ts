/**
 * The IAM repositories ported after the authorization path (group access requests, identity
 * providers and their SCIM state, account associations, group invites, refresh tokens, token
 * revocations; src/store/postgres/) with writers on two engines on one database (two
 * replicas) racing each other: an invite redeemed at most as often as it allows, a refresh
 * token rotated exactly once and a reuse ending its family even when it races the family's
 * rotation, a revocation leaving no refresh token behind, no two revocations losing one, one
 * SCIM token, request and association where one is allowed, and no record left pointing at a
 * group or role deleted meanwhile. Every failure is the API's own answer, never a storage
 * error. The records and errors themselves are held to SQLite's in test/store/iam-records.test.ts.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { ApiError, GrpcCode } from "../../src/errors/api-error.js";
import { builtInRoleUid } from "../../src/store/builtin-roles.js";
import type { StoreRepositories } from "../../src/store/engine.js";
import { openPostgresEngine, type PostgresEngine, postgresPoolOf } from "../../src/store/postgres/engine.js";
import type { NewRefreshToken } from "../../src/store/refresh-tokens.js";
import { parseStored, REVOCATIONS_NAME } from "../../src/store/token-revocations.js";
import { describePostgres, freshPostgresDatabase } from "../support/postgres.js";

const NOW = 1_700_000_000_000;
const HOUR = 60 * 60 * 1000;
const VIEWER = builtInRoleUid("viewer");
const allow = () => {};

/** Settled outcomes, after checking that every failure is an ApiError (never a storage error). */
async function race<T>(calls: Promise<T>[]): Promise<PromiseSettledResult<T>[]> {
  const outcomes = await Promise.allSettled(calls);
  for (const o of outcomes) if (o.status === "rejected") expect(o.reason, String(o.reason)).toBeInstanceOf(ApiError);
  return outcomes;
}

const fulfilled = <T>(outcomes: PromiseSettledResult<T>[]) =>
  outcomes.filter((o): o is PromiseFulfilledResult<T> => o.status === "fulfilled").map((o) => o.value);
const rejected = <T>(outcomes: PromiseSettledResult<T>[]) =>
  outcomes.filter((o): o is PromiseRejectedResult => o.status === "rejected").map((o) => o.reason as ApiError);

describePostgres("IAM records with two replicas on one PostgreSQL", () => {
  let engineA: PostgresEngine;
  let engineB: PostgresEngine;
  let a: StoreRepositories;
  let b: StoreRepositories;
  /** Replica A for even i, B for odd. */
  const on = (i: number) => (i % 2 ? b : a);
  let org: string;
  let people = 0;
  const person = async (email = "") =>
    (await a.identities.findOrCreateUser({ issuer: "https://idp.example", subject: `p${people++}`, name: "someone", email }, NOW)).uid;
  const query = async (text: string, values: unknown[] = []) => (await postgresPoolOf(engineA).query(text, values)).rows;

  beforeAll(async () => {
    const url = await freshPostgresDatabase("iam_records");
    [engineA, engineB] = await Promise.all([openPostgresEngine(url, { poolSize: 8 }), openPostgresEngine(url, { poolSize: 8 })]);
    await Promise.all([engineA.ensureBuiltInRoles(NOW), engineB.ensureBuiltInRoles(NOW)]);
    a = engineA.repositories;
    b = engineB.repositories;
    const founder = await person();
    org = (await a.groups.create({ parentUid: null, name: "org", description: "", verified: true, kind: 0 }, NOW, founder)).uid;
  });
  afterAll(async () => {
    await engineA?.close();
    await engineB?.close();
  });

  it("redeems a single-use invite once however many replicas race for it, and a multi-use one into one binding per identity", async () => {
    for (let round = 0; round < 8; round++) {
      const { code } = await a.groupInvites.create({ parentUid: org, roleUid: VIEWER, email: "", singleUse: true, ttlMs: HOUR, creator: "{}" }, NOW);
      const redeemers = await Promise.all(Array.from({ length: 6 }, () => person()));
      const outcomes = await race(redeemers.map((p, i) => on(i).groupInvites.redeemInvite(code, p, NOW + 1, () => {})));
      expect(fulfilled(outcomes)).toHaveLength(1);
      for (const err of rejected(outcomes)) expect(err.code).toBe(GrpcCode.NotFound);
      const bound = await query("SELECT identity_uid FROM role_bindings WHERE identity_uid = ANY($1)", [redeemers]);
      expect(bound).toHaveLength(1);
    }
    const { code } = await a.groupInvites.create({ parentUid: org, roleUid: VIEWER, email: "", singleUse: false, ttlMs: HOUR, creator: "{}" }, NOW);
    for (let round = 0; round < 6; round++) {
      const p = await person();
      // The same identity redeems on both replicas while CreateRoleBinding binds the same triple.
      const outcomes = await race<unknown>([
        ...Array.from({ length: 4 }, (_, i) => on(i).groupInvites.redeemInvite(code, p, NOW + 2, () => {})),
        b.roleBindings.create(org, [{ identityUid: p, roleUid: VIEWER, fields: { identityUid: "identity", roleUid: "role" } }], NOW + 2),
      ]);
      const rows = await query("SELECT uid FROM role_bindings WHERE identity_uid = $1", [p]);
      expect(rows).toHaveLength(1);
      const redeemed = outcomes.slice(0, 4);
      for (const o of redeemed) expect(o).toEqual({ status: "fulfilled", value: rows[0].uid });
      const created = outcomes[4] as PromiseSettledResult<unknown>;
      if (created.status === "rejected") expect((created.reason as ApiError).code).toBe(GrpcCode.AlreadyExists);
    }
  });

  const token = (identityUid: string, familyId: string, hash: string): NewRefreshToken => ({
    tokenHash: hash,
    familyId,
    identityUid,
    audiences: ["https://api.example"],
    issueTime: NOW,
    expireTime: NOW + HOUR,
    familyExpireTime: NOW + 24 * HOUR,
  });
  const familyRows = (familyId: string) => query("SELECT token_hash FROM refresh_tokens WHERE family_id = $1", [familyId]);

  it("rotates a refresh token exactly once when replicas present it at once; the next is a reuse that ends the family", async () => {
    const holder = await person();
    for (let round = 0; round < 10; round++) {
      const family = `race-${round}`;
      await a.refreshTokens.issue(token(holder, family, `${family}-0`), NOW);
      const outcomes = await race(
        Array.from({ length: 4 }, (_, i) => on(i).refreshTokens.rotate(`${family}-0`, NOW + 1, () => token(holder, family, `${family}-next-${i}`))),
      );
      const kinds = fulfilled(outcomes)
        .map((o) => o.kind)
        .sort();
      // As on SQLite's single writer: one rotation, then one reuse that ends the family (the
      // rotation's new token with it), then nothing left to find.
      expect(kinds).toEqual(["reused", "rotated", "unknown", "unknown"]);
      expect(await familyRows(family)).toEqual([]);
    }
  });

  it("ends the family, the token of a racing rotation included, when a used token is presented while another replica rotates the current one", async () => {
    const holder = await person();
    for (let round = 0; round < 12; round++) {
      const family = `steal-${round}`;
      await a.refreshTokens.issue(token(holder, family, `${family}-1`), NOW);
      await a.refreshTokens.rotate(`${family}-1`, NOW + 1, () => token(holder, family, `${family}-2`));
      const [thief, owner] = fulfilled(
        await race([
          a.refreshTokens.rotate(`${family}-1`, NOW + 2, () => token(holder, family, `${family}-thief`)),
          b.refreshTokens.rotate(`${family}-2`, NOW + 2, () => token(holder, family, `${family}-3`)),
        ]),
      );
      expect(thief?.kind).toBe("reused");
      expect(["rotated", "unknown"]).toContain(owner?.kind);
      expect(await familyRows(family)).toEqual([]);
    }
  });

  it("leaves no refresh token of an identity whose every token is revoked while another replica rotates and issues", async () => {
    for (let round = 0; round < 8; round++) {
      const holder = await person();
      const family = `revoked-${round}`;
      await a.refreshTokens.issue(token(holder, family, `${family}-1`), NOW);
      const outcomes = await race<unknown>([
        b.refreshTokens.rotate(`${family}-1`, NOW + 1, () => token(holder, family, `${family}-2`)),
        a.tokenRevocations.revoke({ subject: holder }, NOW + 1, HOUR),
      ]);
      expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "fulfilled"]);
      expect(await query("SELECT token_hash FROM refresh_tokens WHERE identity_uid = $1", [holder])).toEqual([]);
    }
  });

  it("keeps every revocation when replicas revoke at once, and each replica's watcher sees them all", async () => {
    await race(Array.from({ length: 8 }, (_, i) => on(i).tokenRevocations.revoke({ subject: "svc", jti: `j${i}` }, NOW + i, HOUR)));
    const stored = parseStored(await engineB.serverValues.read(REVOCATIONS_NAME));
    expect(
      stored.tokens
        .filter((t) => t.sub === "svc")
        .map((t) => t.jti)
        .sort(),
    ).toEqual(["j0", "j1", "j2", "j3", "j4", "j5", "j6", "j7"]);
    await Promise.all([engineA.serverValues.refresh(), engineB.serverValues.refresh()]);
    for (const engine of [engineA, engineB]) {
      expect(engine.serverValues.watch([REVOCATIONS_NAME], ([v]) => parseStored(v).tokens.filter((t) => t.sub === "svc").length)()).toBe(8);
    }
  });

  it("gives one first SCIM token, one change per etag, one access request and one association where replicas race", async () => {
    const idp = await a.identityProviders.create(
      {
        parentUid: org,
        name: "scim",
        description: "",
        defaultRole: VIEWER,
        oidc: { issuer: "https://login", clientId: "c", clientSecret: "", additionalScopes: [], groupsClaim: "", pkceEnabled: false, correlationRule: 1 },
      },
      NOW,
    );
    const generated = await race(
      Array.from({ length: 4 }, (_, i) => on(i).scimCredentials.generate(idp.uid, { tokenHash: `scim-${i}`, expireTime: null }, NOW, allow)),
    );
    expect(fulfilled(generated)).toHaveLength(1);
    for (const err of rejected(generated)) expect(err.preconditionViolations[0]?.type).toBe("SCIM_TOKEN_EXISTS");
    const regenerated = await race(
      Array.from({ length: 4 }, (_, i) => on(i).scimCredentials.regenerate(idp.uid, "1", { tokenHash: `again-${i}`, expireTime: null }, 0, NOW + 1, allow)),
    );
    expect(fulfilled(regenerated).map((s) => s.etag)).toEqual(["2"]);
    for (const err of rejected(regenerated)) expect(err.reason).toBe("ETAG_MISMATCH");

    const asker = await person();
    const requests = await race(Array.from({ length: 4 }, (_, i) => on(i).groupAccessRequests.record(org, asker, NOW)));
    expect(fulfilled(requests)).toHaveLength(1);
    for (const err of rejected(requests)) expect(err.code).toBe(GrpcCode.ResourceExhausted);

    const group = (await a.groups.create({ parentUid: org, name: "assoc", description: "", verified: false, kind: 0 }, NOW)).uid;
    const associations = await race(
      Array.from({ length: 4 }, (_, i) => on(i).accountAssociations.create({ groupUid: group, name: `a${i}`, description: "", providers: {} }, NOW)),
    );
    expect(fulfilled(associations)).toHaveLength(1);
    for (const err of rejected(associations)) expect(err.code).toBe(GrpcCode.AlreadyExists);
  });

  it("never leaves a provider, invite or association under a group another replica deleted meanwhile", async () => {
    for (let round = 0; round < 12; round++) {
      const group = (await a.groups.create({ parentUid: org, name: `doomed ${round}`, description: "", verified: false, kind: 0 }, NOW)).uid;
      const [del, ...creates] = await race<unknown>([
        b.groups.delete(group),
        a.identityProviders.create(
          {
            parentUid: group,
            name: "p",
            description: "",
            defaultRole: VIEWER,
            oidc: { issuer: "https://login", clientId: "c", clientSecret: "", additionalScopes: [], groupsClaim: "", pkceEnabled: false, correlationRule: 1 },
          },
          NOW,
        ),
        b.groupInvites.create({ parentUid: group, roleUid: VIEWER, email: "", singleUse: true, ttlMs: HOUR, creator: "{}" }, NOW),
        a.accountAssociations.create({ groupUid: group, name: "x", description: "", providers: {} }, NOW),
      ]);
      if (del?.status === "fulfilled") {
        for (const c of creates) expect(c.status === "rejected" && (c.reason as ApiError).code).toBe(GrpcCode.NotFound);
      } else {
        expect(((del as PromiseRejectedResult).reason as ApiError).code).toBe(GrpcCode.FailedPrecondition);
        expect(creates.some((c) => c.status === "fulfilled")).toBe(true);
      }
    }
    for (const [table, column] of [
      ["identity_providers", "parent_uid"],
      ["group_invites", "parent_uid"],
      ["account_associations", "uid"],
    ]) {
      expect(await query(`SELECT ${column} FROM ${table} t WHERE NOT EXISTS (SELECT 1 FROM groups g WHERE g.uid = t.${column})`)).toEqual([]);
    }
  });

  it("never lets an invite or a provider grant a role another replica deleted meanwhile", async () => {
    for (let round = 0; round < 10; round++) {
      const role = (await a.roles.create({ parentUid: org, name: `r${round}`, description: "", capabilities: [103] }, NOW)).uid;
      const [del, invite, provider] = await race<unknown>([
        b.roles.delete(role),
        a.groupInvites.create({ parentUid: org, roleUid: role, email: "", singleUse: false, ttlMs: HOUR, creator: "{}" }, NOW),
        a.identityProviders.create(
          {
            parentUid: org,
            name: `p${round}`,
            description: "",
            defaultRole: role,
            oidc: { issuer: "https://login", clientId: "c", clientSecret: "", additionalScopes: [], groupsClaim: "", pkceEnabled: false, correlationRule: 1 },
          },
          NOW,
        ),
      ]);
      if (del?.status === "fulfilled") {
        for (const c of [invite, provider]) expect(c?.status === "rejected" && (c.reason as ApiError).code).toBe(GrpcCode.InvalidArgument);
      } else {
        expect(((del as PromiseRejectedResult).reason as ApiError).preconditionViolations[0]?.type).toBe("RESOURCE_IN_USE");
        expect([invite, provider].some((c) => c?.status === "fulfilled")).toBe(true);
      }
    }
  });
});
