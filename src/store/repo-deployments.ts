/**
 * repo-deployments: the records, filters, orders and repository interface every engine shares (the SQLite
 * implementation is src/store/sqlite/repo-deployments.ts).
 */

/** One chart; `source` and `chart` are optional in the API, so absent stays absent. */
export interface HelmChartRecord {
  readonly source?: string;
  readonly repo: string;
  readonly chart?: string;
}

export interface DeploymentRecord {
  readonly repoUid: string;
  readonly charts: readonly HelmChartRecord[];
}

export interface RepoDeploymentsRepository {
  /** @throws NOT_FOUND (repo, or the repo has no deployment). */
  get(repoUid: string): Promise<DeploymentRecord>;
  /** @throws NOT_FOUND (repo), ALREADY_EXISTS (the repo has one). */
  create(repoUid: string, charts: readonly HelmChartRecord[], now: number): Promise<DeploymentRecord>;
  /** Replaces the charts. @throws NOT_FOUND (repo, or no deployment yet). */
  replace(repoUid: string, charts: readonly HelmChartRecord[], now: number): Promise<DeploymentRecord>;
}
