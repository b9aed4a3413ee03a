/**
 * How a refresh token is laid out in a row, the same on every engine: only the token's SHA-256
 * (the record's `tokenHash`), its lists as JSON, times in epoch milliseconds.
 */
import type { NewRefreshToken, RefreshTokenRecord } from "./refresh-tokens.js";

/** A refresh-token row as every engine's table returns it. */
export interface StoredRefreshTokenRow {
  readonly tokenHash: string;
  readonly familyId: string;
  readonly identityUid: string;
  readonly audiences: string;
  readonly capabilities: string | null;
  readonly scopes: string | null;
  readonly issueTime: number;
  readonly expireTime: number;
  readonly familyExpireTime: number;
  readonly usedTime: number | null;
}

export function refreshTokenRecordOf(row: StoredRefreshTokenRow): RefreshTokenRecord {
  return {
    tokenHash: row.tokenHash,
    familyId: row.familyId,
    identityUid: row.identityUid,
    audiences: JSON.parse(row.audiences) as string[],
    ...(row.capabilities !== null ? { capabilities: JSON.parse(row.capabilities) as number[] } : {}),
    ...(row.scopes !== null ? { scopes: JSON.parse(row.scopes) as string[] } : {}),
    issueTime: row.issueTime,
    expireTime: row.expireTime,
    familyExpireTime: row.familyExpireTime,
    usedTime: row.usedTime,
  };
}

/** The row of a new (unused) token. */
export function refreshTokenRowOf(t: NewRefreshToken): Omit<StoredRefreshTokenRow, "usedTime"> {
  return {
    tokenHash: t.tokenHash,
    familyId: t.familyId,
    identityUid: t.identityUid,
    audiences: JSON.stringify(t.audiences),
    capabilities: t.capabilities ? JSON.stringify(t.capabilities) : null,
    scopes: t.scopes ? JSON.stringify(t.scopes) : null,
    issueTime: t.issueTime,
    expireTime: t.expireTime,
    familyExpireTime: t.familyExpireTime,
  };
}
