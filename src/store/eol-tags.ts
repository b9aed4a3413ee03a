/**
 * eol-tags: the records, filters, orders and repository interface every engine shares (the SQLite
 * implementation is src/store/sqlite/eol-tags.ts).
 */
import type { TagListFilter } from "./tags.js";

export interface EolFields {
  readonly mainPackageName: string;
  readonly tagStatus: number;
  readonly graceStatus: number;
  /** ms since the epoch, or undefined when none. */
  readonly gracePeriodExpiry?: number;
  /** The v1 PackageVersion as proto JSON text, or undefined when none. */
  readonly mainPackageVersion?: string;
}

export interface EolTagRecord extends EolFields {
  readonly tagUid: string;
  readonly tagName: string;
}

export interface EolTagsRepository {
  /** Tags with end-of-life facts matching the tag filter, in tag uid order after `afterUid`, at most `limit`. */
  list(filter: TagListFilter, afterUid: string | undefined, limit: number): Promise<EolTagRecord[]>;
}
