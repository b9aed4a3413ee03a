/**
 * account-associations: the records, filters, orders and repository interface every engine shares (the SQLite
 * implementation is src/store/sqlite/account-associations.ts).
 */
import type { KeysetQuery, UidpFilter } from "./lists.js";
import { defineOrders } from "./orders.js";

export interface GitHubInstallation {
  /** int64 as a decimal string. */
  readonly installationId: string;
  readonly name: string;
}

/** The provider blocks of an association; an absent key means the block is not configured. */
export interface AccountProviders {
  readonly amazon?: { readonly account: string };
  readonly google?: { readonly projectId: string; readonly projectNumber: string };
  /** service-principal name → identity UIDP */
  readonly chainguard?: { readonly serviceBindings: Readonly<Record<string, string>> };
  readonly azure?: { readonly tenantId: string; readonly clientIds: Readonly<Record<string, string>> };
  /** int64 key (decimal string) → installations */
  readonly github?: { readonly appInstallations: Readonly<Record<string, readonly GitHubInstallation[]>> };
}

export interface AccountAssociationRecord {
  /** The owning group's uid. */
  readonly uid: string;
  readonly name: string;
  readonly description: string;
  readonly providers: AccountProviders;
  readonly createTime: number;
  readonly updateTime: number;
}

export interface NewAccountAssociation {
  readonly groupUid: string;
  readonly name: string;
  readonly description: string;
  readonly providers: AccountProviders;
}

/** Fields an update may change (each the complete new value). */
export interface AccountAssociationChanges {
  readonly name?: string;
  readonly description?: string;
  readonly providers?: AccountProviders;
}

/** Each order an association list can take (`group` is the uid) → its record field and column key. */
/** The orders a account associations list takes (orders.ts). */
export const ACCOUNT_ASSOCIATION_ORDERS = defineOrders<AccountAssociationRecord>()({ uid: "uid", name: "name", create_time: "createTime" }, { group: "uid" });
export type AccountAssociationOrder = (typeof ACCOUNT_ASSOCIATION_ORDERS.keys)[number];

export interface AccountAssociationListFilter {
  /** Applied to the association's uid, i.e. to its group's uid. */
  readonly uidp: UidpFilter;
  /** Exact, case-sensitive name. */
  readonly name?: string;
  /** Authorization's visible scopes (list-query.ts withinConditions); undefined = all. */
  readonly within?: readonly string[];
}

export interface AccountAssociationsRepository {
  get(uid: string): Promise<AccountAssociationRecord | undefined>;
  /**
   * Inserts the association of `groupUid` (its uid is the group's).
   * @throws NOT_FOUND when the group does not exist; ALREADY_EXISTS when it has one.
   */
  create(association: NewAccountAssociation, now: number): Promise<AccountAssociationRecord>;
  /**
   * Reads the association, asks `plan` for the changes (it may throw an ApiError after
   * validating merged provider blocks) and writes them, in one transaction; bumps update_time.
   * @throws NOT_FOUND.
   */
  update(uid: string, plan: (current: AccountAssociationRecord) => AccountAssociationChanges, now: number): Promise<AccountAssociationRecord>;
  /** Deletes the association if there is one: idempotent (AIP-135, docs/published-api.md "Creates and deletes"). */
  delete(uid: string): Promise<void>;
  list(filter: AccountAssociationListFilter, page: KeysetQuery<AccountAssociationOrder>): Promise<AccountAssociationRecord[]>;
  count(filter: AccountAssociationListFilter): Promise<number>;
}
