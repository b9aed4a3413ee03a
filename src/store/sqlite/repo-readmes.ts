/**
 * Repo READMEs: one Markdown document per repo in `repo_readmes`, kept apart from `repos` so
 * repo lists never read it. An empty README is no row. No proto types here.
 */
import { eq, inArray } from "drizzle-orm";
import type { Db } from "./db.js";
import { groupCommit } from "./group-commit.js";
import { requireRepo } from "./repos.js";
import type { UpsertOutcome } from "../repos.js";
import { repoReadmes } from "./schema.js";
import type { RepoReadmesRepository } from "../repo-readmes.js";

/** Uids per IN (…) list when reading many READMEs (well under SQLite's parameter limit). */
const CHUNK = 500;

/**
 * Sets the repo's README ("" removes it), in the caller's transaction. Unchanged content
 * writes nothing. @throws NOT_FOUND (repo).
 */
export function putReadmeInTx(tx: Db, repoUid: string, content: string, now: number): UpsertOutcome {
  requireRepo(tx, repoUid);
  const existing = tx.select({ content: repoReadmes.content }).from(repoReadmes).where(eq(repoReadmes.repoUid, repoUid)).get();
  if ((existing?.content ?? "") === content) return "unchanged";
  if (content === "") {
    tx.delete(repoReadmes).where(eq(repoReadmes.repoUid, repoUid)).run();
  } else {
    tx.insert(repoReadmes)
      .values({ repoUid, content, updateTime: now })
      .onConflictDoUpdate({ target: repoReadmes.repoUid, set: { content, updateTime: now } })
      .run();
  }
  return existing ? "updated" : "loaded";
}

export function createRepoReadmesRepository(db: Db): RepoReadmesRepository {
  return {
    async get(repoUid) {
      requireRepo(db, repoUid);
      return db.select({ content: repoReadmes.content }).from(repoReadmes).where(eq(repoReadmes.repoUid, repoUid)).get()?.content ?? "";
    },

    async put(repoUid, content, now) {
      await groupCommit(db, (tx) => putReadmeInTx(tx, repoUid, content, now));
      return content;
    },

    async many(repoUids) {
      const out = new Map<string, string>();
      for (let i = 0; i < repoUids.length; i += CHUNK) {
        const rows = db
          .select({ repoUid: repoReadmes.repoUid, content: repoReadmes.content })
          .from(repoReadmes)
          .where(inArray(repoReadmes.repoUid, repoUids.slice(i, i + CHUNK) as string[]))
          .all();
        for (const r of rows) out.set(r.repoUid, r.content);
      }
      return out;
    },
  };
}
