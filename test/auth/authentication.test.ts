/**
 * Authentication on every door: gRPC (grpc-js), Connect (JSON and proto), gRPC-web and REST.
 * Every bad credential is UNAUTHENTICATED (HTTP 401 + `WWW-Authenticate: Bearer` on REST)
 * with an ErrorInfo reason — never INTERNAL — and writes nothing; a token in the URL is refused
 * even when it is valid, and never reaches the logs.
 */
import { createPublicKey } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import { ConnectError, createClient } from "@connectrpc/connect";
import { SignJWT } from "jose";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GroupsService } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { Health, HealthCheckResponse_ServingStatus } from "../../gen/grpc/health/v1/health_pb.js";
import { MAX_API_TOKEN_TTL_S } from "../../src/auth/token-lifetime.js";
import { API_TOKEN_TYPE, OPERATOR_CLAIM } from "../../src/auth/tokens.js";
import { DEFAULT_ERROR_DOMAIN } from "../../src/server/config.js";
import { startApp } from "../../src/server/create-app.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { serverSigningKey } from "../support/auth.js";
import { expectRejectedAndUnchanged } from "../support/db.js";
import { rest } from "../support/rest.js";
import { newEs256KeyPair } from "../support/test-keys.js";
import { closeGrpcClients, Code, rpcTransports } from "../support/transports.js";

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  closeGrpcClients();
  await t.close();
});

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64url");
const nowS = () => Math.floor(Date.now() / 1000);

/** A token signed with the server's real key, with the given claims and header changes. */
async function withServerKey(claims: Record<string, unknown>, header: Record<string, unknown> = {}) {
  const key = await serverSigningKey(t.dataDir);
  return new SignJWT({
    sub: "operator:test",
    [OPERATOR_CLAIM]: true,
    iss: t.app.issuer.issuer,
    aud: t.app.issuer.audience,
    iat: nowS(),
    exp: nowS() + 600,
    ...claims,
  })
    .setProtectedHeader({ alg: "ES256", kid: key.kid, typ: API_TOKEN_TYPE, ...header })
    .sign(key.privateKey);
}

/** Every way to present a bad credential, with the ErrorInfo reason it must get. */
const BAD: readonly { name: string; header: () => Promise<string | undefined>; reason: string }[] = [
  { name: "no Authorization header", header: async () => undefined, reason: "TOKEN_MISSING" },
  { name: "Basic credentials", header: async () => "Basic dXNlcjpwYXNz", reason: "TOKEN_INVALID" },
  { name: "Bearer with an empty value", header: async () => "Bearer ", reason: "TOKEN_INVALID" },
  { name: "two bearer tokens", header: async () => `Bearer ${t.token}, Bearer ${t.token}`, reason: "TOKEN_INVALID" },
  { name: "malformed token", header: async () => "Bearer not.a-jwt.at-all", reason: "TOKEN_INVALID" },
  { name: "expired token", header: async () => `Bearer ${await withServerKey({ iat: nowS() - 7200, exp: nowS() - 3600 })}`, reason: "TOKEN_EXPIRED" },
  { name: "wrong audience", header: async () => `Bearer ${await withServerKey({ aud: "https://registry.example.test" })}`, reason: "TOKEN_INVALID" },
  { name: "wrong issuer", header: async () => `Bearer ${await withServerKey({ iss: "https://evil.example.test" })}`, reason: "TOKEN_INVALID" },
  { name: "no exp claim", header: async () => `Bearer ${await withServerKey({ exp: undefined })}`, reason: "TOKEN_INVALID" },
  // Key retention and revocation entries last as long as the longest token mint makes (24 h):
  // a longer-lived token signed with our key would outlive both, so it is refused.
  {
    name: "exp 100 years away (signed with our key)",
    header: async () => `Bearer ${await withServerKey({ exp: nowS() + 100 * 365 * 86_400 })}`,
    reason: "TOKEN_INVALID",
  },
  {
    name: "a lifetime one second over 24 h",
    header: async () => `Bearer ${await withServerKey({ iat: nowS() - 60, exp: nowS() - 60 + MAX_API_TOKEN_TTL_S + 1 })}`,
    reason: "TOKEN_INVALID",
  },
  { name: "no iat claim", header: async () => `Bearer ${await withServerKey({ iat: undefined })}`, reason: "TOKEN_INVALID" },
  { name: "iat in the future", header: async () => `Bearer ${await withServerKey({ iat: nowS() + 3600, exp: nowS() + 7200 })}`, reason: "TOKEN_INVALID" },
  { name: "not an API token (typ JWT, as an IdP ID token)", header: async () => `Bearer ${await withServerKey({}, { typ: "JWT" })}`, reason: "TOKEN_INVALID" },
  {
    name: "alg none",
    header: async () => {
      const payload = { sub: "operator:x", [OPERATOR_CLAIM]: true, iss: t.app.issuer.issuer, aud: t.app.issuer.audience, iat: nowS(), exp: nowS() + 600 };
      return `Bearer ${b64({ alg: "none", typ: API_TOKEN_TYPE })}.${b64(payload)}.`;
    },
    reason: "TOKEN_INVALID",
  },
  {
    name: "HS256 signed with our public key",
    header: async () => {
      const pub = createPublicKey((await serverSigningKey(t.dataDir)).privateKey).export({ type: "spki", format: "pem" });
      const token = await new SignJWT({ [OPERATOR_CLAIM]: true })
        .setProtectedHeader({ alg: "HS256", kid: (await serverSigningKey(t.dataDir)).kid, typ: API_TOKEN_TYPE })
        .setSubject("operator:x")
        .setIssuer(t.app.issuer.issuer)
        .setAudience(t.app.issuer.audience)
        .setIssuedAt()
        .setExpirationTime("10m")
        .sign(new TextEncoder().encode(String(pub)));
      return `Bearer ${token}`;
    },
    reason: "TOKEN_INVALID",
  },
  ...["unknown-kid", "../../dev/null", "' OR 1=1--"].map((kid) => ({
    name: `attacker key with kid ${JSON.stringify(kid)}`,
    header: async () => `Bearer ${await attackerToken(kid)}`,
    reason: "TOKEN_INVALID",
  })),
  {
    name: "attacker key embedded as a jwk header with our kid",
    header: async () => {
      const { privateKey, publicJwk: jwk } = newEs256KeyPair();
      const token = await new SignJWT({ [OPERATOR_CLAIM]: true })
        .setProtectedHeader({ alg: "ES256", kid: (await serverSigningKey(t.dataDir)).kid, typ: API_TOKEN_TYPE, jwk })
        .setSubject("operator:x")
        .setIssuer(t.app.issuer.issuer)
        .setAudience(t.app.issuer.audience)
        .setIssuedAt()
        .setExpirationTime("10m")
        .sign(privateKey);
      return `Bearer ${token}`;
    },
    reason: "TOKEN_INVALID",
  },
];

async function attackerToken(kid: string): Promise<string> {
  const { privateKey } = newEs256KeyPair();
  return new SignJWT({ [OPERATOR_CLAIM]: true })
    .setProtectedHeader({ alg: "ES256", kid, typ: API_TOKEN_TYPE })
    .setSubject("operator:x")
    .setIssuer(t.app.issuer.issuer)
    .setAudience(t.app.issuer.audience)
    .setIssuedAt()
    .setExpirationTime("10m")
    .sign(privateKey);
}

function expectUnauthenticated(err: unknown, reason: string) {
  expect(err).toBeInstanceOf(ConnectError);
  const ce = err as ConnectError;
  expect(ce.code, ce.message).toBe(Code.Unauthenticated);
  const info = ce.findDetails(ErrorInfoSchema);
  expect(info[0]?.reason).toBe(reason);
  expect(info[0]?.domain).toBe(DEFAULT_ERROR_DOMAIN);
}

describe.each(rpcTransports)("authentication over $name", (transport) => {
  const client = () => createClient(GroupsService, transport.create(t.url, { token: null }));

  it.each(BAD)("$name: UNAUTHENTICATED with ErrorInfo, nothing written", async ({ header, reason }) => {
    const value = await header();
    const headers = value === undefined ? undefined : { authorization: value };
    const err = await expectRejectedAndUnchanged(t, () => client().createGroup({ group: { name: "intruder" } }, { headers }));
    expectUnauthenticated(err, reason);
    await client()
      .listGroups({}, { headers })
      .then(
        () => expect.fail("listGroups succeeded"),
        (e: unknown) => expectUnauthenticated(e, reason),
      );
  });

  it("accepts the operator token", async () => {
    const res = await client().listGroups({}, { headers: { authorization: `Bearer ${t.token}` } });
    expect(res.totalCount).toBeGreaterThanOrEqual(0n);
  });

  it(transport.name.startsWith("grpc (") ? "accepts a bare token, as the Go SDK sends it on gRPC" : "refuses a token without the Bearer scheme", async () => {
    const call = client().listGroups({}, { headers: { authorization: t.token } });
    if (transport.name.startsWith("grpc (")) await call;
    else
      await call.then(
        () => expect.fail("accepted"),
        (e: unknown) => expectUnauthenticated(e, "TOKEN_INVALID"),
      );
  });
});

describe("authentication over REST", () => {
  it("accepts a token signed with our key whose lifetime is exactly the longest mint gives (24 h)", async () => {
    const token = await withServerKey({ iat: nowS() - 60, exp: nowS() - 60 + MAX_API_TOKEN_TTL_S });
    expect((await rest(t.url, "GET", "/iam/v2beta1/groups", undefined, { authorization: `Bearer ${token}` })).status).toBe(200);
  });

  it.each(BAD)("$name: 401 with WWW-Authenticate and an AIP-193 body, nothing written", async ({ header, reason }) => {
    const value = await header();
    const headers = { authorization: value ?? "" };
    const res = (await expectRejectedAndUnchanged(t, async () => {
      const r = await rest(t.url, "POST", "/iam/v2beta1/groups", { name: "intruder" }, headers);
      if (r.status < 400) throw new Error(`expected a failure, got ${r.status}`);
      throw r;
    })) as Awaited<ReturnType<typeof rest>>;
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toBe("Bearer");
    expect(res.body.code).toBe(16);
    expect(res.body.details[0]).toMatchObject({ "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason, domain: DEFAULT_ERROR_DOMAIN });
    const list = await rest(t.url, "GET", "/iam/v2beta1/groups", undefined, headers);
    expect(list.status).toBe(401);
  });

  it("a token in the query string is refused even when valid, with or without a header", async () => {
    for (const param of ["access_token", "token", "ACCESS_TOKEN", "id_token"]) {
      const noHeader = await rest(t.url, "GET", `/iam/v2beta1/groups?${param}=${t.token}`, undefined, { authorization: "" });
      expect(noHeader.status).toBe(401);
      expect(noHeader.body.details[0].reason).toBe("TOKEN_IN_URL");
      const withHeader = await rest(t.url, "GET", `/iam/v2beta1/groups?${param}=${t.token}`);
      expect(withHeader.status).toBe(401);
    }
  });
});

describe("a token in the URL on the RPC doors", () => {
  it("Connect: refused as UNAUTHENTICATED even with a valid header", async () => {
    const res = await fetch(`${t.url}/chainguard.platform.iam.v2beta1.GroupsService/ListGroups?access_token=${t.token}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${t.token}` },
      body: "{}",
    });
    expect(res.status).toBe(401);
    const body = await res.json();
    expect(body.code).toBe("unauthenticated");
  });
});

describe("tokens never reach the logs", () => {
  it("neither a header token nor one in the URL appears in any log line", async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-authlog-"));
    let logged = "";
    const sink = new Writable({
      write(chunk, _enc, done) {
        logged += String(chunk);
        done();
      },
    });
    const app = await startApp(
      { host: "127.0.0.1", port: 0, dataDir, errorDomain: DEFAULT_ERROR_DOMAIN, logLevel: "trace" },
      { log: pino({ level: "trace" }, sink) },
    );
    try {
      const token = await app.issuer.mint({ subject: "operator:log", audience: app.issuer.audience, ttlSeconds: 600, operator: true });
      await rest(app.url, "GET", "/iam/v2beta1/groups", undefined, { authorization: `Bearer ${token}` });
      await rest(app.url, "GET", `/iam/v2beta1/groups?access_token=${token}`, undefined, { authorization: "" });
      await rest(app.url, "GET", "/iam/v2beta1/groups", undefined, { authorization: `Bearer ${token}x` });
      expect(logged).toContain('"call"'); // the call log ran
      expect(logged).not.toContain(token.split(".")[2]);
      expect(logged).not.toContain(token.split(".")[1]);
    } finally {
      await app.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe("what needs no token", () => {
  it.each(rpcTransports)("health answers over $name without a token", async (transport) => {
    const health = createClient(Health, transport.create(t.url, { token: null }));
    expect((await health.check({ service: "" })).status).toBe(HealthCheckResponse_ServingStatus.SERVING);
  });

  it("the issuer documents and the OpenAPI description are public", async () => {
    for (const p of ["/.well-known/jwks.json", "/.well-known/openid-configuration", "/openapi.json"]) {
      const response = await fetch(`${t.url}${p}`);
      // Read to the end: on Node 24, fetch throws an uncaught assertion when the server closes
      // a connection whose response body was never consumed.
      await response.arrayBuffer();
      expect(response.status, p).toBe(200);
    }
  });
});

describe("the issuer's public documents", () => {
  it("serves JWKS and OIDC discovery that verify our tokens", async () => {
    const discovery = await (await fetch(`${t.url}/.well-known/openid-configuration`)).json();
    expect(discovery.issuer).toBe(t.app.issuer.issuer);
    expect(discovery.jwks_uri).toBe(`${t.app.issuer.issuer}/.well-known/jwks.json`);
    expect(discovery.id_token_signing_alg_values_supported).toEqual(["ES256"]);
    expect(Array.isArray(discovery.trellis_user_idps)).toBe(true);
    const jwks = await (await fetch(discovery.jwks_uri)).json();
    expect(jwks.keys).toHaveLength(1);
    expect(jwks.keys[0]).toMatchObject({ kty: "EC", crv: "P-256", alg: "ES256", use: "sig", kid: (await serverSigningKey(t.dataDir)).kid });
    expect(jwks.keys[0].d).toBeUndefined(); // never the private part
    const { createLocalJWKSet, jwtVerify } = await import("jose");
    const { payload } = await jwtVerify(t.token, createLocalJWKSet(jwks), { issuer: discovery.issuer, audience: t.app.issuer.audience });
    expect(payload.sub).toBe("operator:operator");
  });
});
