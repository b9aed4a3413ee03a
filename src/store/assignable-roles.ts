/**
 * Which roles may be granted in a group, the same rule on every engine: a built-in role (a root
 * row marked built-in), or a custom role of the group or one of its ancestors. Each engine reads
 * the role inside its own write transaction (and, on PostgreSQL, locks it) and judges it here.
 */
import { invalidField } from "../errors/api-error.js";
import { isAncestorOrSelf } from "./uidp.js";

/** What the rule reads of a role row. */
export interface GrantableRole {
  readonly parentUid: string | null;
  readonly builtIn: boolean;
}

/** True when `role` (undefined: no such role) may be granted in `groupUid`. */
export function isAssignableRole(role: GrantableRole | undefined, groupUid: string): boolean {
  return role !== undefined && (role.parentUid === null ? role.builtIn : isAncestorOrSelf(role.parentUid, groupUid));
}

/**
 * INVALID_ARGUMENT on `field` unless `role` may be granted in `groupUid`. A missing role and
 * another organization's role get the same answer, so the error says nothing about roles the
 * caller cannot see.
 */
export function requireAssignable(role: GrantableRole | undefined, groupUid: string, field: string): void {
  if (!isAssignableRole(role, groupUid)) {
    throw invalidField(field, "must name a built-in role or a custom role of the group or one of its ancestors");
  }
}
