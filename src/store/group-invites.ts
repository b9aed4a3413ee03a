/**
 * group-invites: the records, filters, orders and repository interface every engine shares (the SQLite
 * implementation is src/store/sqlite/group-invites.ts).
 */
import type { GrantView } from "./grant-view.js";
import type { KeysetQuery, UidpFilter } from "./lists.js";
import { defineOrders } from "./orders.js";

/** The invite's role as it is now (hydrated on every read). */
export interface InviteRole {
  readonly uid: string;
  readonly name: string;
  readonly description: string;
  /** Capability numbers. */
  readonly capabilities: readonly number[];
}

export interface GroupInviteRecord {
  readonly uid: string;
  readonly parentUid: string;
  readonly roleUid: string;
  /** Absent when the role no longer exists. */
  readonly role?: InviteRole;
  /** "" = anyone holding the code. */
  readonly email: string;
  readonly singleUse: boolean;
  readonly keyId: string;
  readonly expirationTime: number;
  readonly createTime: number;
}

export interface NewGroupInvite {
  readonly parentUid: string;
  readonly roleUid: string;
  readonly email: string;
  readonly singleUse: boolean;
  /** Lifetime in ms (> 0); expiration_time = now + ttlMs. */
  readonly ttlMs: number;
  /**
   * Who made the invite, as the layer above records it (src/auth/grant-guard.ts: the caller
   * and its token's reduction, JSON): kept with the invite and handed back at every
   * redemption, where its creator's rights are judged again. Opaque to the store.
   */
  readonly creator: string;
}

/** What a redemption judges, inside its transaction, before it binds anyone. */
export interface InviteToRedeem {
  readonly uid: string;
  readonly parentUid: string;
  readonly roleUid: string;
  /** "" = anyone holding the code. */
  readonly email: string;
  /** NewGroupInvite.creator; null for an invite stored before creators were recorded. */
  readonly creator: string | null;
  /** The redeeming identity's verified email ("" when it has none). */
  readonly identityEmail: string;
}

export interface CreatedGroupInvite {
  readonly invite: GroupInviteRecord;
  /** The secret code; nothing but its hash is kept, so it can never be shown again. */
  readonly code: string;
}

/** Each order an invite list can take → its record field, also its column's key on the table. */
/** The orders a group invites list takes (orders.ts). */
export const GROUP_INVITE_ORDERS = defineOrders<GroupInviteRecord>()({ uid: "uid", create_time: "createTime", expiration_time: "expirationTime" });
export type GroupInviteOrder = (typeof GROUP_INVITE_ORDERS.keys)[number];

export interface GroupInviteListFilter {
  readonly uidp: UidpFilter;
  /** Exact key id. */
  readonly keyId?: string;
  /** Authorization's visible scopes (list-query.ts withinConditions); undefined = all. */
  readonly within?: readonly string[];
}

export interface GroupInvitesRepository {
  get(uid: string): Promise<GroupInviteRecord | undefined>;
  /**
   * Inserts an invite under its group with a fresh uid, key id and code.
   * @throws NOT_FOUND when the group does not exist; INVALID_ARGUMENT `role_uid` when the role
   * cannot be granted in the group (see `requireAssignableRole`); whatever `guard` (the
   * caller's anti-escalation check on the role the invite will grant) throws.
   */
  create(invite: NewGroupInvite, now: number, guard?: (view: GrantView, groupUid: string, roleUid: string) => void): Promise<CreatedGroupInvite>;
  /** @throws NOT_FOUND when there is no such invite. */
  delete(uid: string): Promise<void>;
  list(filter: GroupInviteListFilter, page: KeysetQuery<GroupInviteOrder>): Promise<GroupInviteRecord[]>;
  count(filter: GroupInviteListFilter): Promise<number>;
  /**
   * Accepts an invite for an identity, in one transaction: finds the invite by its code,
   * refuses an expired one, runs `judge` on it (the rules above the store: the invite's email
   * against the identity's, its creator's rights now; whatever it throws is the answer and
   * nothing is written), binds the invite's role to the identity at the invite's group (an
   * identical existing binding is reused, not an error), and deletes a single-use invite.
   * Returns the role binding's uid.
   * @throws NOT_FOUND for an unknown code (the code is never echoed) or identity;
   * FAILED_PRECONDITION with violation type INVITE_EXPIRED; what `judge` throws.
   */
  redeemInvite(code: string, identityUid: string, now: number, judge: (view: GrantView, invite: InviteToRedeem) => void): Promise<string>;
}
