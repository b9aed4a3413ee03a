/**
 * A small OpenID provider for login tests: discovery, JWKS, an authorize endpoint that
 * "logs the user in" at once and redirects back with a code, a token endpoint for the code
 * (PKCE S256 checked), refresh and device grants, and a device endpoint that is approved
 * immediately. id_tokens are RS256 JWTs signed with a key made per IdP (test-keys.ts).
 *
 * The "browser" in a test is an HTTP client following the authorize redirect. (idp.ts is the
 * smaller IdP the server-side auth tests use: discovery, JWKS and signing, no login flows.)
 */
import { createHash, randomBytes } from "node:crypto";
import http from "node:http";
import { type JWK, SignJWT } from "jose";
import { newRs256KeyPair } from "./test-keys.js";

export interface FakeIdp {
  readonly issuer: string;
  readonly clientId: string;
  /** The public key set (what a relying party verifies id_tokens with). */
  readonly jwks: { keys: JWK[] };
  /** id_token lifetime in seconds for tokens issued from now on. */
  idTokenTtl: number;
  /** Subject the authorize endpoint logs in. */
  subject: string;
  /** Counters of what clients asked for, and the scope of the last authorization request. */
  readonly stats: { codes: number; refreshes: number; devices: number; lastScope: string };
  /** Makes every refresh token issued so far unusable. */
  revokeRefreshTokens(): void;
  /** Signs an id_token-like JWT (e.g. a CI job's identity token). */
  sign(claims: Record<string, unknown>, ttlSeconds?: number): Promise<string>;
  close(): Promise<void>;
}

export async function startFakeIdp(options: { device?: boolean; clientId?: string } = {}): Promise<FakeIdp> {
  const clientId = options.clientId ?? "trellis-cli";
  const { privateKey, publicJwk } = newRs256KeyPair();
  const jwk = { ...publicJwk, kid: "k1", alg: "RS256", use: "sig" };
  const codes = new Map<string, { challenge: string; redirectUri: string; scope: string }>();
  const refreshTokens = new Set<string>();
  const deviceCodes = new Set<string>();
  let issuer = "";

  const idp: FakeIdp = {
    get issuer() {
      return issuer;
    },
    clientId,
    jwks: { keys: [jwk] },
    idTokenTtl: 3600,
    subject: "alice",
    stats: { codes: 0, refreshes: 0, devices: 0, lastScope: "" },
    revokeRefreshTokens: () => refreshTokens.clear(),
    sign: (claims, ttl = idp.idTokenTtl) =>
      new SignJWT({ ...claims })
        .setProtectedHeader({ alg: "RS256", kid: "k1" })
        .setIssuer(issuer)
        .setIssuedAt()
        .setExpirationTime(Math.floor(Date.now() / 1000) + ttl)
        .sign(privateKey),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };

  const tokens = async (scope: string) => {
    const body: Record<string, unknown> = {
      access_token: randomBytes(16).toString("hex"),
      token_type: "Bearer",
      expires_in: idp.idTokenTtl,
      // The email claims only when the scope asked for them, as many IdPs do.
      id_token: await idp.sign({
        sub: idp.subject,
        aud: clientId,
        ...(scope.split(" ").includes("email") && { email: `${idp.subject}@example.test`, email_verified: true }),
      }),
    };
    if (scope.split(" ").includes("offline_access")) {
      const refresh = randomBytes(16).toString("hex");
      refreshTokens.add(refresh);
      body.refresh_token = refresh;
    }
    return body;
  };

  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url ?? "/", issuer);
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/json", "cache-control": "no-store" }).end(JSON.stringify(body));
    };
    const form = async () => {
      let text = "";
      for await (const chunk of req) text += chunk;
      return new URLSearchParams(text);
    };
    if (url.pathname === "/.well-known/openid-configuration") {
      return send(200, {
        issuer,
        authorization_endpoint: `${issuer}/authorize`,
        token_endpoint: `${issuer}/token`,
        jwks_uri: `${issuer}/jwks`,
        ...(options.device && { device_authorization_endpoint: `${issuer}/device` }),
        response_types_supported: ["code"],
        subject_types_supported: ["public"],
        id_token_signing_alg_values_supported: ["RS256"],
        code_challenge_methods_supported: ["S256"],
        scopes_supported: ["openid", "email", "offline_access"],
        token_endpoint_auth_methods_supported: ["none"],
      });
    }
    if (url.pathname === "/jwks") return send(200, idp.jwks);
    if (url.pathname === "/authorize") {
      const p = url.searchParams;
      if (p.get("client_id") !== clientId || p.get("code_challenge_method") !== "S256" || !p.get("code_challenge")) {
        return send(400, { error: "invalid_request" });
      }
      const code = randomBytes(16).toString("hex");
      idp.stats.lastScope = p.get("scope") ?? "";
      codes.set(code, { challenge: p.get("code_challenge")!, redirectUri: p.get("redirect_uri")!, scope: p.get("scope") ?? "" });
      const back = new URL(p.get("redirect_uri")!);
      back.searchParams.set("code", code);
      back.searchParams.set("state", p.get("state") ?? "");
      res.writeHead(302, { location: back.href }).end();
      return;
    }
    if (url.pathname === "/device" && options.device && req.method === "POST") {
      const p = await form();
      const deviceCode = randomBytes(16).toString("hex");
      deviceCodes.add(`${deviceCode} ${p.get("scope") ?? ""}`);
      idp.stats.devices++;
      return send(200, {
        device_code: deviceCode,
        user_code: "ABCD-EFGH",
        verification_uri: `${issuer}/activate`,
        expires_in: 600,
        interval: 1,
      });
    }
    if (url.pathname === "/token" && req.method === "POST") {
      const p = await form();
      if (p.get("client_id") !== clientId) return send(401, { error: "invalid_client" });
      switch (p.get("grant_type")) {
        case "authorization_code": {
          const entry = codes.get(p.get("code") ?? "");
          codes.delete(p.get("code") ?? "");
          const verifier = p.get("code_verifier") ?? "";
          const challenge = createHash("sha256").update(verifier).digest("base64url");
          if (!entry || entry.redirectUri !== p.get("redirect_uri") || entry.challenge !== challenge) {
            return send(400, { error: "invalid_grant" });
          }
          idp.stats.codes++;
          return send(200, await tokens(entry.scope));
        }
        case "refresh_token": {
          const refresh = p.get("refresh_token") ?? "";
          if (!refreshTokens.has(refresh)) return send(400, { error: "invalid_grant", error_description: "refresh token revoked" });
          refreshTokens.delete(refresh);
          idp.stats.refreshes++;
          return send(200, await tokens("openid email offline_access"));
        }
        case "urn:ietf:params:oauth:grant-type:device_code": {
          const entry = [...deviceCodes].find((d) => d.startsWith(`${p.get("device_code")} `));
          if (!entry) return send(400, { error: "invalid_grant" });
          deviceCodes.delete(entry);
          return send(200, await tokens(entry.slice(entry.indexOf(" ") + 1)));
        }
      }
      return send(400, { error: "unsupported_grant_type" });
    }
    send(404, { error: "not_found" });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  issuer = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return idp;
}
