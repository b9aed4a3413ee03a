/**
 * A small OpenID Connect identity provider for tests: an ES256 key, discovery and JWKS served
 * on 127.0.0.1 (loopback http is allowed for issuers), and `sign` to issue ID tokens. Counts
 * the requests it gets, so tests can prove the server never contacted an untrusted issuer.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { type JWTPayload, SignJWT } from "jose";
import { newEs256KeyPair } from "./test-keys.js";

export interface TestIdp {
  readonly issuer: string;
  /** Requests served so far (discovery + JWKS). */
  readonly hits: () => number;
  /** An ID token from this IdP: iss, iat, exp (10 min) set unless overridden. */
  sign(claims: JWTPayload, options?: { kid?: string; expiresInS?: number }): Promise<string>;
  close(): Promise<void>;
}

export async function startTestIdp(): Promise<TestIdp> {
  const { privateKey, publicJwk } = newEs256KeyPair();
  const jwk = { ...publicJwk, kid: "idp-key-1", alg: "ES256", use: "sig" };
  let hits = 0;
  let issuer = "";
  const server = http.createServer((req, res) => {
    hits++;
    const body =
      req.url === "/.well-known/openid-configuration"
        ? { issuer, jwks_uri: `${issuer}/jwks`, id_token_signing_alg_values_supported: ["ES256"] }
        : req.url === "/jwks"
          ? { keys: [jwk] }
          : undefined;
    res.writeHead(body ? 200 : 404, { "content-type": "application/json" });
    res.end(JSON.stringify(body ?? {}));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    issuer,
    hits: () => hits,
    async sign(claims, options = {}) {
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT({ iss: issuer, iat: now, exp: now + (options.expiresInS ?? 600), ...claims })
        .setProtectedHeader({ alg: "ES256", kid: options.kid ?? jwk.kid, typ: "JWT" })
        .sign(privateKey);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
