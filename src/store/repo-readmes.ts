/**
 * repo-readmes: the records, filters, orders and repository interface every engine shares (the SQLite
 * implementation is src/store/sqlite/repo-readmes.ts).
 */

export interface RepoReadmesRepository {
  /** The README ("" when none). @throws NOT_FOUND (repo). */
  get(repoUid: string): Promise<string>;
  /** @throws NOT_FOUND (repo). */
  put(repoUid: string, content: string, now: number): Promise<string>;
  /** READMEs of the given repos that have one (the v1 list carries them inline). */
  many(repoUids: readonly string[]): Promise<Map<string, string>>;
}
