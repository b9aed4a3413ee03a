/**
 * Refresh tokens: every read and write of `refresh_tokens` (the rules are in docs/auth.md
 * "Refresh tokens"; the token format and the exchange live in src/auth/refresh-tokens.ts).
 *
 * Only SHA-256 hashes are stored, never a token. A family is the chain rotated from one
 * exchange; each token is used once. Rotation runs in one BEGIN IMMEDIATE transaction that
 * re-reads the presented row, so two concurrent refreshes with one token cannot both succeed:
 * the second sees the token used and revokes the family. Expired rows are pruned by every
 * issue and rotation (indexed on expire_time). No proto types enter here.
 */
import { eq, lte } from "drizzle-orm";
import { notFound } from "../../errors/api-error.js";
import type { Db } from "./db.js";
import { groupCommit } from "./group-commit.js";
import { identities, refreshTokens } from "./schema.js";
import type { RotationOutcome, RefreshTokensRepository } from "../refresh-tokens.js";
import { refreshTokenRecordOf as toRecord, refreshTokenRowOf as toRow } from "../refresh-token-rows.js";

export function createRefreshTokensRepository(db: Db): RefreshTokensRepository {
  const byHash = (tx: Db, tokenHash: string) => tx.select().from(refreshTokens).where(eq(refreshTokens.tokenHash, tokenHash)).get();
  // Rows past their expiry can never be used, nor tell a reuse apart: drop them.
  const prune = (tx: Db, now: number) => tx.delete(refreshTokens).where(lte(refreshTokens.expireTime, now)).run();

  return {
    async find(tokenHash) {
      const row = byHash(db, tokenHash);
      return row && toRecord(row);
    },

    async issue(token, now) {
      await groupCommit(db, (tx) => {
        // Checked here so an identity deleted meanwhile is NOT_FOUND, not a foreign-key INTERNAL.
        if (!tx.select({ uid: identities.uid }).from(identities).where(eq(identities.uid, token.identityUid)).get()) {
          throw notFound("identity", token.identityUid);
        }
        prune(tx, now);
        tx.insert(refreshTokens).values(toRow(token)).run();
      });
    },

    async rotate(tokenHash, now, next) {
      return groupCommit(db, (tx): RotationOutcome => {
        const row = byHash(tx, tokenHash);
        if (!row) return { kind: "unknown" };
        if (row.usedTime !== null) {
          // A used token presented again: it was copied, or a retry raced its own success.
          // Either way nobody can tell the holder from the thief, so the family ends.
          tx.delete(refreshTokens).where(eq(refreshTokens.familyId, row.familyId)).run();
          return { kind: "reused" };
        }
        // Refused without writing (the row is pruned by the next issue or rotation).
        if (row.expireTime <= now) return { kind: "expired" };
        const previous = toRecord(row);
        tx.update(refreshTokens).set({ usedTime: now }).where(eq(refreshTokens.tokenHash, tokenHash)).run();
        prune(tx, now);
        tx.insert(refreshTokens)
          .values(toRow(next(previous)))
          .run();
        return { kind: "rotated", previous };
      });
    },
  };
}
