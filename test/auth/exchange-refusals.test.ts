/**
 * Tokens the exchange must not take, on every door of it (gRPC, Connect, gRPC-web, REST GET
 * and form POST):
 * - an identity provider's token "issued" in the future beyond the clock skew allowance
 *   (CLOCK_TOLERANCE_S): a wrong IdP clock, or a token made to outlive its apparent life;
 * - one of this server's own API tokens: the wrong kind of credential, so UNAUTHENTICATED
 *   (401), not the PERMISSION_DENIED of an untrusted issuer it used to fall through to;
 * - a user sign-in whose sub, name or email claim (what the user identity stores) holds a NUL
 *   (U+0000), which PostgreSQL text cannot hold: refused alike on every engine.
 *
 * The server's clock is moved (TestApp.advanceClock) instead of waiting: the fake IdP signs
 * with `iat` = its real now, so a server clock set back N seconds sees `iat` N seconds ahead.
 */
import { decodeJwt } from "jose";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { SecurityTokenService } from "../../gen/chainguard/platform/oidc/oidc_pb.js";
import { CLOCK_TOLERANCE_S } from "../../src/auth/tokens.js";
import { builtInRoleUid } from "../../src/store/builtin-roles.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { snapshotDb } from "../support/db.js";
import { type FakeIdp, startFakeIdp } from "../support/fake-idp.js";
import { rest } from "../support/rest.js";
import { exchangeDoors } from "../support/exchange-doors.js";
import { closeGrpcClients } from "../support/transports.js";

const CLIENT_ID = "trellis-cli";
const SUBJECT = "repo:acme/app:ref:refs/heads/main";

let t: TestApp;
let idp: FakeIdp;
let identity: string;
let clockOffset = 0;

beforeAll(async () => {
  idp = await startFakeIdp({ clientId: CLIENT_ID });
  t = await startTestApp({ trust: { identityProviders: [{ issuer: idp.issuer, users: true, clientId: CLIENT_ID }] } });
  const org = (await rest(t.url, "POST", "/iam/v2beta1/groups", { name: "acme" })).body.uid;
  identity = (await rest(t.url, "POST", `/iam/v2beta1/identities/${org}`, { name: "deployer", claimMatch: { issuer: idp.issuer, subject: SUBJECT } })).body.uid;
  await rest(t.url, "POST", `/iam/v2beta1/roleBindings/${org}`, { identityUid: identity, roleUid: builtInRoleUid("viewer") });
});
afterEach(() => setServerClock(0));
afterAll(async () => {
  closeGrpcClients();
  await t?.close();
  await idp?.close();
});

/** Sets the server's clock to real time + `ms`. */
function setServerClock(ms: number): void {
  t.advanceClock(ms - clockOffset);
  clockOffset = ms;
}

interface Result {
  readonly token?: string;
  readonly code?: number;
  readonly reason?: string;
  readonly message?: string;
  readonly status?: number;
}

const api = () => t.app.issuer.audience;

/** Exchange on each of its doors (test/support/exchange-doors.ts). */
const DOORS = exchangeDoors.map((door) => ({
  name: door.name,
  async exchange(presented: string, identity: string): Promise<Result> {
    const out = await door.call(t.url, presented, SecurityTokenService.method.exchange, { aud: [api()], identity });
    if (out.ok) return { token: String(out.body.token), status: out.status };
    return { code: out.code, reason: out.reason, message: out.message, status: out.status };
  },
}));

describe.each(DOORS)("the exchange over $name", (door) => {
  it("refuses an IdP token whose iat is beyond the clock skew in the future, and takes one within it", async () => {
    const before = await snapshotDb(t);
    for (const id of [identity, ""]) {
      // The IdP's "now" is CLOCK_TOLERANCE_S + 15 s after the server's.
      setServerClock(-(CLOCK_TOLERANCE_S + 15) * 1000);
      const idToken = await idp.sign({ sub: id ? SUBJECT : "future-user", aud: id ? t.app.issuer.issuer : CLIENT_ID });
      const refused = await door.exchange(idToken, id);
      expect(refused, `identity=${id}`).toMatchObject({ code: 16, reason: "TOKEN_INVALID" });
      expect(refused.message).toContain("issued in the future");
      if (refused.status !== undefined) expect(refused.status).toBe(401);
    }
    // Nothing recorded: no lastSeenTime, no user identity created.
    expect(await snapshotDb(t)).toBe(before);

    // Within the allowance (15 s ahead) the same exchange works.
    setServerClock(-(CLOCK_TOLERANCE_S - 15) * 1000);
    const ok = await door.exchange(await idp.sign({ sub: SUBJECT, aud: t.app.issuer.issuer }), identity);
    expect(ok.code, ok.message).toBeUndefined();
    expect(decodeJwt(ok.token as string).sub).toBe(identity);
  });

  it("refuses a user sign-in whose sub, name or email claim holds a NUL (U+0000), creating no identity", async () => {
    const before = await snapshotDb(t);
    const claims = [
      { claim: "sub", token: { sub: `nul\u0000user-${door.name}` } },
      { claim: "name", token: { sub: `nul-name-${door.name}`, name: "Ada\u0000Lovelace" } },
      { claim: "email", token: { sub: `nul-email-${door.name}`, email: "ada\u0000@example.com", email_verified: true } },
    ];
    for (const { claim, token } of claims) {
      const refused = await door.exchange(await idp.sign({ ...token, aud: CLIENT_ID }), "");
      expect(refused, claim).toMatchObject({ code: 16, reason: "TOKEN_INVALID" });
      expect(refused.message).toContain(`the presented token's ${claim} claim holds a NUL character (U+0000)`);
      if (refused.status !== undefined) expect(refused.status).toBe(401);
    }
    expect(await snapshotDb(t)).toBe(before);
    // The same sign-in without the NUL creates the user.
    const ok = await door.exchange(await idp.sign({ sub: `nul-name-${door.name}`, name: "Ada Lovelace", aud: CLIENT_ID }), "");
    expect(ok.code, ok.message).toBeUndefined();
  });

  it("answers one of our own API tokens with UNAUTHENTICATED (401), with or without identity", async () => {
    // The operator's token, and a token this very exchange issued to the identity.
    const issued = await door.exchange(await idp.sign({ sub: SUBJECT, aud: t.app.issuer.issuer }), identity);
    expect(issued.code, issued.message).toBeUndefined();
    const before = await snapshotDb(t);
    for (const ours of [t.token, issued.token as string]) {
      for (const id of [identity, ""]) {
        const res = await door.exchange(ours, id);
        expect(res, `identity=${id}`).toMatchObject({ code: 16, reason: "TOKEN_INVALID" });
        expect(res.message).toContain("cannot be exchanged");
        if (res.status !== undefined) expect(res.status).toBe(401);
      }
    }
    expect(await snapshotDb(t)).toBe(before);
  });
});
