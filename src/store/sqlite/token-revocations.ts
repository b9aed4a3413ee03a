/**
 * Revoked API tokens: one server_keys row (`token_revocations`, a small JSON document, no
 * schema change) that every process on the database reads through the shared-values watcher
 * (shared-values.ts), so a revocation made by any process is seen by all on their next call.
 *
 * Two kinds of entry, each kept only as long as a token it matches could still be presented
 * (the caller says how long), so the document stays as small as the number of revocations
 * in the last day:
 * - one token: its subject and `jti` (both must match: a `jti` named under another subject
 *   revokes nothing of anyone else's);
 * - every token of a subject issued up to a moment: `iat` (whole seconds) at or before the
 *   revocation's second. Tokens minted in the same second as the revocation are revoked
 *   too: `iat` cannot tell them apart from the ones issued just before, and a token issued
 *   before a revocation must never survive it.
 * Revoking every token of an identity also deletes its refresh tokens in the same
 * transaction, so the holder cannot simply refresh back in.
 */
import { eq } from "drizzle-orm";
import type { Db } from "./db.js";
import { groupCommit } from "./group-commit.js";
import { readServerValue } from "./server-keys.js";
import { grantView } from "./grant-view.js";
import { identities, refreshTokens, serverKeys } from "./schema.js";
import { REVOCATIONS_NAME, parseStored, type Revocation, type TokenRevocationsRepository, withRevocation } from "../token-revocations.js";

/**
 * Records `revocation` inside the caller's write transaction `tx` (the server's group
 * commit), kept for `retentionMs` (after which no token it matches can be presented),
 * dropping entries that can no longer match anything; for a whole subject also deletes its
 * refresh tokens. Synchronous.
 */
export function recordRevocation(tx: Db, revocation: Revocation, now: number, retentionMs: number): void {
  const current = readServerValue(tx, REVOCATIONS_NAME);
  const { next, wholeSubject } = withRevocation(parseStored(current), revocation, now, retentionMs);
  // A refresh would mint a fresh token after the revocation: the family ends here too.
  if (wholeSubject) tx.delete(refreshTokens).where(eq(refreshTokens.identityUid, revocation.subject)).run();
  const value = Buffer.from(JSON.stringify(next), "utf8");
  if (current === undefined) tx.insert(serverKeys).values({ name: REVOCATIONS_NAME, value, createTime: now }).run();
  else tx.update(serverKeys).set({ value }).where(eq(serverKeys.name, REVOCATIONS_NAME)).run();
}

export function createTokenRevocationsRepository(db: Db): TokenRevocationsRepository {
  return {
    async revoke(revocation, now, retentionMs, check) {
      await groupCommit(db, (tx) => {
        if (check) {
          const identity = tx
            .select({ uid: identities.uid, parentUid: identities.parentUid })
            .from(identities)
            .where(eq(identities.uid, revocation.subject))
            .get();
          check(grantView(tx), identity);
        }
        recordRevocation(tx, revocation, now, retentionMs);
      });
    },
  };
}
