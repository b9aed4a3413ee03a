/**
 * Revoked API tokens on PostgreSQL: the TokenRevocationsRepository contract
 * (src/store/token-revocations.ts, which describes the document; the change to it is shared,
 * `withRevocation`), with revocations on several replicas at once. The document is the server
 * value `token_revocations`, changed through the server values (server-values.ts): its row is
 * locked FOR UPDATE before it is read, so two replicas revoking at once both land, one after
 * the other, never one overwriting the other's entry; every replica is told at commit
 * (NOTIFY) and this one sees it from its next call.
 *
 * Locks, in this order: the subject's identity FOR UPDATE (when the subject is one), then the
 * document's row. The identity first because revoking every token of a subject also deletes
 * its refresh tokens, and refresh-tokens.ts issues and rotates under the identity FOR SHARE:
 * the revocation waits for those under way and its DELETE (a statement after the lock) then
 * sees what they wrote; those that come after find their token gone. The `check` (the
 * caller's right to revoke, a guard over the grant view) judges the identity as locked, with
 * the bindings as they are in this transaction.
 */
import { eq } from "drizzle-orm";
import { parseStored, REVOCATIONS_NAME, type RevokedIdentity, type TokenRevocationsRepository, withRevocation } from "../token-revocations.js";
import { runGuard } from "./grant-view.js";
import { identities, refreshTokens } from "./schema.js";
import type { PostgresServerValues } from "./server-values.js";

export function createPostgresTokenRevocationsRepository(serverValues: PostgresServerValues): TokenRevocationsRepository {
  return {
    async revoke(revocation, now, retentionMs, check) {
      await serverValues.transaction(async (tx, update) => {
        const [identity] = await tx
          .select({ uid: identities.uid, parentUid: identities.parentUid })
          .from(identities)
          .where(eq(identities.uid, revocation.subject))
          .for("update");
        if (check) await runGuard(tx, check, identity as RevokedIdentity | undefined);
        let wholeSubject = false;
        await update([REVOCATIONS_NAME], now, ([current]) => {
          const changed = withRevocation(parseStored(current), revocation, now, retentionMs);
          wholeSubject = changed.wholeSubject;
          return [Buffer.from(JSON.stringify(changed.next), "utf8")];
        });
        // A refresh would mint a fresh token after the revocation: the family ends here too.
        if (wholeSubject) await tx.delete(refreshTokens).where(eq(refreshTokens.identityUid, revocation.subject));
      });
    },
  };
}
