/**
 * advisories: the records, filters, orders and repository interface every engine shares (the SQLite
 * implementation is src/store/sqlite/advisories.ts).
 */
import type { KeysetQuery, UidpFilter } from "./lists.js";
import { defineOrders } from "./orders.js";

/** ReviewState.APPROVED: only approved events make an advisory's current state. */
export const REVIEW_STATE_APPROVED = 2;

export interface SeverityRecord {
  /** Severity.Type number. */
  readonly type: number;
  readonly score: string;
}

export interface AdvisoryEventFields {
  /** ms; when omitted, a re-import keeps the stored time of the event at that position. */
  readonly createTime?: number;
  readonly author: string;
  readonly reviewer: string;
  readonly reviewState: number;
  readonly issue: string | null;
  /** EventTypeFilter number of the oneof member (0 when unset). */
  readonly eventType: number;
  /** The member's content, JSON. */
  readonly body: string;
  readonly findings: Uint8Array | null;
}

export interface AdvisoryEventRecord extends AdvisoryEventFields {
  readonly uid: string;
  readonly createTime: number;
}

export interface AdvisoryFields {
  readonly advisoryId: string;
  readonly legacyAdvisoryId: string | null;
  readonly author: string;
  readonly artifactName: string;
  readonly artifactType: string;
  readonly artifactArchitecture: string;
  readonly componentName: string;
  readonly componentLocation: string;
  readonly componentType: string;
  /** Origin package; defaults to artifactName. */
  readonly origin?: string;
  readonly aliases: readonly string[];
  readonly severities: readonly SeverityRecord[];
  readonly deleteTime: number | null;
  /** ms; defaults to the stored value, or now for a new advisory. */
  readonly createTime?: number;
  /** ms; defaults to now when anything changed. */
  readonly updateTime?: number;
  readonly events: readonly AdvisoryEventFields[];
}

export interface AdvisoryRecord extends Omit<AdvisoryFields, "origin" | "createTime" | "updateTime" | "events"> {
  readonly uid: string;
  readonly parentUid: string;
  readonly origin: string;
  readonly createTime: number;
  readonly updateTime: number;
  readonly events: readonly AdvisoryEventRecord[];
}

/** The orders a advisories list takes (orders.ts). */
export const ADVISORY_ORDERS = defineOrders<AdvisoryRecord>()({ uid: "uid", advisory_id: "advisoryId", create_time: "createTime", update_time: "updateTime" });
export type AdvisoryOrder = (typeof ADVISORY_ORDERS.keys)[number];

/** ListAdvisories filters in store terms; a list filter holds when any value matches. */
export interface AdvisoryListFilter {
  readonly uidp: UidpFilter;
  readonly within?: readonly string[];
  readonly advisoryIds?: readonly string[];
  readonly legacyAdvisoryIds?: readonly string[];
  readonly artifactNames?: readonly string[];
  readonly artifactTypes?: readonly string[];
  readonly artifactArchitectures?: readonly string[];
  readonly componentNames?: readonly string[];
  readonly componentTypes?: readonly string[];
  readonly componentLocations?: readonly string[];
  readonly aliases?: readonly string[];
  readonly origin?: string;
  readonly eventReviewStates?: readonly number[];
  readonly eventAuthors?: readonly string[];
  readonly excludeEventAuthors?: readonly string[];
  readonly eventReviewers?: readonly string[];
  readonly eventTypes?: readonly number[];
  readonly latestEventType?: number;
  /** Case-insensitive (ASCII folding, SQLite `lower()`) substring of artifact_name, component_name or an alias. */
  readonly query?: string;
}

export interface AdvisoriesRepository {
  get(uid: string): Promise<AdvisoryRecord | undefined>;
  list(filter: AdvisoryListFilter, page: KeysetQuery<AdvisoryOrder>): Promise<AdvisoryRecord[]>;
  count(filter: AdvisoryListFilter): Promise<number>;
}
