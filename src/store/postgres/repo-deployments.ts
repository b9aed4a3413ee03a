/**
 * Repo deployments on PostgreSQL: the RepoDeploymentsRepository contract
 * (src/store/repo-deployments.ts), as SQLite's (src/store/sqlite/repo-deployments.ts): at most
 * one deployment per repo. Writes lock the repo FOR SHARE (registry-locks.ts: none for a repo
 * being deleted), then the deployment row: create inserts with ON CONFLICT DO NOTHING, so of
 * two replicas creating one repo's deployment at once one succeeds and the other gets the
 * ALREADY_EXISTS SQLite gives; replace locks the row FOR UPDATE.
 */
import { eq } from "drizzle-orm";
import { notFound } from "../../errors/api-error.js";
import { deploymentExists, parseCharts } from "../registry-rows.js";
import type { RepoDeploymentsRepository } from "../repo-deployments.js";
import type { PgDb } from "./connection.js";
import { lockRepo, requireRepo } from "./registry-locks.js";
import { repoDeployments } from "./schema.js";
import { readSnapshot, writeTransaction } from "./transaction.js";

export function createPostgresRepoDeploymentsRepository(db: PgDb): RepoDeploymentsRepository {
  return {
    async get(repoUid) {
      return readSnapshot(db, async (tx) => {
        await requireRepo(tx, repoUid);
        const [row] = await tx.select().from(repoDeployments).where(eq(repoDeployments.repoUid, repoUid));
        if (!row) throw notFound("deployment", repoUid);
        return { repoUid, charts: parseCharts(row.charts) };
      });
    },

    async create(repoUid, charts, now) {
      return writeTransaction(db, async (tx) => {
        await lockRepo(tx, repoUid, "share");
        const inserted = await tx
          .insert(repoDeployments)
          .values({ repoUid, charts: JSON.stringify(charts), createTime: now, updateTime: now })
          .onConflictDoNothing({ target: repoDeployments.repoUid })
          .returning({ repoUid: repoDeployments.repoUid });
        if (inserted.length === 0) throw deploymentExists(repoUid);
        return { repoUid, charts };
      });
    },

    async replace(repoUid, charts, now) {
      return writeTransaction(db, async (tx) => {
        await lockRepo(tx, repoUid, "share");
        const [existing] = await tx
          .select({ repoUid: repoDeployments.repoUid })
          .from(repoDeployments)
          .where(eq(repoDeployments.repoUid, repoUid))
          .for("update");
        if (!existing) throw notFound("deployment", repoUid);
        await tx
          .update(repoDeployments)
          .set({ charts: JSON.stringify(charts), updateTime: now })
          .where(eq(repoDeployments.repoUid, repoUid));
        return { repoUid, charts };
      });
    },
  };
}
