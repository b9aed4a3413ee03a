/**
 * Verifying tokens from OUTSIDE identity providers (the token exchange's input).
 *
 * Keys are fetched only for issuers we were told about, never for whatever `iss` a presented
 * token claims (no server-side request forgery): an issuer named in the trust config, or the
 * exact `claimMatch.issuer` of the identity being assumed. For a trusted issuer without a
 * configured `jwks_uri` the key set URL comes from its `/.well-known/openid-configuration`,
 * whose `issuer` must equal the issuer exactly. Every URL must be https, except on loopback
 * hosts (local IdPs, tests). Redirects are not followed.
 *
 * jose's remote key set does the rest: a fetch timeout, a cool-down between refetches (a
 * flood of tokens with unknown `kid`s costs at most one fetch per cool-down), caching.
 * Failures are sorted for the caller: an unreachable IdP is UNAVAILABLE (retryable; the SDK
 * retries exactly that), a bad token is UNAUTHENTICATED.
 */
import { createLocalJWKSet, createRemoteJWKSet, errors as joseErrors, type JWTPayload, jwtVerify } from "jose";
import { ApiError, GrpcCode, unavailable } from "../errors/api-error.js";
import { checkIssuerUrl } from "./claim-match.js";
import { CLOCK_TOLERANCE_S, issuedInTheFuture, tokenRejected } from "./tokens.js";

/** Asymmetric algorithms accepted from IdPs (never HS*, never none). */
export const IDP_ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"];
/** Pinned network limits for IdP fetches. */
export const IDP_FETCH = { timeoutMs: 5_000, cooldownMs: 30_000, cacheMaxAgeMs: 10 * 60_000, maxIssuers: 1_000, maxDocumentBytes: 64 * 1024 } as const;

/** Reads at most `max` bytes of a response body as text. @throws Error when it is longer. */
async function boundedText(res: Response, max: number): Promise<string> {
  const reader = res.body?.getReader();
  if (!reader) return "";
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > max) {
      await reader.cancel();
      throw new Error(`document larger than ${max} bytes`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString("utf8");
}

type KeySet = ReturnType<typeof createRemoteJWKSet>;

export interface IdpVerifier {
  /**
   * Verifies `token` as issued by `issuer` (signature, exp/nbf and an `iat` not in the future
   * beyond the clock skew, sub, `iss` exact), fetching
   * the issuer's keys if needed. `aud` is the caller's business (matchesClaims).
   * @throws UNAUTHENTICATED for a bad token; UNAVAILABLE when the IdP cannot be reached.
   */
  verify(token: string, issuer: string, jwksUri?: string): Promise<JWTPayload>;
  /** Verifies against a key set given inline (static-keys identities). */
  verifyWithKeys(token: string, issuer: string, jwks: { keys: object[] }): Promise<JWTPayload>;
}

export function createIdpVerifier(now: () => number): IdpVerifier {
  const keySets = new Map<string, Promise<KeySet>>();
  /** When discovery last failed per issuer: no refetch within the cool-down (no hammering). */
  const failedAt = new Map<string, number>();

  async function discover(issuer: string): Promise<string> {
    const last = failedAt.get(issuer);
    if (last !== undefined && now() - last < IDP_FETCH.cooldownMs) {
      throw unavailable(`the identity provider ${issuer} could not be reached recently; retry later`, { metadata: { issuer } });
    }
    try {
      const uri = await discoverOnce(issuer);
      failedAt.delete(issuer);
      return uri;
    } catch (err) {
      if (failedAt.size >= IDP_FETCH.maxIssuers) failedAt.delete(failedAt.keys().next().value as string);
      failedAt.set(issuer, now());
      throw err;
    }
  }

  async function discoverOnce(issuer: string): Promise<string> {
    const url = `${issuer.replace(/\/+$/, "")}/.well-known/openid-configuration`;
    let doc: { issuer?: unknown; jwks_uri?: unknown };
    try {
      const res = await fetch(url, { redirect: "error", signal: AbortSignal.timeout(IDP_FETCH.timeoutMs), headers: { accept: "application/json" } });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      doc = JSON.parse(await boundedText(res, IDP_FETCH.maxDocumentBytes)) as typeof doc;
    } catch (err) {
      throw unavailable(`the identity provider ${issuer} could not be reached`, { cause: err, metadata: { issuer } });
    }
    if (doc.issuer !== issuer || typeof doc.jwks_uri !== "string" || checkIssuerUrl("jwks_uri", doc.jwks_uri)) {
      throw unavailable(`the identity provider ${issuer} publishes no usable discovery document`, { metadata: { issuer } });
    }
    return doc.jwks_uri;
  }

  function keySetFor(issuer: string, jwksUri: string | undefined): Promise<KeySet> {
    const key = `${issuer}\n${jwksUri ?? ""}`;
    let entry = keySets.get(key);
    if (!entry) {
      entry = (async () =>
        createRemoteJWKSet(new URL(jwksUri ?? (await discover(issuer))), {
          timeoutDuration: IDP_FETCH.timeoutMs,
          cooldownDuration: IDP_FETCH.cooldownMs,
          cacheMaxAge: IDP_FETCH.cacheMaxAgeMs,
        }))();
      // A failed discovery is not cached: the next exchange tries again.
      entry.catch(() => keySets.delete(key));
      if (keySets.size >= IDP_FETCH.maxIssuers) keySets.delete(keySets.keys().next().value as string);
      keySets.set(key, entry);
    }
    return entry;
  }

  async function run(token: string, issuer: string, keys: Parameters<typeof jwtVerify>[1]): Promise<JWTPayload> {
    try {
      const { payload } = await jwtVerify(token, keys as never, {
        algorithms: IDP_ALGORITHMS,
        issuer,
        requiredClaims: ["exp", "iat", "sub"],
        clockTolerance: CLOCK_TOLERANCE_S,
        currentDate: new Date(now()),
      });
      if (issuedInTheFuture(payload.iat, now())) {
        throw tokenRejected("TOKEN_INVALID", "the identity provider token is issued in the future (iat beyond the allowed clock skew)");
      }
      if (typeof payload.sub !== "string" || payload.sub === "") throw tokenRejected("TOKEN_INVALID", "the identity provider token has no subject");
      return payload;
    } catch (err) {
      if (err instanceof ApiError) throw err;
      if (
        err instanceof joseErrors.JWKSTimeout ||
        (err instanceof joseErrors.JOSEError && err.code === "ERR_JOSE_GENERIC") ||
        (err instanceof TypeError && /fetch/i.test(err.message))
      ) {
        throw unavailable(`the identity provider ${issuer} could not be reached`, { cause: err, metadata: { issuer } });
      }
      if (err instanceof joseErrors.JWTExpired) throw tokenRejected("TOKEN_EXPIRED", "the identity provider token has expired");
      throw tokenRejected("TOKEN_INVALID", "the identity provider token could not be verified");
    }
  }

  return {
    async verify(token, issuer, jwksUri) {
      if (checkIssuerUrl("issuer", issuer)) throw new ApiError(GrpcCode.PermissionDenied, "Permission denied: the issuer is not one this server may contact");
      return run(token, issuer, await keySetFor(issuer, jwksUri));
    },
    async verifyWithKeys(token, issuer, jwks) {
      let keys: ReturnType<typeof createLocalJWKSet>;
      try {
        keys = createLocalJWKSet(jwks as never);
      } catch {
        throw tokenRejected("TOKEN_INVALID", "the identity's registered keys cannot verify tokens");
      }
      return run(token, issuer, keys);
    },
  };
}
