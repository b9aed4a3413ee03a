/**
 * The issuer on its own: keys in the database (created once, shared, rotated with the old key
 * still verifying until it is pruned), the verified-token cache honouring expiry, and the
 * trust config file's validation.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { decodeJwt } from "jose";
import { afterEach, describe, expect, it } from "vitest";
import { loadOrCreateSigningKeys, loadSigningKeys, rotateSigningKey } from "../../../src/auth/signing-keys.js";
import { createTokenIssuer } from "../../../src/auth/tokens.js";
import { saveIssuerSettings } from "../../../src/auth/issuer-settings.js";
import { mintLocalOperatorToken } from "../../../src/auth/local-token.js";
import { MAX_API_TOKEN_TTL_S } from "../../../src/auth/token-lifetime.js";
import { loadTrustConfig, toTrustConfig } from "../../../src/auth/trust-config.js";
import { parseServeConfig } from "../../../src/server/config.js";
import type { StoreEngine } from "../../../src/store/engine.js";
import { openStore } from "../../../src/store/open.js";

const dirs: string[] = [];
const opened: StoreEngine[] = [];
async function freshDb() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-keys-"));
  dirs.push(dir);
  const o = await openStore({ dataDir: dir });
  opened.push(o);
  return { dir, db: o.serverValues };
}
afterEach(async () => {
  for (const o of opened.splice(0)) await o.close();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

const ISS = "https://trellis.example.test";

describe("signing keys", () => {
  it("are created once and read back identically (restart, second process)", async () => {
    const { db } = await freshDb();
    expect(await loadSigningKeys(db)).toBeUndefined();
    const first = await loadOrCreateSigningKeys(db, 1000);
    const again = await loadOrCreateSigningKeys(db, 2000);
    expect(again.active.kid).toBe(first.active.kid);
    expect(first.active.publicJwk).toMatchObject({ kty: "EC", crv: "P-256", alg: "ES256" });
    expect(Object.keys(first.active.publicJwk)).not.toContain("d");
  });

  it("rotation signs with the new key, still verifies the old one, and prunes it after the retention", async () => {
    const { db } = await freshDb();
    let now = Date.now();
    let keys = await loadOrCreateSigningKeys(db, now);
    const issuer = createTokenIssuer({ issuer: ISS, audience: ISS, keys: () => keys, now: () => now });
    const old = await issuer.mint({ subject: "operator:a", audience: ISS, ttlSeconds: 3600 });
    keys = await rotateSigningKey(db, now, 3600_000);
    expect(keys.all).toHaveLength(2);
    const fresh = await issuer.mint({ subject: "operator:b", audience: ISS, ttlSeconds: 3600 });
    expect(JSON.parse(Buffer.from(fresh.split(".")[0] as string, "base64url").toString()).kid).toBe(keys.active.kid);
    expect((await issuer.verify(old)).subject).toBe("operator:a");
    expect(
      issuer
        .jwks()
        .keys.map((k) => k.kid)
        .sort(),
    ).toEqual(keys.all.map((k) => k.kid).sort());
    now += 2 * 3600_000;
    keys = await rotateSigningKey(db, now, 3600_000);
    // The first key retired two hours ago: gone. The second retired just now: kept.
    expect(keys.all).toHaveLength(2);
    expect(keys.all.map((k) => k.kid)).not.toContain(JSON.parse(Buffer.from(old.split(".")[0] as string, "base64url").toString()).kid);
  });

  it("a cached token still expires", async () => {
    const { db } = await freshDb();
    let now = Date.now();
    const keys = await loadOrCreateSigningKeys(db, now);
    const issuer = createTokenIssuer({ issuer: ISS, audience: ISS, keys: () => keys, now: () => now });
    const token = await issuer.mint({ subject: "operator:a", audience: ISS, ttlSeconds: 60 });
    await issuer.verify(token); // cached now
    now += 10 * 60_000;
    await expect(issuer.verify(token)).rejects.toMatchObject({ code: 16, reason: "TOKEN_EXPIRED" });
  });
});

describe("the maximum token lifetime (24 hours, enforced where every token is signed)", () => {
  it("mint refuses a lifetime above 24 h, or not a whole positive number of seconds, with INVALID_ARGUMENT on ttl; 24 h itself is minted", async () => {
    const { db } = await freshDb();
    const now = Date.now();
    const keys = await loadOrCreateSigningKeys(db, now);
    const issuer = createTokenIssuer({ issuer: ISS, audience: ISS, keys: () => keys, now: () => now });
    for (const ttlSeconds of [MAX_API_TOKEN_TTL_S + 1, 30 * 86400, Number.POSITIVE_INFINITY, Number.NaN, 0, -1, 1.5]) {
      for (const operator of [false, true]) {
        const err = await issuer.mint({ subject: "operator:a", audience: ISS, ttlSeconds, operator }).catch((e: unknown) => e);
        expect(err, `ttl ${ttlSeconds}`).toMatchObject({ code: 3, fieldViolations: [{ field: "ttl" }] });
      }
    }
    const longest = decodeJwt(await issuer.mint({ subject: "operator:a", audience: ISS, ttlSeconds: MAX_API_TOKEN_TTL_S, operator: true }));
    expect((longest.exp as number) - (longest.iat as number)).toBe(24 * 3600);
  });

  it("a local operator token above 24 h is refused by the minting function itself, not only by the CLI's flag", async () => {
    const { dir, db } = await freshDb();
    await loadOrCreateSigningKeys(db, Date.now());
    await saveIssuerSettings(db, { issuer: ISS, audience: ISS }, Date.now());
    await expect(mintLocalOperatorToken({ store: { dataDir: dir }, ttlSeconds: MAX_API_TOKEN_TTL_S + 1 })).rejects.toMatchObject({
      code: 3,
      fieldViolations: [{ field: "ttl" }],
    });
    const token = decodeJwt(await mintLocalOperatorToken({ store: { dataDir: dir }, ttlSeconds: MAX_API_TOKEN_TTL_S }));
    expect((token.exp as number) - (token.iat as number)).toBe(MAX_API_TOKEN_TTL_S);
  });
});

describe("trust config", () => {
  it("reads identity providers and the registry audience", () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "trellis-cfg-")), "trellis.yaml");
    dirs.push(path.dirname(file));
    fs.writeFileSync(
      file,
      "registry_audience: registry.example.test\nidentity_providers:\n  - issuer: https://accounts.google.com\n    users: true\n    client_id: abc\n  - issuer: http://127.0.0.1:5556\n    jwks_uri: http://127.0.0.1:5556/keys\n",
    );
    expect(loadTrustConfig(file)).toEqual({
      registryAudience: "registry.example.test",
      identityProviders: [
        { issuer: "https://accounts.google.com", users: true, clientId: "abc" },
        { issuer: "http://127.0.0.1:5556", jwksUri: "http://127.0.0.1:5556/keys", users: false },
      ],
    });
  });

  it("serve reads it with --config or TRELLIS_CONFIG, and refuses a bad file or issuer URL up front", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-cfg-"));
    dirs.push(dir);
    const good = path.join(dir, "good.yaml");
    fs.writeFileSync(good, "identity_providers:\n  - issuer: https://idp.example.test\n    users: true\n");
    const bad = path.join(dir, "bad.yaml");
    fs.writeFileSync(bad, "identity_providers: [{issuer: ftp://x}]\n");
    expect(parseServeConfig(["--config", good], {}).trust?.identityProviders[0]?.issuer).toBe("https://idp.example.test");
    expect(parseServeConfig([], { TRELLIS_CONFIG: good }).trust?.identityProviders).toHaveLength(1);
    expect(() => parseServeConfig(["--config", bad], {})).toThrow(/issuer must be an absolute https URL/);
    expect(parseServeConfig(["--issuer-url", "https://api.example.test/"], {}).issuerUrl).toBe("https://api.example.test");
    expect(() => parseServeConfig(["--issuer-url", "https://api.example.test/?x=1"], {})).toThrow(/--issuer-url/);
  });

  it.each([
    [{ identity_provider: [] }, /unknown key "identity_provider"/],
    [{ identity_providers: [{ issuer: "http://idp.example.com" }] }, /issuer must be an absolute https URL/],
    [{ identity_providers: [{ issuer: "https://a.example", users: "yes" }] }, /users must be true or false/],
    [{ identity_providers: [{ issuer: "https://a.example", clientid: "x" }] }, /unknown key "clientid"/],
    [{ identity_providers: [{ issuer: "https://a.example" }, { issuer: "https://a.example" }] }, /listed twice/],
  ])("refuses %j", (doc, message) => {
    expect(() => toTrustConfig(doc, "trellis.yaml")).toThrow(message);
  });
});
