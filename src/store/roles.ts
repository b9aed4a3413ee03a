/**
 * roles: the records, filters, orders and repository interface every engine shares (the SQLite
 * implementation is src/store/sqlite/roles.ts).
 */
import type { GrantView } from "./grant-view.js";
import type { KeysetQuery, UidpFilter } from "./lists.js";
import { defineOrders } from "./orders.js";

export interface RoleRecord {
  readonly uid: string;
  /** null for a built-in role. */
  readonly parentUid: string | null;
  readonly name: string;
  readonly description: string;
  /** Capability numbers. */
  readonly capabilities: readonly number[];
  readonly builtIn: boolean;
  readonly createTime: number;
  readonly updateTime: number;
}

export interface NewRole {
  readonly parentUid: string;
  readonly name: string;
  readonly description: string;
  /** Capability numbers, already validated and de-duplicated. */
  readonly capabilities: readonly number[];
}

/** Fields an update may change (each the complete new value). */
export interface RoleChanges {
  readonly name?: string;
  readonly description?: string;
  readonly capabilities?: readonly number[];
}

/** Each order a role list can take → its record field, also its column's key on the table. */
/** The orders a roles list takes (orders.ts). */
export const ROLE_ORDERS = defineOrders<RoleRecord>()({ uid: "uid", name: "name", create_time: "createTime", update_time: "updateTime" });
export type RoleOrder = (typeof ROLE_ORDERS.keys)[number];

export interface RoleListFilter {
  readonly uidp: UidpFilter;
  /** Exact, case-sensitive name. */
  readonly name?: string;
  /**
   * Authorization's visible scopes (list-query.ts withinConditions); undefined = all.
   * Built-in roles are visible to everyone, whatever the scopes.
   */
  readonly within?: readonly string[];
}

export interface RolesRepository {
  get(uid: string): Promise<RoleRecord | undefined>;
  /**
   * Inserts a custom role with a fresh uid under its group, after `guard` (the caller's
   * anti-escalation check, src/auth/grant-guard.ts) in the same transaction.
   * @throws NOT_FOUND when the group does not exist; whatever `guard` throws.
   */
  create(role: NewRole, now: number, guard?: (view: GrantView) => void): Promise<RoleRecord>;
  /**
   * Applies `changes` to a custom role and bumps update_time, after `guard` sees the role as
   * it is, in the same transaction.
   * @throws NOT_FOUND; FAILED_PRECONDITION (BUILT_IN_ROLE) for a built-in role; whatever
   * `guard` throws.
   */
  update(uid: string, changes: RoleChanges, now: number, guard?: (view: GrantView, current: RoleRecord) => void): Promise<RoleRecord>;
  /**
   * Deletes a custom role that nothing uses, in one transaction with the checks.
   * @throws NOT_FOUND; FAILED_PRECONDITION BUILT_IN_ROLE for a built-in role, RESOURCE_IN_USE
   * while a role binding, group invite or identity provider refers to it.
   */
  delete(uid: string): Promise<void>;
  list(filter: RoleListFilter, page: KeysetQuery<RoleOrder>): Promise<RoleRecord[]>;
  count(filter: RoleListFilter): Promise<number>;
}
