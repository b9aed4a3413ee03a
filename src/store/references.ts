/**
 * Reference checks shared by the repositories: does the group a record goes under exist, may a
 * role be granted there. Each runs inside the caller's write transaction (`tx`), so the check
 * and the write that depends on it see the same data.
 */
import { eq } from "drizzle-orm";
import { invalidField, notFound } from "../errors/api-error.js";
import type { Db } from "./db.js";
import { groups, roles } from "./schema.js";
import { isAncestorOrSelf } from "./uidp.js";

/**
 * NOT_FOUND unless the group exists. Used by every repository that creates records
 * under a group given by the caller.
 */
export function requireGroup(tx: Db, uid: string): void {
  const found = tx.select({ uid: groups.uid }).from(groups).where(eq(groups.uid, uid)).get();
  if (!found) throw notFound("group", uid);
}

/**
 * INVALID_ARGUMENT on `field` unless `roleUid` is a role that may be granted in `groupUid`: a
 * built-in role (a root row marked built-in), or a custom role of the group or one of its
 * ancestors. A missing role and another organization's role get the same answer, so the
 * error says nothing about roles the caller cannot see.
 */
export function requireAssignableRole(tx: Db, roleUid: string, groupUid: string, field: string): void {
  const role = tx
    .select({ parentUid: roles.parentUid, builtIn: roles.builtIn })
    .from(roles)
    .where(eq(roles.uid, roleUid))
    .get();
  const assignable = role !== undefined && (role.parentUid === null ? role.builtIn : isAncestorOrSelf(role.parentUid, groupUid));
  if (!assignable) {
    throw invalidField(field, "must name a built-in role or a custom role of the group or one of its ancestors");
  }
}
