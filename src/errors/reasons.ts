/**
 * Every ErrorInfo.reason Trellis sends, in one closed set.
 *
 * Clients switch on `reason`, so a reason is part of the API: a typo or a new spelling made up
 * at a call site would be a silent break. Making the set a type means the compiler refuses a
 * reason that is not listed: a reason is a code's canonical name (codes.ts) or one of the
 * specific reasons below (docs/published-api.md "Errors" says what each means to a client).
 */
import type { CodeName } from "./codes.js";

/** Reasons more specific than the code. */
export const SPECIFIC_REASONS = [
  // The request itself
  "INVALID_AUTHORITY", // Host / :authority missing or not host[:port]
  "UNKNOWN_SERVICE", // no such service on this server
  "UNKNOWN_METHOD", // the service is known, the method is not
  "METHOD_NOT_ALLOWED", // REST: the path exists, the HTTP method does not
  "API_VERSION_GONE", // the method's API version (v1) is past its sunset (--v1-sunset)
  // Credentials
  "TOKEN_MISSING",
  "TOKEN_IN_URL", // a token in the query string is refused, never used
  "TOKEN_INVALID",
  "TOKEN_EXPIRED",
  "TOKEN_REVOKED",
  "REFRESH_TOKEN_REUSED", // a rotated refresh token came back: its whole family is revoked
  "UNTRUSTED_ISSUER", // the exchange was shown a token from an issuer not trusted for sign-in
  "IDENTITY_NOT_ASSUMABLE", // the presented token matches no assumable identity
  // Authorization
  "TOKEN_DOWN_SCOPED", // the role grants it, the token's own cap/scopes do not
  "PRIVILEGE_ESCALATION", // the write would grant more than the caller holds
  "OPERATOR_ONLY_FIELD", // only the server's operator may set this field
  "TOKEN_REVOCATION_DENIED",
  // Rate limits (src/server/rate-limits.ts)
  "RATE_LIMIT_EXCEEDED", // RESOURCE_EXHAUSTED: the caller (or its peer address) spent its quota; QuotaFailure and RetryInfo follow
  // Concurrency
  "ETAG_MISMATCH",
  // Storage: the write did not happen, try again later
  "STORAGE_BUSY",
  "STORAGE_FULL",
  "STORAGE_UNAVAILABLE",
  "STORAGE_CONFLICT", // ABORTED: lost to a concurrent write even after retries; send it again
] as const;

/** A reason: a code's canonical name (codes.ts, when nothing more specific applies) or a specific one. */
export type Reason = CodeName | (typeof SPECIFIC_REASONS)[number];
