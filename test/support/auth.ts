/**
 * Tokens for tests. Every test server gets an operator token (minted with the server's own
 * key, exactly as `trellis auth token --local` does) that the support clients send by
 * default, so tests about other features need not think about authentication. Auth tests opt
 * out per call: `rest(..., { authorization: "" })` sends no header, a transport created with
 * `{ token: null }` sends none, and any explicit `authorization` header wins.
 */
import { mintLocalOperatorToken } from "../../src/auth/local-token.js";
import { loadSigningKeys, type SigningKey } from "../../src/auth/signing-keys.js";
import type { App } from "../../src/server/create-app.js";
import { openStore } from "../../src/store/open.js";
import { storeOfTestApp } from "./store-target.js";
import { MAX_API_TOKEN_TTL_S } from "../../src/auth/token-lifetime.js";

const defaultTokens = new Map<string, string>();

/**
 * Operator tokens of test servers live as long as any token may (24 hours); a test that moves
 * the server clock further mints a new one at the moved time (operatorToken's `now`).
 */
export const TEST_OPERATOR_TTL_S = MAX_API_TOKEN_TTL_S;

function originOf(url: string): string {
  return new URL(url).origin;
}

/** Makes `token` the default for requests to `baseUrl`'s origin. */
export function setDefaultToken(baseUrl: string, token: string): void {
  defaultTokens.set(originOf(baseUrl), token);
}

/** The default token for a URL's origin, if a test server registered one. */
export function defaultToken(url: string): string | undefined {
  return defaultTokens.get(originOf(url));
}

/** `{authorization: "Bearer …"}` for the default token, or `{}`. */
export function defaultAuthHeaders(url: string): Record<string, string> {
  const token = defaultToken(url);
  return token ? { authorization: `Bearer ${token}` } : {};
}

/** An operator token for the server on `dataDir` (the CLI's code path), issued at `now` (ms; default the wall clock). */
export function operatorToken(dataDir: string, subject?: string, now?: () => number): Promise<string> {
  return mintLocalOperatorToken({ store: storeOfTestApp(dataDir), subject, ttlSeconds: TEST_OPERATOR_TTL_S, now });
}

/** The server's active signing key, read from its data directory (for forging test tokens). */
export async function serverSigningKey(dataDir: string): Promise<SigningKey> {
  const store = await openStore({ ...storeOfTestApp(dataDir), access: "read-only" });
  try {
    const keys = await loadSigningKeys(store.serverValues);
    if (!keys) throw new Error("the server has no signing key yet");
    return keys.active;
  } finally {
    await store.close();
  }
}

/**
 * A user identity (a root, as login creates them) for `subject` at `issuer`, written through
 * a second connection to the running server's database (WAL allows it).
 */
export async function createUserIdentity(dataDir: string, subject: string, issuer = "https://idp.example.test"): Promise<string> {
  const store = await openStore({ ...storeOfTestApp(dataDir), access: "beside" });
  try {
    const user = await store.repositories.identities.findOrCreateUser({ issuer, subject, name: subject, email: "" }, Date.now());
    return user.uid;
  } finally {
    await store.close();
  }
}

/** An API token for an identity, minted by the running server's issuer (1 hour). */
export function identityToken(app: App, identityUid: string): Promise<string> {
  return app.issuer.mint({ subject: identityUid, audience: app.issuer.audience, ttlSeconds: 3600 });
}
