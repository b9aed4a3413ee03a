/**
 * role-bindings: the records, filters, orders and repository interface every engine shares (the SQLite
 * implementation is src/store/sqlite/role-bindings.ts).
 */
import type { GrantView } from "./grant-view.js";
import type { KeysetQuery, UidpFilter } from "./lists.js";
import { defineOrders } from "./orders.js";

export interface RoleBindingRecord {
  readonly uid: string;
  readonly groupUid: string;
  readonly identityUid: string;
  readonly roleUid: string;
  readonly createTime: number;
  /** The identity as it is now; subject/issuer are its exact claim match or static keys ("" otherwise). */
  readonly identity: {
    readonly uid: string;
    readonly name: string;
    readonly description: string;
    readonly subject: string;
    readonly issuer: string;
    readonly email: string;
  };
  readonly group: { readonly uid: string; readonly name: string; readonly description: string };
  readonly role: { readonly uid: string; readonly name: string; readonly description: string };
}

/** One binding to create, with the request fields to name if a reference is rejected. */
export interface NewRoleBinding {
  readonly identityUid: string;
  readonly roleUid: string;
  readonly fields: BindingFields;
}

/** How errors name a binding: the BadRequest field paths of its references, and its request. */
export interface BindingFields {
  readonly identityUid: string;
  readonly roleUid: string;
  /** The sub-request, e.g. `requests[3]`, when several bindings are created at once. */
  readonly request?: string;
}

/** A binding's references, as stored. */
export interface BindingTarget {
  readonly groupUid: string;
  readonly identityUid: string;
  readonly roleUid: string;
}

/**
 * The anti-escalation check of a write (src/auth/grant-guard.ts), run inside its transaction
 * once the references are known to be valid; it throws to refuse the write.
 */
export type BindingGuard = (view: GrantView, before: BindingTarget | undefined, after: BindingTarget | undefined) => void;

/** Fields an update may change. */
export interface RoleBindingChanges {
  readonly identityUid?: string;
  readonly roleUid?: string;
}

/** Each order a binding list can take → its record field, also its column's key on the table. */
/** The orders a role bindings list takes (orders.ts). */
export const ROLE_BINDING_ORDERS = defineOrders<RoleBindingRecord>()({ uid: "uid", create_time: "createTime" });
export type RoleBindingOrder = (typeof ROLE_BINDING_ORDERS.keys)[number];

export interface RoleBindingListFilter {
  /** On the binding's own uid. */
  readonly uidp: UidpFilter;
  readonly identityUid?: string;
  readonly groupUid?: string;
  readonly roleUid?: string;
  /** Authorization's visible scopes (list-query.ts withinConditions); undefined = all. */
  readonly within?: readonly string[];
}

export interface RoleBindingsRepository {
  get(uid: string): Promise<RoleBindingRecord | undefined>;
  /**
   * Creates every binding at the group, all or nothing, in one transaction; returns them in
   * the given order. @throws NOT_FOUND for a missing group; INVALID_ARGUMENT naming each
   * rejected reference; ALREADY_EXISTS for a binding that exists (or repeats an earlier one);
   * whatever `guard` throws (called once per binding, `before` undefined).
   */
  create(groupUid: string, bindings: readonly NewRoleBinding[], now: number, guard?: BindingGuard): Promise<RoleBindingRecord[]>;
  /**
   * Re-points a binding at another identity and/or role, with the create checks against the
   * binding's group, then `guard` (when anything changes).
   * @throws NOT_FOUND; INVALID_ARGUMENT; ALREADY_EXISTS; FAILED_PRECONDITION LAST_OWNER when it
   * is its organization's last owner binding (grant-view.ts).
   */
  update(uid: string, changes: RoleBindingChanges, fields: BindingFields, guard?: BindingGuard): Promise<RoleBindingRecord>;
  /**
   * Deletes a binding after `guard` (`after` undefined); deleting one that does not exist
   * succeeds (AIP-135). @throws FAILED_PRECONDITION LAST_OWNER (grant-view.ts).
   */
  delete(uid: string, guard?: BindingGuard): Promise<void>;
  list(filter: RoleBindingListFilter, page: KeysetQuery<RoleBindingOrder>): Promise<RoleBindingRecord[]>;
  count(filter: RoleBindingListFilter): Promise<number>;
  /**
   * What an identity is granted: for each of its bindings, the group and the bound role's
   * capability numbers. Read fresh on every call by authorization (no decision cache), so a
   * deleted binding stops granting on the next call.
   */
  grantsOf(identityUid: string): Promise<Grant[]>;
}

/** One binding seen from authorization: capabilities held at a group (and its descendants). */
export interface Grant {
  readonly groupUid: string;
  readonly capabilities: readonly number[];
}
