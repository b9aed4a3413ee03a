/**
 * token-revocations: the records and the repository interface every engine shares (the SQLite
 * implementation is src/store/sqlite/token-revocations.ts).
 *
 * Revoked API tokens live in one server value (`token_revocations`, a small JSON document)
 * that every process on the database reads through the shared-values watcher, so a
 * revocation made by any process is seen by all on their next call.
 *
 * Two kinds of entry, each kept only as long as a token it matches could still be presented
 * (the caller says how long: authentication knows the longest token lifetime and the clock
 * tolerance, src/auth/token-lifetime.ts; storage does not), so the document stays as small as
 * the number of revocations in the last day:
 * - one token: its subject and `jti` (both must match: a `jti` named under another subject
 *   revokes nothing of anyone else's);
 * - every token of a subject issued up to a moment: `iat` (whole seconds) at or before the
 *   revocation's second. Tokens minted in the same second as the revocation are revoked
 *   too: `iat` cannot tell them apart from the ones issued just before, and a token issued
 *   before a revocation must never survive it.
 * Revoking every token of an identity also deletes its refresh tokens in the same
 * transaction, so the holder cannot simply refresh back in.
 */
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

/**
 * The stored document after recording `revocation` (kept for `retentionMs`, after which no
 * token it matches can be presented), dropping entries that can no longer match anything; and
 * whether it revokes every token of the subject (then the engine also deletes the subject's
 * refresh tokens in the same transaction: a refresh would mint a token after the revocation).
 */
export function withRevocation(
  stored: StoredRevocations,
  revocation: Revocation,
  now: number,
  retentionMs: number,
): { next: StoredRevocations; wholeSubject: boolean } {
  const until = now + retentionMs;
  const next: StoredRevocations = {
    tokens: stored.tokens.filter((t) => t.until > now),
    subjects: stored.subjects.filter((s) => s.until > now && !(revocation.jti === undefined && s.sub === revocation.subject)),
  };
  const single = revocation.jti !== undefined && next.tokens.filter((t) => t.sub === revocation.subject).length < MAX_TOKEN_ENTRIES_PER_SUBJECT;
  if (revocation.jti !== undefined && single) {
    if (!next.tokens.some((t) => t.sub === revocation.subject && t.jti === revocation.jti)) {
      next.tokens.push({ sub: revocation.subject, jti: revocation.jti, until });
    }
    return { next, wholeSubject: false };
  }
  next.tokens = next.tokens.filter((t) => t.sub !== revocation.subject);
  next.subjects = next.subjects.filter((s) => s.sub !== revocation.subject);
  next.subjects.push({ sub: revocation.subject, before: now, until });
  return { next, wholeSubject: true };
}

/** The identity whose tokens are revoked, as the authorization check sees it. */
export interface RevokedIdentity {
  readonly uid: string;
  readonly parentUid: string | null;
}

export interface TokenRevocationsRepository {
  /**
   * Records `revocation` in one write (the server's group commit), kept for `retentionMs`
   * (recordRevocation). `check` runs first inside
   * the same transaction, with the bindings as they are now and the named identity (undefined
   * when there is none), and may throw, in which case nothing is written.
   */
  revoke(revocation: Revocation, now: number, retentionMs: number, check?: (view: GrantView, identity: RevokedIdentity | undefined) => void): Promise<void>;
}
