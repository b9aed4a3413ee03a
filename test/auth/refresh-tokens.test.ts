/**
 * Refresh tokens (docs/auth.md "Refresh tokens"): an Exchange for user sign-in issues one when
 * asked (header `trellis-request-refresh-token: true`), on every exchange door; ExchangeRefreshToken
 * on every door (gRPC, Connect, gRPC-web, REST form POST) rotates it: single use, a reused
 * one revokes its family, stored hashed, bounded lifetime, gone with its identity, and the
 * original down-scoping kept (a refresh can narrow it, never widen it).
 */
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { decodeJwt } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SecurityTokenService } from "../../gen/chainguard/platform/oidc/oidc_pb.js";
import { REFRESH_REQUEST_HEADER } from "../../src/auth/refresh-tokens.js";
import { CAP_CLAIM, SCOPES_CLAIM } from "../../src/auth/token-limits.js";
import { builtInRoleUid } from "../../src/store/builtin-roles.js";
import { userIdentityUid } from "../../src/store/identities.js";
import { startTestApp, type TestApp } from "../support/app.js";
import type { CallOutcome } from "../support/call-method.js";
import { exchangeDoors } from "../support/exchange-doors.js";
import { queryDb, snapshotDb } from "../support/db.js";
import { startTestIdp, type TestIdp } from "../support/idp.js";
import { rest } from "../support/rest.js";
import { closeGrpcClients } from "../support/transports.js";

const CLIENT_ID = "trellis-cli";
const REGISTRY = "registry.example.test";
const DAY_MS = 24 * 60 * 60 * 1000;

let t: TestApp;
let idp: TestIdp;
let org: string;
let alpha: string;
let robot: string;

async function op(method: string, path: string, body?: unknown) {
  const r = await rest(t.url, method, path, body);
  if (r.status !== 200) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

beforeAll(async () => {
  idp = await startTestIdp();
  t = await startTestApp({ trust: { registryAudience: REGISTRY, identityProviders: [{ issuer: idp.issuer, users: true, clientId: CLIENT_ID }] } });
  org = (await op("POST", "/iam/v2beta1/groups", { name: "acme" })).uid;
  alpha = (await op("POST", `/iam/v2beta1/groups/${org}`, { name: "alpha" })).uid;
  robot = (await op("POST", `/iam/v2beta1/identities/${org}`, { name: "robot", claimMatch: { issuer: idp.issuer, subject: "ci" } })).uid;
});
afterAll(async () => {
  closeGrpcClients();
  await t?.close();
  await idp?.close();
});

interface Asked {
  readonly aud?: string[];
  readonly cap?: string[];
  readonly scopes?: string[];
  readonly identity?: string;
  readonly refresh?: string;
}
type Outcome = { ok: true; token: string; refreshToken: string; refreshExpiry?: string } | { ok: false; code: number; reason?: string; field?: string };

function rows(): Promise<{ token_hash: string; family_id: string; identity_uid: string; used_time: number | null }[]> {
  return queryDb(t, "SELECT * FROM refresh_tokens");
}

function failure(out: CallOutcome & { ok: false }): Outcome {
  return { ok: false, code: out.code, reason: out.reason, field: out.fields[0] };
}

const api = () => t.app.issuer.audience;

/**
 * Exchange and ExchangeRefreshToken on each door that serves both (test/support/
 * exchange-doors.ts: the RPC transports and REST's form POST).
 */
const allDoors = exchangeDoors
  .filter((door) => door.name !== "rest GET /sts/exchange")
  .map((door) => ({
    name: door.name,
    async exchange(presented: string, asked: Asked): Promise<Outcome> {
      const headers: Record<string, string> = asked.refresh === undefined ? {} : { [REFRESH_REQUEST_HEADER]: asked.refresh };
      const out = await door.call(
        t.url,
        presented,
        SecurityTokenService.method.exchange,
        { aud: asked.aud ?? [api()], cap: asked.cap ?? [], scopes: asked.scopes ?? [], identity: asked.identity ?? "" },
        { headers },
      );
      if (!out.ok) return failure(out);
      // REST: exactly the RawToken shape the SDK parses strictly.
      if (out.status !== undefined) expect(Object.keys(out.body).sort()).toEqual(["expiry", "refreshToken", "token"]);
      return { ok: true, token: String(out.body.token), refreshToken: String(out.body.refreshToken ?? "") };
    },
    async refresh(refreshToken: string, asked: Asked): Promise<Outcome> {
      const out = await door.call(t.url, refreshToken, SecurityTokenService.method.exchangeRefreshToken, {
        aud: asked.aud ?? [api()],
        cap: asked.cap ?? [],
        scopes: asked.scopes ?? [],
      });
      if (!out.ok) return failure(out);
      // REST: exactly the TokenPair shape the SDK parses strictly.
      if (out.status !== undefined) expect(Object.keys(out.body).sort()).toEqual(["refreshToken", "token"]);
      const access = (out.body.token ?? {}) as { token?: string };
      const refresh = (out.body.refreshToken ?? {}) as { token?: string; expiry?: string };
      return { ok: true, token: access.token ?? "", refreshToken: refresh.token ?? "", refreshExpiry: refresh.expiry ? "set" : undefined };
    },
  }));
const restDoor = allDoors.find((d) => d.name.startsWith("rest")) as (typeof allDoors)[number];
let n = 0;

/** A fresh user (so families of different tests never meet), bound owner at org. */
async function newUser(): Promise<{ sub: string; uid: string }> {
  const sub = `user-${++n}`;
  const uid = userIdentityUid(idp.issuer, sub);
  const first = await restDoor.exchange(await idp.sign({ sub, aud: CLIENT_ID }), {});
  expect(first.ok).toBe(true);
  await op("POST", `/iam/v2beta1/roleBindings/${org}`, { identityUid: uid, roleUid: builtInRoleUid("owner") });
  return { sub, uid };
}

function ok(o: Outcome): { token: string; refreshToken: string; refreshExpiry?: string } {
  if (!o.ok) throw new Error(`refused: ${JSON.stringify(o)}`);
  return o;
}

describe.each(allDoors)("refresh tokens over $name", (door) => {
  it("an Exchange issues one only when asked, readable by the SDK, stored only as a hash", async () => {
    const { sub, uid } = await newUser();
    const plain = ok(await door.exchange(await idp.sign({ sub, aud: CLIENT_ID }), {}));
    expect(plain.refreshToken).toBe("");
    const off = ok(await door.exchange(await idp.sign({ sub, aud: CLIENT_ID }), { refresh: "false" }));
    expect(off.refreshToken).toBe("");
    const asked = ok(await door.exchange(await idp.sign({ sub, aud: CLIENT_ID }), { refresh: "true" }));
    // The SDK reads the expiry by base64-decoding the whole string.
    const readable = JSON.parse(Buffer.from(asked.refreshToken, "base64").toString("utf8"));
    expect(readable).toMatchObject({ sub: uid, iss: t.app.issuer.issuer });
    expect(readable.exp - readable.iat).toBe(7 * 24 * 60 * 60);
    const mine = (await rows()).filter((r) => r.identity_uid === uid);
    expect(mine).toHaveLength(1);
    expect(mine[0]?.token_hash).toBe(createHash("sha256").update(asked.refreshToken).digest("hex"));
    expect(JSON.stringify(mine)).not.toContain(asked.refreshToken);
  });

  it("asking with an assumed identity, or with a bad header value, is INVALID_ARGUMENT and writes nothing", async () => {
    const before = await snapshotDb(t);
    const ci = await idp.sign({ sub: "ci", aud: t.app.issuer.issuer });
    expect(await door.exchange(ci, { identity: robot, refresh: "true" })).toMatchObject({ ok: false, code: 3, field: REFRESH_REQUEST_HEADER });
    expect(await door.exchange(await idp.sign({ sub: "x", aud: CLIENT_ID }), { refresh: "please" })).toMatchObject({
      ok: false,
      code: 3,
      field: REFRESH_REQUEST_HEADER,
    });
    expect(await snapshotDb(t)).toBe(before);
  });

  it("rotates: a refresh returns a new pair; the old token reused revokes the whole family", async () => {
    const { sub, uid } = await newUser();
    const first = ok(await door.exchange(await idp.sign({ sub, aud: CLIENT_ID }), { refresh: "true" }));
    const second = ok(await door.refresh(first.refreshToken, {}));
    expect(second.refreshToken).not.toBe(first.refreshToken);
    expect(second.refreshExpiry).toBe("set");
    expect(decodeJwt(second.token)).toMatchObject({ sub: uid, aud: api() });
    const works = await rest(t.url, "GET", `/iam/v2beta1/groups/${org}`, undefined, { authorization: `Bearer ${second.token}` });
    expect(works.status).toBe(200);
    // The first token again: refused, and the family (the second token too) is revoked.
    expect(await door.refresh(first.refreshToken, {})).toMatchObject({ ok: false, code: 16, reason: "REFRESH_TOKEN_REUSED" });
    expect((await rows()).filter((r) => r.identity_uid === uid)).toEqual([]);
    expect(await door.refresh(second.refreshToken, {})).toMatchObject({ ok: false, code: 16, reason: "TOKEN_INVALID" });
  });

  it("keeps the original down-scoping: a refresh may narrow it, never widen it", async () => {
    const { sub } = await newUser();
    const first = ok(await door.exchange(await idp.sign({ sub, aud: CLIENT_ID }), { refresh: "true", cap: ["groups.list", "groups.create"], scopes: [alpha] }));
    const same = ok(await door.refresh(first.refreshToken, {}));
    expect(decodeJwt(same.token)).toMatchObject({ [CAP_CLAIM]: ["groups.create", "groups.list"], [SCOPES_CLAIM]: [alpha] });
    // Asking for more than the family holds gives the intersection, not the union.
    const narrower = ok(await door.refresh(same.refreshToken, { cap: ["groups.list", "groups.delete"], scopes: [org] }));
    expect(decodeJwt(narrower.token)).toMatchObject({ [CAP_CLAIM]: ["groups.list"], [SCOPES_CLAIM]: [alpha] });
    const denied = await rest(t.url, "GET", `/iam/v2beta1/groups/${org}`, undefined, { authorization: `Bearer ${narrower.token}` });
    expect(denied.status).toBe(403);
    // The next refresh keeps the narrower reduction.
    const after = ok(await door.refresh(narrower.refreshToken, {}));
    expect(decodeJwt(after.token)).toMatchObject({ [CAP_CLAIM]: ["groups.list"] });
    // An audience the family was not issued for, an unknown capability: INVALID_ARGUMENT, nothing written.
    const before = await snapshotDb(t);
    expect(await door.refresh(after.refreshToken, { aud: [REGISTRY] })).toMatchObject({ ok: false, code: 3, field: "aud" });
    expect(await door.refresh(after.refreshToken, { cap: ["groups.own"] })).toMatchObject({ ok: false, code: 3, field: "cap" });
    // A blank narrowing is refused, not read as "keep the family's reduction" (or none).
    expect(await door.refresh(after.refreshToken, { cap: [" "] })).toMatchObject({ ok: false, code: 3, field: "cap" });
    expect(await door.refresh(after.refreshToken, { scopes: [",,"] })).toMatchObject({ ok: false, code: 3, field: "scopes" });
    expect(await snapshotDb(t)).toBe(before);
    expect(ok(await door.refresh(after.refreshToken, {})).token).not.toBe("");
  });

  it("a missing, malformed or unknown refresh token is UNAUTHENTICATED and writes nothing", async () => {
    const before = await snapshotDb(t);
    expect(await door.refresh(Buffer.from(JSON.stringify({ exp: 1, rt: "guess" })).toString("base64"), {})).toMatchObject({
      ok: false,
      code: 16,
      reason: "TOKEN_INVALID",
    });
    expect(await door.refresh("not base64 at all!", {})).toMatchObject({ ok: false, code: 16 });
    // An API token is not a refresh token.
    expect(await door.refresh(t.token, {})).toMatchObject({ ok: false, code: 16 });
    expect(await snapshotDb(t)).toBe(before);
  });

  it("refresh tokens go with their identity", async () => {
    const { sub, uid } = await newUser();
    const first = ok(await door.exchange(await idp.sign({ sub, aud: CLIENT_ID }), { refresh: "true" }));
    expect((await rows()).some((r) => r.identity_uid === uid)).toBe(true);
    await op("DELETE", `/iam/v2beta1/identities/${uid}`);
    expect((await rows()).some((r) => r.identity_uid === uid)).toBe(false);
    expect(await door.refresh(first.refreshToken, {})).toMatchObject({ ok: false, code: 16, reason: "TOKEN_INVALID" });
  });
});

describe("refresh token lifetime (server clock)", () => {
  it("one token lasts 7 days; a family at most 30 days however often it is rotated", async () => {
    // The lifetimes below are exact only if no real time passes between the calls.
    const resume = t.freezeClock();
    try {
      const { sub } = await newUser();
      const first = ok(await restDoor.exchange(await idp.sign({ sub, aud: CLIENT_ID }), { refresh: "true" }));
      t.advanceClock(8 * DAY_MS);
      expect(await restDoor.refresh(first.refreshToken, {})).toMatchObject({ ok: false, code: 16, reason: "TOKEN_EXPIRED" });
      t.advanceClock(-8 * DAY_MS);

      const { sub: sub2 } = await newUser();
      let current = ok(await restDoor.exchange(await idp.sign({ sub: sub2, aud: CLIENT_ID }), { refresh: "true" })).refreshToken;
      let moved = 0;
      for (const days of [6, 6, 6, 6, 5]) {
        t.advanceClock(days * DAY_MS);
        moved += days * DAY_MS;
        current = ok(await restDoor.refresh(current, {})).refreshToken;
      }
      // Rotated on day 29: the new token ends with the family on day 30, not 7 days later.
      const last = JSON.parse(Buffer.from(current, "base64").toString("utf8"));
      expect(last.exp - last.iat).toBe(24 * 3600);
      t.advanceClock(DAY_MS);
      moved += DAY_MS;
      expect(await restDoor.refresh(current, {})).toMatchObject({ ok: false, code: 16, reason: "TOKEN_EXPIRED" });
      t.advanceClock(-moved);
    } finally {
      resume();
    }
  });
});

describe("refresh and the identity provider's trust", () => {
  it("a refresh is refused once the user's identity provider is no longer trusted for sign-in", async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-refresh-trust-"));
    const issuerUrl = "https://trellis.example.test";
    const trusting = await startTestApp({ dataDir, issuerUrl, trust: { identityProviders: [{ issuer: idp.issuer, users: true, clientId: CLIENT_ID }] } });
    let refreshToken: string;
    try {
      const r = await rest(trusting.url, "GET", `/sts/exchange?aud=${encodeURIComponent(issuerUrl)}`, undefined, {
        authorization: `Bearer ${await idp.sign({ sub: "leaver", aud: CLIENT_ID })}`,
        [REFRESH_REQUEST_HEADER]: "true",
      });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      refreshToken = r.body.refreshToken;
    } finally {
      await trusting.close();
    }
    const distrusting = await startTestApp({ dataDir, issuerUrl, trust: { identityProviders: [] } });
    try {
      const before = await snapshotDb(distrusting);
      const r = await rest(distrusting.url, "POST", "/sts/exchange_refresh_token", `aud=${encodeURIComponent(issuerUrl)}`, {
        authorization: `Bearer ${refreshToken}`,
        "content-type": "application/x-www-form-urlencoded",
      });
      expect(r.status).toBe(401);
      expect(r.body.details[0].reason).toBe("TOKEN_INVALID");
      expect(await snapshotDb(distrusting)).toBe(before);
    } finally {
      await distrusting.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
