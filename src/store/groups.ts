/**
 * groups: the records, filters, orders and repository interface every engine shares (the SQLite
 * implementation is src/store/sqlite/groups.ts).
 */
import type { GrantView } from "./grant-view.js";
import type { KeysetQuery, UidpFilter } from "./lists.js";
import { defineOrders } from "./orders.js";

/** A group as stored (times in ms since the epoch). */
export type GroupRecord = {
  readonly uid: string;
  /** null for a root (an organization). */
  readonly parentUid: string | null;
  readonly name: string;
  readonly description: string;
  readonly verified: boolean;
  /** OrgKind number; children report their root's. */
  readonly kind: number;
  readonly createTime: number;
  readonly updateTime: number;
};

/** The orders a groups list takes (orders.ts). */
/**
 * What blocks deleting a group, checked in this order by every engine; the kind names the
 * child in the error (`cannot delete group with child <kind>`, docs/published-api.md
 * "Errors", whose example is the repos row). `table` and `column` name the schema's table
 * export and its column that points at the group. Role bindings at the group are not in the
 * list: they are about the group, not in it, and go with it.
 */
export const GROUP_CHILD_KINDS = [
  { kind: "groups", table: "groups", column: "parentUid" },
  { kind: "repos", table: "repos", column: "parentUid" },
  { kind: "advisories", table: "advisories", column: "parentUid" },
  { kind: "identities", table: "identities", column: "parentUid" },
  { kind: "roles", table: "roles", column: "parentUid" },
  { kind: "identity providers", table: "identityProviders", column: "parentUid" },
  { kind: "group invites", table: "groupInvites", column: "parentUid" },
  { kind: "account associations", table: "accountAssociations", column: "uid" },
] as const;

export const GROUP_ORDERS = defineOrders<GroupRecord>()({ uid: "uid", name: "name", create_time: "createTime", update_time: "updateTime" });
export type GroupOrder = (typeof GROUP_ORDERS.keys)[number];

export interface GroupListFilter {
  readonly uidp: UidpFilter;
  /** Exact, case-sensitive name. */
  readonly name?: string;
  /** Authorization's visible scopes (list-query.ts withinConditions); undefined = all. */
  readonly within?: readonly string[];
}

export interface NewGroup {
  readonly parentUid: string | null;
  readonly name: string;
  readonly description: string;
  readonly verified: boolean;
  readonly kind: number;
}

/** Fields an update may change. */
export interface GroupChanges {
  readonly name?: string;
  readonly description?: string;
  readonly verified?: boolean;
  readonly kind?: number;
}

export interface GroupsRepository {
  get(uid: string): Promise<GroupRecord | undefined>;
  /**
   * Inserts a group with a fresh uid under `parentUid` (a root when null).
   * A child inherits its root's kind. @throws NOT_FOUND when the parent does not exist.
   * With `ownerIdentityUid` (an organization created by a signed-in user), the same
   * transaction binds that identity to the built-in `owner` role on the new group, so the
   * creator can never end up with an organization nobody may manage.
   * @throws PERMISSION_DENIED when the owner is not an existing user identity (a root).
   */
  create(group: NewGroup, now: number, ownerIdentityUid?: string): Promise<GroupRecord>;
  /**
   * Applies `changes` and bumps update_time, after `guard` saw the group as it is (it throws
   * to refuse, e.g. a customer changing `verified`). @throws NOT_FOUND.
   */
  update(uid: string, changes: GroupChanges, now: number, guard?: (current: GroupRecord) => void): Promise<GroupRecord>;
  /**
   * Deletes a group that holds nothing but role bindings, and those bindings with it (they
   * grant nothing once the group is gone; an organization's owner bindings, which cannot be
   * removed one by one, go this way), after `guard` (the caller's anti-escalation check on
   * the roles those bindings grant). @throws NOT_FOUND; FAILED_PRECONDITION
   * (RESOURCE_NOT_EMPTY) while any other child exists; whatever `guard` throws. The checks
   * and the delete are one transaction.
   */
  delete(uid: string, guard?: (view: GrantView, boundRoleUids: string[]) => void): Promise<void>;
  list(filter: GroupListFilter, page: KeysetQuery<GroupOrder>): Promise<GroupRecord[]>;
  count(filter: GroupListFilter): Promise<number>;
  /**
   * Every match in uid order, for the unpaged v1 list. Reads at most `max + 1` rows so the
   * caller can tell that the result was larger than it is willing to return.
   */
  listAll(filter: GroupListFilter, max: number): Promise<GroupRecord[]>;
  /**
   * The verified organization (a root with `verified` set) named exactly `name`, the oldest
   * (create_time, then uid) if several share it; LookupGroup matches an email domain this way.
   */
  findVerifiedRoot(name: string): Promise<GroupRecord | undefined>;
}
