/**
 * Trellis's own API tokens: minting and verification (the issuer side of docs/auth.md).
 *
 * A token is a JWS compact JWT signed ES256 with the newest key from signing-keys.ts, header
 * `{alg: "ES256", kid, typ: "at+jwt"}`, claims `iss`, `sub` (identity uid, or
 * `operator:<name>`), `aud`, `iat`, `exp`, `jti`, `trellis_operator: true` on operator
 * tokens, and `trellis_cap` / `trellis_scopes` on down-scoped ones (token-limits.ts).
 *
 * Verification pins everything jose would otherwise let through (docs/auth.md
 * "Tokens", docs/security.md "Authentication"): algorithms ["ES256"] (no `none`, no HS256 made with our public key), our issuer,
 * the expected audience, typ, required claims exp/iat/sub, a small clock tolerance, an
 * `iat` no later than now, and a lifetime (`exp - iat`) no longer than mint gives. Keys come only from our own key set (createLocalJWKSet): an
 * embedded `jwk`/`jku`/`x5u` header is never followed. ANY failure becomes UNAUTHENTICATED
 * with an ErrorInfo reason, never INTERNAL (jose throws a bare TypeError on some paths).
 *
 * Verified tokens are cached by their exact string until they expire (bounded, oldest
 * evicted first), so a repeated token costs one Map lookup. The cache holds claims only; it
 * is no authorization cache (decisions are re-made on every call), and the revocation list
 * is consulted on every call, cache hit or not, so a revoked token fails at once.
 *
 * Only keys that still verify at the current time are used (signing-keys.ts: a key retires
 * once every token it signed has expired), so a retired key, leaked or not, signs nothing
 * this server accepts, and the JWKS stops publishing it.
 */
import { randomUUID } from "node:crypto";
import { createLocalJWKSet, errors as joseErrors, type JWTPayload, jwtVerify, SignJWT } from "jose";
import { ApiError, GrpcCode, invalidField } from "../errors/api-error.js";
import type { RevocationList } from "../store/token-revocations.js";
import { type SigningKeySet, verifyingKeys } from "./signing-keys.js";
import { CLOCK_TOLERANCE_S, MAX_API_TOKEN_TTL_S } from "./token-lifetime.js";
import { limitsFromClaims, type TokenLimits } from "./token-limits.js";
import type { Reason } from "../errors/reasons.js";

/** The JWT `typ` header of our API tokens (RFC 9068): an IdP ID token is never one. */
export const API_TOKEN_TYPE = "at+jwt";
/** Claim set only on operator tokens; only a holder of our signing key can make one. */
export const OPERATOR_CLAIM = "trellis_operator";
export { CLOCK_TOLERANCE_S };

/**
 * True when `iat` lies further in the future than the clock skew allows. jose checks `exp`
 * and `nbf` but not `iat` (only with maxTokenAge), and a token "issued" later than now was
 * either minted by a clock that is wrong or made to outlive its apparent lifetime: both our
 * own tokens and identity providers' tokens are refused for it.
 */
export function issuedInTheFuture(iat: unknown, nowMs: number): boolean {
  return typeof iat === "number" && iat > nowMs / 1000 + CLOCK_TOLERANCE_S;
}
/**
 * True when `exp - iat` is a lifetime `mint` could have given (at most MAX_API_TOKEN_TTL_S).
 * Signing-key retention and revocation entries are sized to that bound (token-lifetime.ts),
 * so a token that claims more (signed with our key by a path that skipped `mint`, an old
 * build, or a key that leaked) would outlive both and come back after a rotation or a
 * revocation: it is refused whatever its `exp`. With `iat` not in the future (checked
 * before), this also bounds `exp` to now + 24 h. jose has checked both are numbers.
 */
function withinMintLifetime(payload: JWTPayload): boolean {
  return typeof payload.iat === "number" && typeof payload.exp === "number" && payload.exp - payload.iat <= MAX_API_TOKEN_TTL_S;
}
/** How many verified tokens the cache keeps. */
export const VERIFIED_CACHE_SIZE = 10_000;

/** Who a verified API token speaks for. */
export interface Caller {
  /** The `sub` claim: an identity uid, or `operator:<name>` for operator tokens. */
  readonly subject: string;
  /** True for tokens minted by `trellis auth token --local`: owner of everything. */
  readonly operator: boolean;
  /** Expiry, seconds since the epoch. */
  readonly exp: number;
  /** Issue time, seconds since the epoch (revoking every token of a subject compares it). */
  readonly iat: number;
  /** The token's id, to revoke this one token; absent only on tokens made elsewhere. */
  readonly jti?: string;
  /** The down-scoping the token carries (token-limits.ts); undefined when it has none. */
  readonly limits?: TokenLimits;
}

export interface MintOptions {
  readonly subject: string;
  readonly audience: string | readonly string[];
  /** Whole seconds, 1 to MAX_API_TOKEN_TTL_S (24 hours); anything else is refused. */
  readonly ttlSeconds: number;
  readonly operator?: boolean;
  /** Extra public claims (e.g. `act` on assumed-identity tokens). */
  readonly claims?: Readonly<Record<string, unknown>>;
}

export interface TokenIssuer {
  readonly issuer: string;
  /** The audience API tokens must carry to be accepted by this server. */
  readonly audience: string;
  mint(options: MintOptions): Promise<string>;
  /** @throws ApiError UNAUTHENTICATED on any problem with the token. */
  verify(token: string): Promise<Caller>;
  /** The public key set (JWKS document). */
  jwks(): { keys: SigningKeySet["all"][number]["publicJwk"][] };
}

export interface TokenIssuerOptions {
  readonly issuer: string;
  readonly audience: string;
  /**
   * Current key set; called per mint/verify so a rotation is seen (the server's reads the
   * database again whenever another process changed it, src/auth/setup.ts).
   */
  readonly keys: () => SigningKeySet;
  /**
   * The revocations in force; called on every verification, right after `keys()` in the same
   * synchronous step (so both may come from one change check), and must be cheap.
   */
  readonly revocations?: () => RevocationList;
  readonly now: () => number;
}

/**
 * Refuses a lifetime outside 1 s..MAX_API_TOKEN_TTL_S (INVALID_ARGUMENT on `ttl`): a longer
 * token would stay valid after its signing key retires and after its revocation entry is
 * dropped, so a revoked or rotated-away token could come back.
 */
export function checkTokenLifetime(ttlSeconds: number): void {
  if (!Number.isInteger(ttlSeconds) || ttlSeconds < 1 || ttlSeconds > MAX_API_TOKEN_TTL_S) {
    throw invalidField("ttl", `must be a whole number of seconds from 1 to ${MAX_API_TOKEN_TTL_S} (24 hours); got ${String(ttlSeconds)}`);
  }
}

/** UNAUTHENTICATED with a reason clients can switch on; never says more than needed. */
export function tokenRejected(reason: Reason, description: string): ApiError {
  return new ApiError(GrpcCode.Unauthenticated, `Unauthenticated: ${description}`, { reason });
}

export function createTokenIssuer(options: TokenIssuerOptions): TokenIssuer {
  const { issuer, audience, now } = options;
  const cache = new Map<string, Caller>();
  let jwksFor: SigningKeySet | undefined;
  let localSet: ReturnType<typeof createLocalJWKSet> | undefined;
  // The earliest retirement among the keys in localSet: past it, the set is rebuilt without that key.
  let nextRetire = Number.POSITIVE_INFINITY;

  const keySet = () => {
    const current = options.keys();
    const t = now();
    if (current !== jwksFor || t >= nextRetire) {
      jwksFor = current;
      const keys = verifyingKeys(current, t);
      nextRetire = Math.min(...keys.map((k) => k.retireTime ?? Number.POSITIVE_INFINITY));
      localSet = createLocalJWKSet({ keys: keys.map((k) => ({ ...k.publicJwk })) });
    }
    return localSet as ReturnType<typeof createLocalJWKSet>;
  };

  async function verifyUncached(token: string): Promise<Caller> {
    const verifyOnce = () =>
      jwtVerify(token, keySet(), {
        algorithms: ["ES256"],
        issuer,
        audience,
        typ: API_TOKEN_TYPE,
        requiredClaims: ["exp", "iat", "sub"],
        clockTolerance: CLOCK_TOLERANCE_S,
        currentDate: new Date(now()),
      });
    let payload: JWTPayload;
    try {
      ({ payload } = await verifyOnce());
    } catch (err) {
      throw toUnauthenticated(err);
    }
    if (issuedInTheFuture(payload.iat, now())) throw tokenRejected("TOKEN_INVALID", "the token is not valid yet");
    if (!withinMintLifetime(payload)) throw tokenRejected("TOKEN_INVALID", "the token's lifetime is longer than this server issues");
    if (typeof payload.sub !== "string" || payload.sub === "") throw tokenRejected("TOKEN_INVALID", "the token has no subject");
    const limits = limitsFromClaims(payload);
    if (limits === "invalid") throw tokenRejected("TOKEN_INVALID", "the token's down-scoping claims are malformed");
    const operator = payload[OPERATOR_CLAIM] === true;
    // Only exchanged tokens are down-scoped; an operator token never is, and one claiming both
    // is not a token this server made.
    if (operator && limits) throw tokenRejected("TOKEN_INVALID", "an operator token cannot be down-scoped");
    const base = { subject: payload.sub, operator, exp: payload.exp as number, iat: payload.iat as number };
    const withJti = typeof payload.jti === "string" ? { ...base, jti: payload.jti } : base;
    return limits ? { ...withJti, limits } : withJti;
  }

  const notRevoked = (caller: Caller): Caller => {
    if (options.revocations?.().isRevoked(caller)) throw tokenRejected("TOKEN_REVOKED", "the token has been revoked");
    return caller;
  };

  // The cache holds tokens verified with the key set of its time; when the set changes (a
  // rotation that dropped a key at once, a key retiring) it starts over, so no token signed
  // by a key that no longer verifies is served from it.
  let cachedUnder: SigningKeySet | undefined;
  let cachedUntil = Number.POSITIVE_INFINITY;
  const checkCacheKeys = () => {
    const current = options.keys();
    const t = now();
    if (current !== cachedUnder || t >= cachedUntil) {
      cache.clear();
      cachedUnder = current;
      cachedUntil = Math.min(...verifyingKeys(current, t).map((k) => k.retireTime ?? Number.POSITIVE_INFINITY));
    }
  };

  return {
    issuer,
    audience,

    async mint(o) {
      // The one place every token we sign passes, so no path (exchange, refresh, local
      // operator tokens, tests, a future caller) can outlive the bound that signing-key
      // retention and the revocation list rely on (token-lifetime.ts).
      checkTokenLifetime(o.ttlSeconds);
      const { active } = options.keys();
      const iat = Math.floor(now() / 1000);
      const claims: JWTPayload = { ...o.claims };
      if (o.operator) claims[OPERATOR_CLAIM] = true;
      return new SignJWT(claims)
        .setProtectedHeader({ alg: "ES256", kid: active.kid, typ: API_TOKEN_TYPE })
        .setIssuer(issuer)
        .setSubject(o.subject)
        .setAudience(typeof o.audience === "string" ? o.audience : [...o.audience])
        .setIssuedAt(iat)
        .setExpirationTime(iat + o.ttlSeconds)
        .setJti(randomUUID())
        .sign(active.privateKey);
    },

    async verify(token) {
      checkCacheKeys();
      const hit = cache.get(token);
      if (hit !== undefined) {
        if (hit.exp + CLOCK_TOLERANCE_S > now() / 1000) return notRevoked(hit);
        cache.delete(token);
      }
      const under = cachedUnder;
      const caller = await verifyUncached(token);
      if (cache.size >= VERIFIED_CACHE_SIZE) {
        // Oldest insertion first: Map iterates in insertion order.
        const oldest = cache.keys().next().value;
        if (oldest !== undefined) cache.delete(oldest);
      }
      // Not if the key set changed while this verification awaited (the cache was restarted).
      if (cachedUnder === under) cache.set(token, caller);
      return notRevoked(caller);
    },

    jwks() {
      return { keys: verifyingKeys(options.keys(), now()).map((k) => ({ ...k.publicJwk })) };
    },
  };
}

/** Maps any verification failure to UNAUTHENTICATED; only expiry gets its own reason. */
function toUnauthenticated(err: unknown): ApiError {
  if (err instanceof joseErrors.JWTExpired) return tokenRejected("TOKEN_EXPIRED", "the token has expired");
  if (err instanceof joseErrors.JWTClaimValidationFailed) {
    return tokenRejected("TOKEN_INVALID", `the token's "${err.claim}" claim is not accepted here`);
  }
  return tokenRejected("TOKEN_INVALID", "the token is not a valid API token for this server");
}
