/**
 * token-revocations: the records, filters, orders and repository interface every engine shares (the SQLite
 * implementation is src/store/sqlite/token-revocations.ts).
 */
import { CLOCK_TOLERANCE_S, MAX_API_TOKEN_TTL_S } from "../auth/token-lifetime.js";
import type { GrantView } from "./grant-view.js";

export const REVOCATIONS_NAME = "token_revocations";

/**
 * At most this many single-token entries per subject. Anyone may revoke its own tokens by
 * `jti`, and a `jti` is any short string, so without a bound one caller could grow the
 * document (which every process re-reads after each revocation) without limit. Past the
 * bound the subject's single entries collapse into one "every token issued up to now" entry:
 * a wider revocation, never a narrower one.
 */
export const MAX_TOKEN_ENTRIES_PER_SUBJECT = 100;

/** How long an entry is kept: a token it could match has expired by then. */
export const REVOCATION_RETENTION_MS = (MAX_API_TOKEN_TTL_S + CLOCK_TOLERANCE_S) * 1000;

export interface StoredRevocations {
  /** One token each: subject, jti, when the entry may be dropped (ms). */
  tokens: { sub: string; jti: string; until: number }[];
  /** Every token of `sub` with iat*1000 <= `before` (ms), until `until` (ms). */
  subjects: { sub: string; before: number; until: number }[];
}

/** What a verified token is judged by. */
export interface RevocationSubject {
  readonly subject: string;
  readonly jti?: string;
  /** `iat`, seconds since the epoch. */
  readonly iat: number;
}

/** The revocations in force, shaped for a lookup per call. */
export interface RevocationList {
  isRevoked(token: RevocationSubject): boolean;
}

export function parseStored(value: Buffer | undefined): StoredRevocations {
  if (value === undefined) return { tokens: [], subjects: [] };
  const doc = JSON.parse(value.toString("utf8")) as Partial<StoredRevocations>;
  return { tokens: doc.tokens ?? [], subjects: doc.subjects ?? [] };
}

/** The list for the shared-values watcher. Entries past `until` are harmless (they match only expired tokens). */
export function parseRevocations(value: Buffer | undefined): RevocationList {
  const stored = parseStored(value);
  const tokens = new Set(stored.tokens.map((t) => `${t.sub}\n${t.jti}`));
  const subjects = new Map<string, number>();
  for (const s of stored.subjects) subjects.set(s.sub, Math.max(s.before, subjects.get(s.sub) ?? 0));
  if (tokens.size === 0 && subjects.size === 0) return { isRevoked: () => false };
  return {
    isRevoked(t) {
      if (t.jti !== undefined && tokens.has(`${t.subject}\n${t.jti}`)) return true;
      const before = subjects.get(t.subject);
      return before !== undefined && t.iat * 1000 <= before;
    },
  };
}

/** What to revoke: one token of a subject, or all its tokens issued up to now. */
export type Revocation = { readonly subject: string; readonly jti: string } | { readonly subject: string; readonly jti?: undefined };

/** The identity whose tokens are revoked, as the authorization check sees it. */
export interface RevokedIdentity {
  readonly uid: string;
  readonly parentUid: string | null;
}

export interface TokenRevocationsRepository {
  /**
   * Records `revocation` in one write (the server's group commit). `check` runs first inside
   * the same transaction, with the bindings as they are now and the named identity (undefined
   * when there is none), and may throw, in which case nothing is written.
   */
  revoke(revocation: Revocation, now: number, check?: (view: GrantView, identity: RevokedIdentity | undefined) => void): Promise<void>;
}
