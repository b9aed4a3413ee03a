/**
 * Refresh tokens on PostgreSQL: the RefreshTokensRepository contract
 * (src/store/refresh-tokens.ts), answer for answer as SQLite's
 * (src/store/sqlite/refresh-tokens.ts; the row layout is shared, refresh-token-rows.ts), with
 * rotations on several replicas at once. What SQLite gets from its single writer, this gets
 * from locks, taken in one order (identity, family, token):
 * - the identity is read FOR SHARE (issue: NOT_FOUND when it is gone; rotate: a token whose
 *   identity is gone went with it). Revoking every token of an identity
 *   (token-revocations.ts) locks the identity FOR UPDATE before deleting its refresh tokens,
 *   so it waits for every issue and rotation under way and then deletes what they wrote, and
 *   those that come after find their token gone: no refresh token outlives a revocation;
 * - rotate takes a transaction-level advisory lock on the token's family, then locks the
 *   token FOR UPDATE and reads it again. One rotation per family at a time: a token is rotated
 *   exactly once (the second of two replicas presenting it finds it used, and revokes the
 *   family), and a reuse racing the family's legitimate rotation on another replica revokes
 *   the family with the token that rotation wrote (its DELETE runs after that commit and sees
 *   it). A row lock on the presented token alone would not do: the new token of a concurrent
 *   rotation is a row the reuse's DELETE has not seen;
 * - expired rows are pruned with FOR UPDATE SKIP LOCKED: housekeeping never waits for, nor
 *   deadlocks with, a rotation holding an expired row; a row skipped now goes with a later
 *   prune.
 */
import { and, eq, inArray, lte } from "drizzle-orm";
import { notFound } from "../../errors/api-error.js";
import { refreshTokenRecordOf, refreshTokenRowOf } from "../refresh-token-rows.js";
import type { RefreshTokensRepository, RotationOutcome } from "../refresh-tokens.js";
import type { PgDb } from "./connection.js";
import { lockKey } from "./iam-locks.js";
import { identities, refreshTokens } from "./schema.js";
import { type Tx, writeTransaction } from "./transaction.js";

/** Rows past their expiry can never be used, nor tell a reuse apart: drop those nobody holds. */
async function prune(tx: Tx, now: number): Promise<void> {
  const expired = tx
    .select({ tokenHash: refreshTokens.tokenHash })
    .from(refreshTokens)
    .where(lte(refreshTokens.expireTime, now))
    .for("update", { skipLocked: true });
  await tx.delete(refreshTokens).where(inArray(refreshTokens.tokenHash, expired));
}

/** The identity, read FOR SHARE for the rest of `tx` (see the header); false when it is gone. */
async function shareIdentity(tx: Tx, uid: string): Promise<boolean> {
  const [row] = await tx.select({ uid: identities.uid }).from(identities).where(eq(identities.uid, uid)).for("share");
  return row !== undefined;
}

export function createPostgresRefreshTokensRepository(db: PgDb): RefreshTokensRepository {
  return {
    async find(tokenHash) {
      const [row] = await db.select().from(refreshTokens).where(eq(refreshTokens.tokenHash, tokenHash));
      return row && refreshTokenRecordOf(row);
    },

    async issue(token, now) {
      await writeTransaction(db, async (tx) => {
        // Checked here so an identity deleted meanwhile is NOT_FOUND, not a foreign-key failure.
        if (!(await shareIdentity(tx, token.identityUid))) throw notFound("identity", token.identityUid);
        await prune(tx, now);
        await tx.insert(refreshTokens).values(refreshTokenRowOf(token));
      });
    },

    async rotate(tokenHash, now, next) {
      return writeTransaction(db, async (tx): Promise<RotationOutcome> => {
        // Unlocked, to learn the identity and the family, whose locks come first (see the header).
        const [peek] = await tx
          .select({ identityUid: refreshTokens.identityUid, familyId: refreshTokens.familyId })
          .from(refreshTokens)
          .where(eq(refreshTokens.tokenHash, tokenHash));
        if (!peek || !(await shareIdentity(tx, peek.identityUid))) return { kind: "unknown" };
        await lockKey(tx, `refresh_family ${peek.familyId}`);
        const [row] = await tx
          .select()
          .from(refreshTokens)
          .where(and(eq(refreshTokens.tokenHash, tokenHash), eq(refreshTokens.familyId, peek.familyId)))
          .for("update");
        if (!row) return { kind: "unknown" }; // its family was revoked meanwhile
        if (row.usedTime !== null) {
          // A used token presented again: it was copied, or a retry raced its own success.
          // Either way nobody can tell the holder from the thief, so the family ends.
          await tx.delete(refreshTokens).where(eq(refreshTokens.familyId, row.familyId));
          return { kind: "reused" };
        }
        // Refused without writing (the row is pruned by the next issue or rotation).
        if (row.expireTime <= now) return { kind: "expired" };
        const previous = refreshTokenRecordOf(row);
        await tx.update(refreshTokens).set({ usedTime: now }).where(eq(refreshTokens.tokenHash, tokenHash));
        await prune(tx, now);
        await tx.insert(refreshTokens).values(refreshTokenRowOf(next(previous)));
        return { kind: "rotated", previous };
      });
    },
  };
}
