/**
 * The row locks the IAM repositories on PostgreSQL share, taken in the same order as the
 * groups repository's: the group first, then the record, then what the record refers to
 * (identity, role), then per-key advisory locks.
 *
 * - No child without its parent: a record created under a group locks the group FOR SHARE
 *   before inserting (`lockParentGroup`). Deleting the group needs that row FOR UPDATE, so it
 *   waits for the create (and then finds the child, FAILED_PRECONDITION), or the create waits
 *   for the delete (and then finds no group, NOT_FOUND, never a foreign-key error).
 * - An organization keeps an owner: removing owner bindings first locks every owner binding of
 *   the organization FOR UPDATE (in uid order), then counts those that remain
 *   (`requireOwnersRemain`). Two replicas removing the last two owners at once are thereby
 *   serialized: the second gets its locks once the first committed, finds the binding the
 *   first removed gone (a locking read skips a row deleted or re-targeted meanwhile), and
 *   refuses. A new owner binding committed meanwhile may be missed, which can only refuse a
 *   removal that was allowed, never allow one that was not. Locking the bindings rather than
 *   the organization's row keeps this out of the way of writers that lock the group (creates
 *   under it hold it FOR SHARE while they lock an identity; an identity delete holds the
 *   identity while it comes here), so the two orders cannot deadlock.
 */
import { and, asc, eq, inArray, isNull, sql } from "drizzle-orm";
import { failedPrecondition, notFound } from "../../errors/api-error.js";
import { requireAssignable } from "../assignable-roles.js";
import { builtInRoleUid } from "../builtin-roles.js";
import type { GrantView } from "../grant-view.js";
import { runGuard } from "./grant-view.js";
import { groups, roleBindings, roles } from "./schema.js";
import type { Tx } from "./transaction.js";

/** Locks group `uid` FOR SHARE for the rest of `tx`. @throws NOT_FOUND when it does not exist. */
export async function lockParentGroup(tx: Tx, uid: string): Promise<void> {
  const [row] = await tx.select({ uid: groups.uid }).from(groups).where(eq(groups.uid, uid)).for("share");
  if (!row) throw notFound("group", uid);
}

/**
 * Reads role `roleUid` FOR SHARE and requires that it may be granted in `groupUid`
 * (INVALID_ARGUMENT on `field` otherwise, assignable-roles.ts). Deleting or changing the role
 * needs it FOR UPDATE, so a record that will grant it (an invite, a provider's default role)
 * is either seen by the role's delete (RESOURCE_IN_USE) or waits and then finds no role, and
 * an escalation guard judging the grant never sees capabilities change under it.
 */
export async function lockAssignableRole(tx: Tx, roleUid: string, groupUid: string, field: string): Promise<void> {
  const [role] = await tx.select({ parentUid: roles.parentUid, builtIn: roles.builtIn }).from(roles).where(eq(roles.uid, roleUid)).for("share");
  requireAssignable(role, groupUid, field);
}

/**
 * A record that will grant role `roleUid` in `groupUid` (an invite, a provider's default role):
 * the role locked and checked as lockAssignableRole does, then the caller's escalation guard,
 * if any, judging that grant. In this order, so the guard sees the capabilities the role keeps
 * until commit.
 */
export async function lockRoleToGrant(
  tx: Tx,
  roleUid: string,
  groupUid: string,
  field: string,
  guard: ((view: GrantView, groupUid: string, roleUid: string) => void) | undefined,
): Promise<void> {
  await lockAssignableRole(tx, roleUid, groupUid, field);
  if (guard) await runGuard(tx, guard, groupUid, roleUid);
}

/**
 * A transaction-level advisory lock on `key` (a 64-bit hash of it: two keys sharing a hash
 * only wait for each other), held until `tx` ends: for invariants over rows that may not exist
 * yet, which no row lock can cover. Writers that take several take them in sorted order.
 */
export async function lockKey(tx: Tx, key: string): Promise<void> {
  await tx.execute(sql`SELECT pg_advisory_xact_lock(hashtextextended(${key}, 0))`);
}

/**
 * Serializes the writers of one (group, identity, role) binding until `tx` ends: taken before
 * looking for an existing binding, so two replicas binding the same triple at once (a
 * CreateRoleBinding, an invite redeemed) give one binding, never a unique-index error. The
 * keys of a batch are locked in sorted order, so two batches never wait crosswise.
 */
export async function lockBindingTriples(tx: Tx, groupUid: string, bindings: readonly { identityUid: string; roleUid: string }[]): Promise<void> {
  const keys = [...new Set(bindings.map((b) => `role_binding ${groupUid} ${b.identityUid} ${b.roleUid}`))].sort();
  for (const key of keys) await lockKey(tx, key);
}

/**
 * Locks FOR UPDATE, in uid order, every owner binding of each organization where one of the
 * given bindings is an owner binding at the root; returns those organizations, sorted. Writers
 * that lock a binding row call this first, so that the owner bindings of an organization are
 * always locked in one order (two replicas deleting two owners would otherwise each hold one
 * and wait for the other's).
 */
export async function lockOwnerBindings(tx: Tx, bindingUids: readonly string[]): Promise<string[]> {
  if (bindingUids.length === 0) return [];
  const owner = builtInRoleUid("owner");
  const ownerships = await tx
    .select({ groupUid: roleBindings.groupUid })
    .from(roleBindings)
    .innerJoin(groups, eq(groups.uid, roleBindings.groupUid))
    .where(and(inArray(roleBindings.uid, [...bindingUids]), eq(roleBindings.roleUid, owner), isNull(groups.parentUid)));
  const orgs = [...new Set(ownerships.map((r) => r.groupUid))].sort();
  for (const org of orgs) {
    await tx
      .select({ uid: roleBindings.uid })
      .from(roleBindings)
      .where(and(eq(roleBindings.groupUid, org), eq(roleBindings.roleUid, owner)))
      .orderBy(asc(roleBindings.uid))
      .for("update");
  }
  return orgs;
}

/**
 * FAILED_PRECONDITION (LAST_OWNER) when removing the given bindings would leave an organization
 * (a root group) without any `owner` binding at itself; the same rule and error as SQLite's,
 * under locks on the organization's owner bindings (see the header).
 */
export async function requireOwnersRemain(tx: Tx, removedBindingUids: readonly string[]): Promise<void> {
  const owner = builtInRoleUid("owner");
  const removed = new Set(removedBindingUids);
  for (const org of await lockOwnerBindings(tx, removedBindingUids)) {
    // Read after the locks were granted: it sees every change committed before.
    const owners = await tx
      .select({ uid: roleBindings.uid })
      .from(roleBindings)
      .where(and(eq(roleBindings.groupUid, org), eq(roleBindings.roleUid, owner)));
    if (!owners.some((o) => !removed.has(o.uid))) {
      throw failedPrecondition(
        {
          type: "LAST_OWNER",
          subject: org,
          description: "the organization's last owner binding cannot be removed: bind another owner first, or delete the organization",
        },
        { metadata: { group_uid: org } },
      );
    }
  }
}
