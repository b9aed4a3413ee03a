/**
 * What the anti-escalation guard (src/auth/grant-guard.ts) reads, inside the write transaction
 * of the change it judges.
 *
 * Why inside: the guard compares what a write would grant with what the caller holds. Read
 * before the transaction, both could change in between (another request widens the role, or
 * re-targets the binding) and the write would then grant what was never checked. Read through
 * `tx`, the check and the write see the same rows under the same write lock.
 *
 * And the last-owner rule: an organization always keeps at least one `owner` binding at
 * itself, so a self-service organization never ends up with nobody who may manage or delete
 * it. Removing the group itself (with its bindings) is the way out.
 */
import { and, eq, inArray, isNull, notInArray, sql } from "drizzle-orm";
import { failedPrecondition } from "../../errors/api-error.js";
import { builtInRoleUid } from "../builtin-roles.js";
import type { Db } from "./db.js";
import { groups, roleBindings, roles } from "./schema.js";
import type { GrantView } from "../grant-view.js";

/** A GrantView over `tx`. Guards run only on IAM writes, so plain queries do. */
export function grantView(tx: Db): GrantView {
  return {
    grantsOf(identityUid) {
      return tx
        .select({ groupUid: roleBindings.groupUid, capabilities: roles.capabilities })
        .from(roleBindings)
        .innerJoin(roles, eq(roles.uid, roleBindings.roleUid))
        .where(eq(roleBindings.identityUid, identityUid))
        .all()
        .map((r) => ({ groupUid: r.groupUid, capabilities: JSON.parse(r.capabilities) as number[] }));
    },
    roleCapabilities(roleUid) {
      const row = tx.select({ capabilities: roles.capabilities }).from(roles).where(eq(roles.uid, roleUid)).get();
      return row && (JSON.parse(row.capabilities) as number[]);
    },
    groupsBinding(roleUid) {
      return tx
        .selectDistinct({ groupUid: roleBindings.groupUid })
        .from(roleBindings)
        .where(eq(roleBindings.roleUid, roleUid))
        .all()
        .map((r) => r.groupUid);
    },
  };
}

/**
 * FAILED_PRECONDITION (LAST_OWNER) when removing the given bindings would leave an
 * organization (a root group) without any `owner` binding at itself. Bindings below the root
 * or of other roles never count: only an owner at the root may manage (and delete) the whole
 * organization.
 */
export function requireOwnersRemain(tx: Db, removedBindingUids: readonly string[]): void {
  if (removedBindingUids.length === 0) return;
  const owner = builtInRoleUid("owner");
  const removedOwnerships = tx
    .select({ groupUid: roleBindings.groupUid })
    .from(roleBindings)
    .innerJoin(groups, eq(groups.uid, roleBindings.groupUid))
    .where(and(inArray(roleBindings.uid, [...removedBindingUids]), eq(roleBindings.roleUid, owner), isNull(groups.parentUid)))
    .all();
  for (const org of new Set(removedOwnerships.map((r) => r.groupUid))) {
    const others = tx
      .select({ one: sql`1` })
      .from(roleBindings)
      .where(and(eq(roleBindings.groupUid, org), eq(roleBindings.roleUid, owner), notInArray(roleBindings.uid, [...removedBindingUids])))
      .limit(1)
      .get();
    if (!others) {
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
