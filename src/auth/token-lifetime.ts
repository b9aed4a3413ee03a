/**
 * The bounds every API token this server issues lives within. Key rotation depends on them:
 * an old signing key is kept (and published) exactly as long as a token it signed can still
 * be valid, and a token revocation is remembered exactly as long as the token could be
 * presented. No token outlives MAX_API_TOKEN_TTL_S: the issuer's mint (tokens.ts), which
 * every token we sign goes through, refuses a longer lifetime with INVALID_ARGUMENT. An
 * exchanged or refreshed token lasts one hour (src/services/oidc/exchange.ts), a local operator token one hour
 * by default and at most 24 hours (the CLI's `--ttl` refuses more as a usage error first).
 */

/** Tolerated clock skew when checking exp/iat (seconds). */
export const CLOCK_TOLERANCE_S = 30;

/** The longest lifetime of any API token issued through Trellis's own paths (seconds). */
export const MAX_API_TOKEN_TTL_S = 24 * 60 * 60;

/**
 * How long a token revocation is remembered: after this no token it names can still be
 * presented (src/store/token-revocations.ts keeps each entry exactly this long).
 */
export const REVOCATION_RETENTION_MS = (MAX_API_TOKEN_TTL_S + CLOCK_TOLERANCE_S) * 1000;
