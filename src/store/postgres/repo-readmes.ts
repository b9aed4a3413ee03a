/**
 * Repo READMEs on PostgreSQL: the RepoReadmesRepository contract (src/store/repo-readmes.ts),
 * as SQLite's (src/store/sqlite/repo-readmes.ts): one row per repo that has one, "" is no row.
 * A write locks the repo FOR SHARE (registry-locks.ts: no README for a repo being deleted, whose
 * delete takes it FOR UPDATE and the README along by cascade), then the README row FOR UPDATE,
 * and writes with INSERT … ON CONFLICT DO UPDATE: two replicas writing one repo's README at
 * once end with one row, the last writer's.
 */
import { eq } from "drizzle-orm";
import { textIn } from "../list-predicates.js";
import type { RepoReadmesRepository } from "../repo-readmes.js";
import type { UpsertOutcome } from "../repos.js";
import type { PgDb } from "./connection.js";
import { lockRepo, requireRepo } from "./registry-locks.js";
import { repoReadmes } from "./schema.js";
import { readSnapshot, type Tx, writeTransaction } from "./transaction.js";

/** Uids per IN (…) list when reading many READMEs (well under PostgreSQL's 65 535 parameters). */
const CHUNK = 500;

/**
 * Sets the repo's README ("" removes it), in the caller's transaction. Unchanged content
 * writes nothing. @throws NOT_FOUND (repo).
 */
export async function putReadmeInTx(tx: Tx, repoUid: string, content: string, now: number): Promise<UpsertOutcome> {
  await lockRepo(tx, repoUid, "share");
  const [existing] = await tx.select({ content: repoReadmes.content }).from(repoReadmes).where(eq(repoReadmes.repoUid, repoUid)).for("update");
  if ((existing?.content ?? "") === content) return "unchanged";
  if (content === "") {
    await tx.delete(repoReadmes).where(eq(repoReadmes.repoUid, repoUid));
  } else {
    await tx
      .insert(repoReadmes)
      .values({ repoUid, content, updateTime: now })
      .onConflictDoUpdate({ target: repoReadmes.repoUid, set: { content, updateTime: now } });
  }
  return existing ? "updated" : "loaded";
}

export function createPostgresRepoReadmesRepository(db: PgDb): RepoReadmesRepository {
  return {
    async get(repoUid) {
      return readSnapshot(db, async (tx) => {
        await requireRepo(tx, repoUid);
        const [row] = await tx.select({ content: repoReadmes.content }).from(repoReadmes).where(eq(repoReadmes.repoUid, repoUid));
        return row?.content ?? "";
      });
    },

    async put(repoUid, content, now) {
      await writeTransaction(db, (tx) => putReadmeInTx(tx, repoUid, content, now));
      return content;
    },

    async many(repoUids) {
      const out = new Map<string, string>();
      for (let i = 0; i < repoUids.length; i += CHUNK) {
        const rows = await db
          .select({ repoUid: repoReadmes.repoUid, content: repoReadmes.content })
          .from(repoReadmes)
          .where(textIn(repoReadmes.repoUid, repoUids.slice(i, i + CHUNK)));
        for (const r of rows) out.set(r.repoUid, r.content);
      }
      return out;
    },
  };
}
