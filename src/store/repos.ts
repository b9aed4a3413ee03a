/**
 * repos: the records, filters, orders and repository interface every engine shares (the SQLite
 * implementation is src/store/sqlite/repos.ts).
 */
import type { KeysetQuery, UidpFilter } from "./lists.js";
import { defineOrders } from "./orders.js";

/** A repo as the services see it: list fields decoded. */
export interface RepoRecord {
  readonly uid: string;
  readonly parentUid: string;
  readonly name: string;
  readonly description: string;
  readonly catalogTier: number;
  readonly bundles: readonly string[];
  readonly aliases: readonly string[];
  readonly activeTags: readonly string[];
  readonly createTime: number;
  readonly updateTime: number;
}

/** The fields a caller sets (everything but uid, parent and timestamps). */
export interface RepoFields {
  readonly name: string;
  readonly description: string;
  readonly catalogTier: number;
  readonly bundles: readonly string[];
  readonly aliases: readonly string[];
  readonly activeTags: readonly string[];
}

export type RepoChanges = Partial<RepoFields>;

/** The orders a repos list takes (orders.ts). */
export const REPO_ORDERS = defineOrders<RepoRecord>()({ uid: "uid", name: "name", create_time: "createTime", update_time: "updateTime" });
export type RepoOrder = (typeof REPO_ORDERS.keys)[number];

export interface RepoListFilter {
  readonly uidp: UidpFilter;
  readonly name?: string;
  /** Visible scopes from authorization (undefined: unrestricted). */
  readonly within?: readonly string[];
}

/** What an upsert did, for the importer's summary. */
export type UpsertOutcome = "loaded" | "updated" | "unchanged";

export interface ReposRepository {
  get(uid: string): Promise<RepoRecord | undefined>;
  /** @throws NOT_FOUND (group), ALREADY_EXISTS (name taken in the group). */
  create(parentUid: string, fields: RepoFields, now: number): Promise<RepoRecord>;
  /**
   * Creates the group's repo of that name or replaces its fields (v1 CreateRepo). `mayReplace`
   * runs in the transaction on the repo about to be replaced; it throws to refuse.
   * @throws NOT_FOUND (group), or what `mayReplace` throws.
   */
  upsert(parentUid: string, fields: RepoFields, now: number, mayReplace?: (existingUid: string) => void): Promise<RepoRecord>;
  /** @throws NOT_FOUND, ALREADY_EXISTS (renamed onto another repo's name). */
  update(uid: string, changes: RepoChanges, now: number): Promise<RepoRecord>;
  /** Deletes the repo and its tags in one transaction. @throws NOT_FOUND. */
  delete(uid: string): Promise<void>;
  list(filter: RepoListFilter, page: KeysetQuery<RepoOrder>): Promise<RepoRecord[]>;
  count(filter: RepoListFilter): Promise<number>;
  /** Every match in uid order, at most `max + 1` rows (the unpaged v1 list). */
  listAll(filter: RepoListFilter, max: number): Promise<RepoRecord[]>;
}
