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
 * the expected audience, typ, required claims exp/iat/sub, a small clock tolerance, and
 * an `iat` no later than now. Keys come only from our own key set (createLocalJWKSet): an
 * embedded `jwk`/`jku`/`x5u` header is never followed. ANY failure becomes UNAUTHENTICATED
 * with an ErrorInfo reason, never INTERNAL (jose throws a bare TypeError on some paths).
 *
 * Verified tokens are cached by their exact string until they expire (bounded, oldest
 * evicted first), so a repeated token costs one Map lookup. The cache holds claims only; it
 * is no authorization cache (decisions are re-made on every call).
 */
import { randomUUID } from "node:crypto";
import { createLocalJWKSet, errors as joseErrors, type JWTPayload, jwtVerify, SignJWT } from "jose";
import { ApiError, GrpcCode } from "../errors/api-error.js";
import type { SigningKeySet } from "./signing-keys.js";
import { limitsFromClaims, type TokenLimits } from "./token-limits.js";

/** The JWT `typ` header of our API tokens (RFC 9068): an IdP ID token is never one. */
export const API_TOKEN_TYPE = "at+jwt";
/** Claim set only on operator tokens; only a holder of our signing key can make one. */
export const OPERATOR_CLAIM = "trellis_operator";
/** Tolerated clock skew when checking exp/iat (seconds). */
export const CLOCK_TOLERANCE_S = 30;

/**
 * True when `iat` lies further in the future than the clock skew allows. jose checks `exp`
 * and `nbf` but not `iat` (only with maxTokenAge), and a token "issued" later than now was
 * either minted by a clock that is wrong or made to outlive its apparent lifetime: both our
 * own tokens and identity providers' tokens are refused for it.
 */
export function issuedInTheFuture(iat: unknown, nowMs: number): boolean {
  return typeof iat === "number" && iat > nowMs / 1000 + CLOCK_TOLERANCE_S;
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
  /** The down-scoping the token carries (token-limits.ts); undefined when it has none. */
  readonly limits?: TokenLimits;
}

export interface MintOptions {
  readonly subject: string;
  readonly audience: string | readonly string[];
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
  /** Current key set; called per mint/verify so a reload (rotation) is seen. */
  readonly keys: () => SigningKeySet;
  /** Called once when a token names a kid we do not know, to pick up a rotation by another process. */
  readonly reloadKeys?: () => void;
  readonly now: () => number;
}

/** UNAUTHENTICATED with a reason clients can switch on; never says more than needed. */
export function tokenRejected(reason: string, description: string): ApiError {
  return new ApiError(GrpcCode.Unauthenticated, `Unauthenticated: ${description}`, { reason });
}

export function createTokenIssuer(options: TokenIssuerOptions): TokenIssuer {
  const { issuer, audience, now } = options;
  const cache = new Map<string, Caller>();
  let jwksFor: SigningKeySet | undefined;
  let localSet: ReturnType<typeof createLocalJWKSet> | undefined;

  const keySet = () => {
    const current = options.keys();
    if (current !== jwksFor) {
      jwksFor = current;
      localSet = createLocalJWKSet({ keys: current.all.map((k) => ({ ...k.publicJwk })) });
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
      try {
        ({ payload } = await verifyOnce());
      } catch (err) {
        if (!(err instanceof joseErrors.JWKSNoMatchingKey) || !options.reloadKeys) throw err;
        options.reloadKeys();
        ({ payload } = await verifyOnce());
      }
    } catch (err) {
      throw toUnauthenticated(err);
    }
    if (issuedInTheFuture(payload.iat, now())) throw tokenRejected("TOKEN_INVALID", "the token is not valid yet");
    if (typeof payload.sub !== "string" || payload.sub === "") throw tokenRejected("TOKEN_INVALID", "the token has no subject");
    const limits = limitsFromClaims(payload);
    if (limits === "invalid") throw tokenRejected("TOKEN_INVALID", "the token's down-scoping claims are malformed");
    const operator = payload[OPERATOR_CLAIM] === true;
    // Only exchanged tokens are down-scoped; an operator token never is, and one claiming both
    // is not a token this server made.
    if (operator && limits) throw tokenRejected("TOKEN_INVALID", "an operator token cannot be down-scoped");
    return limits
      ? { subject: payload.sub, operator, exp: payload.exp as number, limits }
      : { subject: payload.sub, operator, exp: payload.exp as number };
  }

  return {
    issuer,
    audience,

    async mint(o) {
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
      const hit = cache.get(token);
      if (hit !== undefined) {
        if (hit.exp + CLOCK_TOLERANCE_S > now() / 1000) return hit;
        cache.delete(token);
      }
      const caller = await verifyUncached(token);
      if (cache.size >= VERIFIED_CACHE_SIZE) {
        // Oldest insertion first: Map iterates in insertion order.
        const oldest = cache.keys().next().value;
        if (oldest !== undefined) cache.delete(oldest);
      }
      cache.set(token, caller);
      return caller;
    },

    jwks() {
      return { keys: options.keys().all.map((k) => ({ ...k.publicJwk })) };
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
