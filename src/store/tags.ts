/**
 * tags: the records, filters, orders and repository interface every engine shares (the SQLite
 * implementation is src/store/sqlite/tags.ts).
 */
import type { KeysetQuery, UidpFilter } from "./lists.js";
import { defineOrders } from "./orders.js";

/** Classes of build-system tags ListTags leaves out unless asked (tags.proto). */
export const GeneratedTag = { None: 0, Referrer: 1, Dated: 2, Epoch: 3 } as const;
export type GeneratedTag = (typeof GeneratedTag)[keyof typeof GeneratedTag];

/** Which class a tag name falls in: "sha256-*", "*-20yymmdd", "*-r<N>", or none. */
export function generatedKind(name: string): GeneratedTag {
  if (name.startsWith("sha256-")) return GeneratedTag.Referrer;
  if (/-20\d{6}$/.test(name)) return GeneratedTag.Dated;
  if (/-r\d+$/.test(name)) return GeneratedTag.Epoch;
  return GeneratedTag.None;
}

export interface TagRecord {
  readonly uid: string;
  readonly repoUid: string;
  readonly name: string;
  readonly digest: string;
  readonly deprecated: boolean;
  readonly bundles: readonly string[];
  readonly updateTime: number;
}

export interface TagFields {
  readonly name: string;
  readonly digest: string;
  readonly deprecated: boolean;
  readonly bundles: readonly string[];
}

/** The orders a tags list takes (orders.ts). */
export const TAG_ORDERS = defineOrders<TagRecord>()({ uid: "uid", name: "name", update_time: "updateTime" });
export type TagOrder = (typeof TAG_ORDERS.keys)[number];

export interface TagListFilter {
  readonly uidp: UidpFilter;
  readonly name?: string;
  readonly digest?: string;
  /** Only tags with update_time at or after this (ms). */
  readonly updatedSince?: number;
  /** Generated classes to include besides ordinary tags. */
  readonly include: readonly GeneratedTag[];
  readonly within?: readonly string[];
}

/** One move of a tag: from `moveTime` on it pointed at `digest`. */
export interface TagMove {
  readonly digest: string;
  readonly moveTime: number;
}

/** What GetRepoTagsSummary reports of a repo's tags (the included classes only). */
export interface TagsSummary {
  readonly tagCount: number;
  /** Undefined when the repo has no matching tag. */
  readonly lastUpdated?: number;
  readonly latestTag?: TagRecord;
  /** The longest other tag name on latestTag's digest ("" when none). */
  readonly latestVersion: string;
}

export interface TagsRepository {
  get(uid: string): Promise<TagRecord | undefined>;
  /** Create or move the tag (published upsert). @throws NOT_FOUND (repo). */
  upsert(repoUid: string, fields: TagFields, now: number): Promise<TagRecord>;
  /** @throws NOT_FOUND. */
  delete(uid: string): Promise<void>;
  list(filter: TagListFilter, page: KeysetQuery<TagOrder>): Promise<TagRecord[]>;
  count(filter: TagListFilter): Promise<number>;
  /** Every match in uid order, at most `max + 1` rows (the unpaged v1 list). */
  listAll(filter: TagListFilter, max: number): Promise<TagRecord[]>;
  /** v1 UpdateTag (full replacement). @throws NOT_FOUND, ALREADY_EXISTS (renamed onto a taken name). */
  replace(uid: string, fields: TagFields, now: number): Promise<TagRecord>;
  /**
   * The tag's moves with `start <= moveTime < end`, newest first, at most `max + 1`.
   * @throws NOT_FOUND (tag).
   */
  history(uid: string, range: { readonly start?: number; readonly end?: number }, max: number): Promise<TagMove[]>;
  /** @throws NOT_FOUND (repo). */
  summary(repoUid: string, include: readonly GeneratedTag[]): Promise<TagsSummary>;
}
