/**
 * scim-credentials: the records, filters, orders and repository interface every engine shares (the SQLite
 * implementation is src/store/sqlite/scim-credentials.ts).
 */
import type { GrantView } from "./grant-view.js";

/** What the API reports about a provider's SCIM state. */
export interface ScimState {
  readonly enabled: boolean;
  /** A current token exists (it may have expired). */
  readonly hasToken: boolean;
  /** Expiry of the current token; null when it never expires or there is none. */
  readonly tokenExpireTime: number | null;
  /** When the previous token stops working during a rotation; null when there is none. */
  readonly previousTokenExpireTime: number | null;
  readonly revokeTime: number | null;
  /** A token was issued at some point (tells "never issued" from "revoked"). */
  readonly issued: boolean;
  readonly etag: string;
}

/** The provider a SCIM change is about, for the caller's escalation guard. */
export interface ScimProvider {
  readonly uid: string;
  readonly parentUid: string;
  readonly defaultRole: string;
}

/** The escalation check a change runs inside its transaction (the provider's default role). */
export type ScimGuard = (view: GrantView, provider: ScimProvider) => void;

export interface NewScimToken {
  readonly tokenHash: string;
  /** null: never expires. */
  readonly expireTime: number | null;
}

export interface ScimCredentialsRepository {
  /** The provider's SCIM state (INITIAL when SCIM was never touched). */
  get(identityProviderUid: string): Promise<ScimState>;
  /** The states of several providers (missing ones are INITIAL). */
  getMany(identityProviderUids: readonly string[]): Promise<Map<string, ScimState>>;
  /**
   * Issues the first token, or a new one after a revocation.
   * @throws NOT_FOUND (no provider); FAILED_PRECONDITION `SCIM_TOKEN_EXISTS` while a token exists.
   */
  generate(identityProviderUid: string, token: NewScimToken, now: number, guard: ScimGuard): Promise<ScimState>;
  /**
   * Replaces the token; the previous one stays valid until `now + overlapMs` (never past its
   * own expiry), or stops at once with overlap 0.
   * @throws NOT_FOUND (no provider, or no token ever issued); ABORTED on an etag mismatch.
   */
  regenerate(identityProviderUid: string, etag: string, token: NewScimToken, overlapMs: number, now: number, guard: ScimGuard): Promise<ScimState>;
  /** Invalidates the current and the previous token. @throws NOT_FOUND (no provider, or no token ever issued). */
  revoke(identityProviderUid: string, now: number): Promise<ScimState>;
  /**
   * Turns SCIM on or off. Turning it on needs `minOwners` distinct identities bound owner at
   * the provider's organization (FAILED_PRECONDITION `SCIM_OWNERS`).
   * @throws NOT_FOUND; ABORTED on an etag mismatch.
   */
  setEnabled(identityProviderUid: string, enabled: boolean, etag: string, minOwners: number, now: number, guard: ScimGuard): Promise<ScimState>;
  /** The provider whose current or previous (still valid) token has this hash, if any. */
  findByTokenHash(tokenHash: string, now: number): Promise<string | undefined>;
}
