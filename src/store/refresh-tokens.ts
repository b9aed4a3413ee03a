/**
 * refresh-tokens: the records, filters, orders and repository interface every engine shares (the SQLite
 * implementation is src/store/sqlite/refresh-tokens.ts).
 */

export interface RefreshTokenRecord {
  readonly tokenHash: string;
  readonly familyId: string;
  readonly identityUid: string;
  readonly audiences: readonly string[];
  readonly capabilities?: readonly number[];
  readonly scopes?: readonly string[];
  readonly issueTime: number;
  readonly expireTime: number;
  readonly familyExpireTime: number;
  readonly usedTime: number | null;
}

export type NewRefreshToken = Omit<RefreshTokenRecord, "usedTime">;

/** What a rotation found; only "rotated" wrote the new token. */
export type RotationOutcome =
  | { readonly kind: "rotated"; readonly previous: RefreshTokenRecord }
  | { readonly kind: "unknown" }
  | { readonly kind: "expired" }
  /** The token was used before: the whole family was revoked (committed). */
  | { readonly kind: "reused" };

export interface RefreshTokensRepository {
  /** The record for a token hash, or undefined. */
  find(tokenHash: string): Promise<RefreshTokenRecord | undefined>;
  /** Stores the first token of a new family. @throws NOT_FOUND when the identity is gone. */
  issue(token: NewRefreshToken, now: number): Promise<void>;
  /**
   * Marks `tokenHash` used and stores `next` (same family) in its place, if the token is
   * still unused and unexpired; a used one revokes its family instead. `next` is built
   * from the row found inside the transaction.
   */
  rotate(tokenHash: string, now: number, next: (previous: RefreshTokenRecord) => NewRefreshToken): Promise<RotationOutcome>;
}
