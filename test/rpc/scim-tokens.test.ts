/**
 * The SCIM token lifecycle of IdentityProvidersService (docs/auth.md "SCIM tokens") on every
 * door (gRPC, Connect JSON and proto, gRPC-web, REST): GenerateScimToken, RegenerateScimToken
 * (old token valid for the overlap), RevokeScimToken, SetScimEnabled with the etag rules, the
 * SCIM state reported by Get and List, tokens stored hashed and shown once, and authorization
 * (the method's capabilities, anti-escalation on the default role, down-scoped tokens).
 */
import { createHash } from "node:crypto";
import type { DescMethodUnary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IdentityProvidersService } from "../../gen/chainguard/platform/iam/v2beta1/identity_providers_pb.js";
import { CAP_CLAIM } from "../../src/auth/token-limits.js";
import { builtInRoleUid } from "../../src/store/builtin-roles.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { identityToken } from "../support/auth.js";
import { type CallOutcome, callDoors } from "../support/call-method.js";
import { queryDb, snapshotDb, withServerStore } from "../support/db.js";
import { rest } from "../support/rest.js";

const M = IdentityProvidersService.method;
const DAY_MS = 24 * 60 * 60 * 1000;
const OIDC = { issuer: "https://idp.example.com/realms/acme", clientId: "trellis-console", clientSecret: "s3cret-value" };

let t: TestApp;
let clockOffset = 0;
let counter = 0;
const now = () => Date.now() + clockOffset;
function advance(ms: number) {
  clockOffset += ms;
  t.advanceClock(ms);
}

async function op(method: string, path: string, body?: unknown) {
  const r = await rest(t.url, method, path, body);
  if (r.status !== 200) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t?.close();
});

/** A fresh organization with one provider (default role `role`). */
async function fixture(role = builtInRoleUid("viewer")): Promise<{ org: string; idp: string }> {
  const org = (await op("POST", "/iam/v2beta1/groups", { name: `org-${++counter}` })).uid;
  const idp = (await op("POST", `/iam/v2beta1/identityProviders/${org}`, { name: `idp-${counter}`, defaultRole: role, oidc: OIDC })).uid;
  return { org, idp };
}

async function identityBound(org: string, role: string): Promise<string> {
  const uid = (
    await op("POST", `/iam/v2beta1/identities/${org}`, {
      name: `robot ${++counter}`,
      claimMatch: { issuer: "https://ci.example.test", subject: `job-${counter}` },
    })
  ).uid;
  await op("POST", `/iam/v2beta1/roleBindings/${org}`, { identityUid: uid, roleUid: role });
  return uid;
}

// biome-ignore lint/suspicious/noExplicitAny: the tests read the JSON answer's fields by path
type Json = Record<string, any>;

function body(o: CallOutcome): Json {
  if (!o.ok) throw new Error(`refused: ${JSON.stringify(o)}`);
  return o.body as Json;
}

async function storedRow(idp: string): Promise<Record<string, unknown> | undefined> {
  return (await queryDb(t, "SELECT * FROM scim_credentials WHERE identity_provider_uid = ?", [idp]))[0];
}

/** Whether a token would be accepted right now, by the verifier a SCIM endpoint would use. */
async function accepted(token: string): Promise<string | undefined> {
  return withServerStore(t, (store) => store.repositories.scimCredentials.findByTokenHash(createHash("sha256").update(token).digest("hex"), now()));
}

const ms = (ts: string) => Date.parse(ts);

describe.each(callDoors)("SCIM tokens over $name", (door) => {
  // biome-ignore lint/suspicious/noExplicitAny: one helper for requests of every method
  const call = (method: DescMethodUnary<any, any>, request: Record<string, unknown>, token = t.token) => door.call(t.url, token, method, request as never);

  it("Generate issues a cgscim_ token once, stores only its hash, and Get/List report the state", async () => {
    const { idp } = await fixture();
    const fresh = body(await call(M.getIdentityProvider, { uid: idp }));
    expect(fresh.scim).toMatchObject({ etag: "0", credentialState: "CREDENTIAL_STATE_NOT_ISSUED" });
    const before = now();
    const gen = body(await call(M.generateScimToken, { identityProviderUid: idp }));
    expect(gen.token).toMatch(/^cgscim_[0-9a-f]{64}$/);
    expect(gen).toMatchObject({ identityProviderUid: idp, etag: "1" });
    expect(ms(gen.expireTime) - before).toBeGreaterThanOrEqual(365 * DAY_MS - 5000);
    expect(ms(gen.expireTime) - before).toBeLessThanOrEqual(365 * DAY_MS + 5000);
    const row = await storedRow(idp);
    expect(row?.token_hash).toBe(createHash("sha256").update(gen.token).digest("hex"));
    expect(JSON.stringify(row)).not.toContain(gen.token);
    expect(await accepted(gen.token)).toBe(idp);
    const got = body(await call(M.getIdentityProvider, { uid: idp }));
    expect(got.scim).toMatchObject({ etag: "1", credentialState: "CREDENTIAL_STATE_LIVE", tokenExpireTime: gen.expireTime });
    expect(got.scim.enabled ?? false).toBe(false); // the RPC doors' JSON view omits false
    expect(JSON.stringify(got)).not.toContain(gen.token);
    const listed = body(await call(M.listIdentityProviders, { uidp: { ids: [idp] } }));
    expect(listed.identityProviders[0].scim.etag).toBe("1");
    expect(listed.identityProviders[0].scim.credentialState).toBeUndefined();
    expect(listed.identityProviders[0].scim.tokenExpireTime).toBeUndefined();
    // A second Generate while a token exists: FAILED_PRECONDITION, nothing written.
    const snap = await snapshotDb(t);
    expect(await call(M.generateScimToken, { identityProviderUid: idp })).toMatchObject({ ok: false, code: 9, preconditionTypes: ["SCIM_TOKEN_EXISTS"] });
    expect(await snapshotDb(t)).toBe(snap);
  });

  it("validates expire_time and never_expires, writing nothing", async () => {
    const { idp } = await fixture();
    const snap = await snapshotDb(t);
    const past = { seconds: BigInt(Math.floor(now() / 1000) - 60), nanos: 0 };
    const tooFar = { seconds: BigInt(Math.floor((now() + 731 * DAY_MS) / 1000)), nanos: 0 };
    const soon = { seconds: BigInt(Math.floor((now() + DAY_MS) / 1000)), nanos: 0 };
    for (const request of [
      { identityProviderUid: idp, expireTime: past },
      { identityProviderUid: idp, expireTime: tooFar },
      { identityProviderUid: idp, expireTime: soon, neverExpires: true },
      { identityProviderUid: "not-a-uid" },
    ]) {
      expect(await call(M.generateScimToken, request)).toMatchObject({ ok: false, code: 3 });
    }
    expect(await snapshotDb(t)).toBe(snap);
    const never = body(await call(M.generateScimToken, { identityProviderUid: idp, neverExpires: true }));
    expect(never.expireTime).toBeUndefined();
    expect(body(await call(M.getIdentityProvider, { uid: idp })).scim.tokenExpireTime).toBeUndefined();
  });

  it("Regenerate: etag required and checked, the old token valid only for the overlap", async () => {
    const { idp } = await fixture();
    const snap0 = await snapshotDb(t);
    expect(await call(M.regenerateScimToken, { identityProviderUid: idp, etag: "0" })).toMatchObject({ ok: false, code: 5 });
    expect(await snapshotDb(t)).toBe(snap0);
    const first = body(await call(M.generateScimToken, { identityProviderUid: idp }));
    const snap = await snapshotDb(t);
    expect(await call(M.regenerateScimToken, { identityProviderUid: idp, etag: "" })).toMatchObject({ ok: false, code: 3 });
    expect(await call(M.regenerateScimToken, { identityProviderUid: idp, etag: "0" })).toMatchObject({ ok: false, code: 10, reason: "ETAG_MISMATCH" });
    expect(await call(M.regenerateScimToken, { identityProviderUid: idp, etag: first.etag, overlap: { seconds: -1n, nanos: 0 } })).toMatchObject({
      ok: false,
      code: 3,
    });
    expect(await snapshotDb(t)).toBe(snap);

    const started = now();
    const second = body(await call(M.regenerateScimToken, { identityProviderUid: idp, etag: first.etag, overlap: { seconds: 1800n, nanos: 0 } }));
    expect(second.token).toMatch(/^cgscim_[0-9a-f]{64}$/);
    expect(second.token).not.toBe(first.token);
    expect(second.etag).toBe("2");
    expect(second.requestedOverlap).toBe("1800s");
    expect(Math.abs(ms(second.previousTokenExpireTime) - (started + 1800_000))).toBeLessThan(5000);
    expect(body(await call(M.getIdentityProvider, { uid: idp })).scim.credentialState).toBe("CREDENTIAL_STATE_ROTATING");
    expect(await accepted(first.token)).toBe(idp);
    expect(await accepted(second.token)).toBe(idp);
    advance(31 * 60 * 1000);
    try {
      expect(await accepted(first.token)).toBeUndefined();
      expect(await accepted(second.token)).toBe(idp);
      expect(body(await call(M.getIdentityProvider, { uid: idp })).scim.credentialState).toBe("CREDENTIAL_STATE_LIVE");
    } finally {
      advance(-31 * 60 * 1000);
    }
    // Default overlap one hour; above 24 hours capped; zero cuts over at once.
    const third = body(await call(M.regenerateScimToken, { identityProviderUid: idp, etag: second.etag }));
    expect(third.requestedOverlap).toBe("3600s");
    const fourth = body(await call(M.regenerateScimToken, { identityProviderUid: idp, etag: third.etag, overlap: { seconds: 172800n, nanos: 0 } }));
    expect(fourth.requestedOverlap).toBe("86400s");
    const fifth = body(await call(M.regenerateScimToken, { identityProviderUid: idp, etag: fourth.etag, overlap: { seconds: 0n, nanos: 0 } }));
    expect(fifth.previousTokenExpireTime).toBeUndefined();
    expect(await accepted(fourth.token)).toBeUndefined();
    expect(await accepted(fifth.token)).toBe(idp);
  });

  it("Revoke stops every token at once; revoking again changes nothing; Generate works again after", async () => {
    const { idp } = await fixture();
    expect(await call(M.revokeScimToken, { identityProviderUid: idp })).toMatchObject({ ok: false, code: 5 });
    const first = body(await call(M.generateScimToken, { identityProviderUid: idp }));
    const second = body(await call(M.regenerateScimToken, { identityProviderUid: idp, etag: first.etag }));
    const revoked = body(await call(M.revokeScimToken, { identityProviderUid: idp }));
    expect(revoked).toMatchObject({ identityProviderUid: idp, etag: "3" });
    expect(revoked.revokeTime).toBeDefined();
    expect(await accepted(first.token)).toBeUndefined();
    expect(await accepted(second.token)).toBeUndefined();
    expect(body(await call(M.getIdentityProvider, { uid: idp })).scim.credentialState).toBe("CREDENTIAL_STATE_REVOKED");
    const snap = await snapshotDb(t);
    expect(body(await call(M.revokeScimToken, { identityProviderUid: idp }))).toMatchObject({ etag: "3", revokeTime: revoked.revokeTime });
    expect(await snapshotDb(t)).toBe(snap);
    const again = body(await call(M.generateScimToken, { identityProviderUid: idp }));
    expect(await accepted(again.token)).toBe(idp);
  });

  it("SetScimEnabled: etag checked; turning it on needs two owners at the organization", async () => {
    const { org, idp } = await fixture();
    await identityBound(org, builtInRoleUid("owner"));
    const snap = await snapshotDb(t);
    expect(await call(M.setScimEnabled, { identityProviderUid: idp, enabled: true, etag: "" })).toMatchObject({ ok: false, code: 3 });
    expect(await call(M.setScimEnabled, { identityProviderUid: idp, enabled: true, etag: "7" })).toMatchObject({
      ok: false,
      code: 10,
      reason: "ETAG_MISMATCH",
    });
    expect(await call(M.setScimEnabled, { identityProviderUid: idp, enabled: true, etag: "0" })).toMatchObject({
      ok: false,
      code: 9,
      preconditionTypes: ["SCIM_OWNERS"],
    });
    expect(await snapshotDb(t)).toBe(snap);
    await identityBound(org, builtInRoleUid("owner"));
    expect(body(await call(M.setScimEnabled, { identityProviderUid: idp, enabled: true, etag: "0" }))).toMatchObject({
      identityProviderUid: idp,
      enabled: true,
      etag: "1",
    });
    expect(body(await call(M.getIdentityProvider, { uid: idp })).scim).toMatchObject({ enabled: true, etag: "1" });
    const off = body(await call(M.setScimEnabled, { identityProviderUid: idp, enabled: false, etag: "1" }));
    expect(off.etag).toBe("2");
    expect(off.enabled ?? false).toBe(false);
  });

  it("authorization: the method's capabilities, the default role's, and a down-scoped token's reduction", async () => {
    const { org, idp } = await fixture(builtInRoleUid("owner"));
    const viewer = await identityToken(t.app, await identityBound(org, builtInRoleUid("viewer")));
    const scimAdmin = (
      await op("POST", `/iam/v2beta1/roles/${org}`, {
        name: `scim-admin-${++counter}`,
        capabilities: ["CAP_IAM_SCIM_MANAGE", "CAP_IAM_IDENTITY_PROVIDERS_LIST"],
      })
    ).uid;
    const admin = await identityToken(t.app, await identityBound(org, scimAdmin));
    const ownerUid = await identityBound(org, builtInRoleUid("owner"));
    const reduced = await t.app.issuer.mint({
      subject: ownerUid,
      audience: t.app.issuer.audience,
      ttlSeconds: 600,
      claims: { [CAP_CLAIM]: ["identity_providers.scim.manage", "identity_providers.list"] },
    });
    const snap = await snapshotDb(t);
    expect(await call(M.generateScimToken, { identityProviderUid: idp }, viewer)).toMatchObject({ ok: false, code: 7 });
    // The provider's users get `owner`: a SCIM credential is worth that much.
    expect(await call(M.generateScimToken, { identityProviderUid: idp }, admin)).toMatchObject({ ok: false, code: 7, reason: "PRIVILEGE_ESCALATION" });
    expect(await call(M.generateScimToken, { identityProviderUid: idp }, reduced)).toMatchObject({ ok: false, code: 7, reason: "PRIVILEGE_ESCALATION" });
    expect(await call(M.setScimEnabled, { identityProviderUid: idp, enabled: true, etag: "0" }, reduced)).toMatchObject({ ok: false, code: 7 });
    expect(await snapshotDb(t)).toBe(snap);
    const owner = await identityToken(t.app, ownerUid);
    expect(body(await call(M.generateScimToken, { identityProviderUid: idp }, owner)).token).toMatch(/^cgscim_/);
  });
});

describe("SCIM state and its provider", () => {
  it("goes with the provider", async () => {
    const { idp } = await fixture();
    await op("POST", `/iam/v2beta1/identityProviders/${idp}:generateScimToken`, {});
    expect(await storedRow(idp)).toBeDefined();
    await op("DELETE", `/iam/v2beta1/identityProviders/${idp}`);
    expect(await storedRow(idp)).toBeUndefined();
  });
});
