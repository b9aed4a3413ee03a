/**
 * Repo deployments (v1 Deployment): the Helm charts a repo is deployed with, at most one
 * deployment per repo, in `repo_deployments`. No proto types here.
 */
import { eq } from "drizzle-orm";
import { notFound } from "../../errors/api-error.js";
import type { Db } from "./db.js";
import { groupCommit } from "./group-commit.js";
import { requireRepo } from "./repos.js";
import { repoDeployments } from "./schema.js";
import type { RepoDeploymentsRepository } from "../repo-deployments.js";
import { deploymentExists, parseCharts } from "../registry-rows.js";

export function createRepoDeploymentsRepository(db: Db): RepoDeploymentsRepository {
  const find = (tx: Db, repoUid: string) => tx.select().from(repoDeployments).where(eq(repoDeployments.repoUid, repoUid)).get();
  return {
    async get(repoUid) {
      requireRepo(db, repoUid);
      const row = find(db, repoUid);
      if (!row) throw notFound("deployment", repoUid);
      return { repoUid, charts: parseCharts(row.charts) };
    },

    async create(repoUid, charts, now) {
      return groupCommit(db, (tx) => {
        requireRepo(tx, repoUid);
        if (find(tx, repoUid)) throw deploymentExists(repoUid);
        tx.insert(repoDeployments)
          .values({ repoUid, charts: JSON.stringify(charts), createTime: now, updateTime: now })
          .run();
        return { repoUid, charts };
      });
    },

    async replace(repoUid, charts, now) {
      return groupCommit(db, (tx) => {
        requireRepo(tx, repoUid);
        if (!find(tx, repoUid)) throw notFound("deployment", repoUid);
        tx.update(repoDeployments)
          .set({ charts: JSON.stringify(charts), updateTime: now })
          .where(eq(repoDeployments.repoUid, repoUid))
          .run();
        return { repoUid, charts };
      });
    },
  };
}
