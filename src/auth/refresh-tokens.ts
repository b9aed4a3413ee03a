/**
 * Refresh tokens: their format, how one is presented, and their lifetimes (docs/auth.md
 * "Refresh tokens"; storage in src/store/refresh-tokens.ts, the RPCs in src/services/oidc/exchange.ts).
 *
 * Format: standard base64 of a JSON object `{iss, sub, aud, iat, exp, rt}`, where `rt` is 32
 * random bytes (base64url). Not a JWT and not signed: the published SDK reads a refresh
 * token's expiry by base64-decoding the whole string and reading `exp`, so the readable
 * fields are for the client. The server never trusts them: it looks the token up by the
 * SHA-256 of the whole string and uses only the stored row. Guessing one means guessing
 * 256 random bits.
 */
import { randomBytes } from "node:crypto";
import { secretHash } from "./secret-hash.js";
import { tokenRejected } from "./tokens.js";

/** How long one refresh token may be used (each rotation issues a new one). */
export const REFRESH_TOKEN_TTL_S = 7 * 24 * 60 * 60;
/** How long a family lives from its exchange, however often it is rotated: sign in again after. */
export const REFRESH_FAMILY_TTL_S = 30 * 24 * 60 * 60;
/**
 * The request header with which an Exchange asks for a refresh token. The published
 * ExchangeRequest has no field for it (hosted clients get theirs from the browser login),
 * so it is a header, which every door carries (gRPC metadata included).
 */
export const REFRESH_REQUEST_HEADER = "trellis-request-refresh-token";

/** Standard base64, bounded: what a refresh token of ours looks like on the wire. */
const REFRESH_SHAPE = /^[A-Za-z0-9+/]{16,2048}={0,2}$/;
const BEARER = /^Bearer +(\S+)$/i;

export interface RefreshTokenClaims {
  readonly iss: string;
  readonly sub: string;
  readonly aud: string | readonly string[];
  readonly iat: number;
  readonly exp: number;
}

/** A new refresh token string for the claims. */
export function newRefreshToken(claims: RefreshTokenClaims): string {
  return Buffer.from(JSON.stringify({ ...claims, rt: randomBytes(32).toString("base64url") })).toString("base64");
}

/** What is stored for a token: its SHA-256, hex. */
export function refreshTokenHash(token: string): string {
  return secretHash(token);
}

/**
 * The refresh token from the Authorization header: `Bearer <token>` (bare on gRPC, as the
 * SDK's token clients may send it). @throws UNAUTHENTICATED when missing or malformed.
 */
export function presentedRefreshToken(header: string | null, protocol: string): string {
  if (header === null || header.trim() === "") {
    throw tokenRejected("TOKEN_MISSING", "ExchangeRefreshToken needs the refresh token in the Authorization header (Bearer)");
  }
  if (header.includes(",")) throw tokenRejected("TOKEN_INVALID", "the Authorization header must carry exactly one credential, not several");
  const m = BEARER.exec(header.trim());
  const token = m ? m[1] : protocol === "grpc" ? header.trim() : undefined;
  if (token === undefined || !REFRESH_SHAPE.test(token)) {
    throw tokenRejected("TOKEN_INVALID", 'the Authorization header must be "Bearer <refresh token>"');
  }
  return token;
}
