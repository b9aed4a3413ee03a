/**
 * The token exchange (docs/published-api.md "The token exchange") on every door: gRPC, Connect,
 * gRPC-web, and REST `GET /sts/exchange` plus the form-encoded POST. An identity-provider
 * token started inside the test (test/support/idp.ts) is traded for a 1-hour API token.
 */
import { createClient } from "@connectrpc/connect";
import { decodeJwt } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GroupsService } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { SecurityTokenService } from "../../gen/chainguard/platform/oidc/oidc_pb.js";
import { builtInRoleUid } from "../../src/store/builtin-roles.js";
import { userIdentityUid } from "../../src/store/identities.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { exchangeDoors } from "../support/exchange-doors.js";
import { snapshotDb } from "../support/db.js";
import { startTestIdp, type TestIdp } from "../support/idp.js";
import { rest } from "../support/rest.js";
import { closeGrpcClients, rpcTransports } from "../support/transports.js";

const REGISTRY = "registry.example.test";
const CLIENT_ID = "trellis-cli";
const SUBJECT = "repo:acme/app:ref:refs/heads/main";

let t: TestApp;
let idp: TestIdp;
let stranger: TestIdp; // an IdP nobody trusts
let org: string;
let exact: string; // identity: exact issuer + subject
let pattern: string; // identity: exact issuer, subject pattern

async function op(method: string, path: string, body?: unknown) {
  const r = await rest(t.url, method, path, body);
  if (r.status !== 200) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

beforeAll(async () => {
  idp = await startTestIdp();
  stranger = await startTestIdp();
  t = await startTestApp({
    trust: { registryAudience: REGISTRY, identityProviders: [{ issuer: idp.issuer, users: true, clientId: CLIENT_ID }] },
  });
  org = (await op("POST", "/iam/v2beta1/groups", { name: "acme" })).uid;
  exact = (await op("POST", `/iam/v2beta1/identities/${org}`, { name: "deployer", claimMatch: { issuer: idp.issuer, subject: SUBJECT } })).uid;
  pattern = (
    await op("POST", `/iam/v2beta1/identities/${org}`, {
      name: "any branch",
      claimMatch: { issuer: idp.issuer, subjectPattern: "repo:acme/app:ref:refs/heads/.*" },
    })
  ).uid;
  await op("POST", `/iam/v2beta1/roleBindings/${org}`, { identityUid: exact, roleUid: builtInRoleUid("viewer") });
});
afterAll(async () => {
  closeGrpcClients();
  await t.close();
  await idp.close();
  await stranger.close();
});

interface ExchangeResult {
  readonly token?: string;
  readonly code?: number;
  readonly reason?: string;
  readonly message?: string;
  readonly field?: string;
}

/**
 * Exchange on each of its doors (test/support/exchange-doors.ts); failures come back as
 * code/reason instead of throwing. `presented` undefined sends no Authorization header.
 */
const doors = exchangeDoors.map((door) => ({
  name: door.name,
  async exchange(presented: string | undefined, aud: string[], identity = ""): Promise<ExchangeResult> {
    const out = await door.call(t.url, presented ?? null, SecurityTokenService.method.exchange, { aud, identity });
    if (!out.ok) return { code: out.code, reason: out.reason, message: out.message, field: out.fields[0] };
    if (out.status !== undefined) {
      // REST: exactly the RawToken shape, which the SDK parses strictly (docs/published-api.md "The token exchange").
      expect(Object.keys(out.body)).toContain("token");
      expect(Object.keys(out.body).filter((k) => !["token", "refreshToken", "expiry"].includes(k))).toEqual([]);
    }
    return { token: String(out.body.token) };
  },
}));
const restDoors = doors.filter((d) => d.name.startsWith("rest"));
const api = () => t.app.issuer.audience;

describe.each(doors)("token exchange over $name", (door) => {
  it("trades a matching IdP token for a 1-hour API token that works on the API", async () => {
    const idToken = await idp.sign({ sub: SUBJECT, aud: t.app.issuer.issuer });
    const before = Date.now();
    const res = await door.exchange(idToken, [api()], exact);
    expect(res.code, res.message).toBeUndefined();
    const claims = decodeJwt(res.token as string);
    expect(claims).toMatchObject({ iss: t.app.issuer.issuer, sub: exact, aud: api() });
    expect((claims.exp as number) - (claims.iat as number)).toBe(3600);
    expect(claims.act).toMatchObject({ iss: idp.issuer, sub: SUBJECT });
    // The identity is bound viewer at the org: the token sees it.
    const groups = createClient(GroupsService, rpcTransports[1]!.create(t.url, { token: res.token as string }));
    expect((await groups.getGroup({ uid: org })).name).toBe("acme");
    const seen = (await op("GET", `/iam/v2beta1/identities/${exact}`)).lastSeenTime;
    expect(Date.parse(seen)).toBeGreaterThanOrEqual(before - 1000);
  });

  it("matches a subject pattern", async () => {
    const idToken = await idp.sign({ sub: "repo:acme/app:ref:refs/heads/feature-1", aud: t.app.issuer.issuer });
    const res = await door.exchange(idToken, [api()], pattern);
    expect(res.code, res.message).toBeUndefined();
    expect(decodeJwt(res.token as string).sub).toBe(pattern);
  });

  it("a mismatch and an unknown identity get the same PERMISSION_DENIED and change nothing", async () => {
    const before = await snapshotDb(t);
    const wrongSubject = await door.exchange(await idp.sign({ sub: "repo:evil/app:ref:refs/heads/main", aud: t.app.issuer.issuer }), [api()], exact);
    const wrongAudience = await door.exchange(await idp.sign({ sub: SUBJECT, aud: "https://other-relying-party.test" }), [api()], exact);
    const fromStranger = await door.exchange(await stranger.sign({ sub: SUBJECT, aud: t.app.issuer.issuer }), [api()], exact);
    const unknown = await door.exchange(await idp.sign({ sub: SUBJECT, aud: t.app.issuer.issuer }), [api()], `${org}/0123456789abcdef`);
    for (const r of [wrongSubject, wrongAudience, fromStranger, unknown]) {
      expect(r).toEqual({ code: 7, reason: "IDENTITY_NOT_ASSUMABLE", message: unknown.message, field: undefined });
    }
    expect(await snapshotDb(t)).toBe(before);
    expect(stranger.hits()).toBe(0); // an untrusted issuer is never contacted
  });

  it("an IdP token with a bad signature is UNAUTHENTICATED", async () => {
    const forged = await stranger.sign({ iss: idp.issuer, sub: SUBJECT, aud: t.app.issuer.issuer }, { kid: "idp-key-1" });
    const res = await door.exchange(forged, [api()], exact);
    expect(res).toMatchObject({ code: 16, reason: "TOKEN_INVALID" });
    expect((await door.exchange(undefined, [api()], exact)).code).toBe(16);
  });

  it("a missing or foreign aud is INVALID_ARGUMENT naming aud", async () => {
    const idToken = await idp.sign({ sub: SUBJECT, aud: t.app.issuer.issuer });
    expect(await door.exchange(idToken, [], exact)).toMatchObject({ code: 3, reason: "INVALID_ARGUMENT", field: "aud" });
    expect(await door.exchange(idToken, ["https://evil.example.test"], exact)).toMatchObject({ code: 3, field: "aud" });
  });

  it("aud=<registry host> gives a registry-audience token, which the API refuses", async () => {
    const res = await door.exchange(await idp.sign({ sub: SUBJECT, aud: t.app.issuer.issuer }), [REGISTRY], exact);
    expect(decodeJwt(res.token as string).aud).toBe(REGISTRY);
    const call = await rest(t.url, "GET", `/iam/v2beta1/groups/${org}`, undefined, { authorization: `Bearer ${res.token}` });
    expect(call.status).toBe(401);
  });

  it("without identity, a trusted user IdP's token signs the user in, creating the user identity once", async () => {
    const sub = `user-${door.name.replace(/[^a-z]/g, "")}`;
    const idToken = await idp.sign({ sub, aud: CLIENT_ID, email: `${sub}@example.test`, email_verified: true });
    const first = await door.exchange(idToken, [api()]);
    expect(first.code, first.message).toBeUndefined();
    const uid = userIdentityUid(idp.issuer, sub);
    expect(decodeJwt(first.token as string).sub).toBe(uid);
    const again = await door.exchange(idToken, [api()]);
    expect(decodeJwt(again.token as string).sub).toBe(uid);
    const user = await op("GET", `/iam/v2beta1/identities/${uid}`);
    expect(user).toMatchObject({ uid, email: `${sub}@example.test` });
    // A signed-in user may found an organization and owns it.
    const founded = await rest(t.url, "POST", "/iam/v2beta1/groups", { name: `${sub}-org` }, { authorization: `Bearer ${first.token}` });
    expect(founded.status).toBe(200);
    // The user's token must be meant for us (its client id).
    const foreign = await door.exchange(await idp.sign({ sub, aud: "someone-else" }), [api()]);
    expect(foreign).toMatchObject({ code: 16 });
    // A token from an issuer not trusted for users is refused without contacting it.
    const untrusted = await door.exchange(await stranger.sign({ sub, aud: CLIENT_ID }), [api()]);
    expect(untrusted).toMatchObject({ code: 7, reason: "UNTRUSTED_ISSUER" });
    expect(stranger.hits()).toBe(0);
  });
});

describe("reaching identity providers", () => {
  it("an IdP that cannot be reached is UNAVAILABLE (retryable), not a token error", async () => {
    const down = "http://127.0.0.1:1"; // nothing listens on port 1
    const id = (await op("POST", `/iam/v2beta1/identities/${org}`, { name: "down idp", claimMatch: { issuer: down, subject: SUBJECT } })).uid;
    const res = await restDoors[0]!.exchange(await idp.sign({ iss: down, sub: SUBJECT, aud: t.app.issuer.issuer }), [api()], id);
    expect(res).toMatchObject({ code: 14, reason: "UNAVAILABLE" });
  });

  it("a flood of tokens with unknown kids costs at most one key fetch per cool-down", async () => {
    const good = await restDoors[0]!.exchange(await idp.sign({ sub: SUBJECT, aud: t.app.issuer.issuer }), [api()], exact);
    expect(good.token).toBeDefined(); // keys cached
    const before = idp.hits();
    for (let i = 0; i < 20; i++) {
      const res = await restDoors[0]!.exchange(await idp.sign({ sub: SUBJECT, aud: t.app.issuer.issuer }, { kid: `rotated-${i}` }), [api()], exact);
      expect(res).toMatchObject({ code: 16 });
    }
    expect(idp.hits() - before).toBeLessThanOrEqual(1);
  });
});

describe("the exchange and the rest of the server", () => {
  it("discovery lists the trusted user IdPs that have a client id (CLI contract)", async () => {
    const doc = await (await fetch(`${t.url}/.well-known/openid-configuration`)).json();
    expect(doc.trellis_user_idps).toEqual([{ issuer: idp.issuer, client_id: CLIENT_ID }]);
  });

  it("refuses an IdP token in the URL", async () => {
    const idToken = await idp.sign({ sub: SUBJECT, aud: t.app.issuer.issuer });
    const res = await rest(t.url, "GET", `/sts/exchange?aud=${encodeURIComponent(api())}&identity=${exact}&access_token=${idToken}`, undefined, {
      authorization: "",
    });
    expect(res.status).toBe(401);
    expect(res.body.details[0].reason).toBe("TOKEN_IN_URL");
  });

  it("an exchanged token stops working after one hour (this test moves the server clock; keep it last)", async () => {
    const res = await restDoors[0]!.exchange(await idp.sign({ sub: SUBJECT, aud: t.app.issuer.issuer }), [api()], exact);
    const ok = await rest(t.url, "GET", `/iam/v2beta1/groups/${org}`, undefined, { authorization: `Bearer ${res.token}` });
    expect(ok.status).toBe(200);
    t.advanceClock(3600 * 1000 + 60 * 1000);
    const late = await rest(t.url, "GET", `/iam/v2beta1/groups/${org}`, undefined, { authorization: `Bearer ${res.token}` });
    expect(late.status).toBe(401);
    expect(late.body.details[0].reason).toBe("TOKEN_EXPIRED");
  });
});
