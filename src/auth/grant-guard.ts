/**
 * Anti-escalation: no IAM write may hand anyone (the caller first of all) a capability the
 * caller does not hold itself, or take a grant away from someone who holds more than the
 * caller. The method's own capability (role_bindings.update, roles.update, identity.update…)
 * only says the caller may edit that kind of resource; what the edit grants is judged here.
 *
 * Every path by which a write changes who holds what:
 * - a role binding created, re-targeted (identity or role) or deleted: the caller must hold
 *   every capability of the role(s) involved at the binding's group — the new role for what
 *   is granted, the old one for what is taken away (otherwise role_bindings.update alone
 *   moves alice's owner binding to the caller, or demotes her);
 * - a custom role created or given new capabilities: the caller must hold the added
 *   capabilities at the role's group and at every group where the role is bound (otherwise
 *   roles.update alone widens the caller's own role);
 * - an identity's way of being assumed (its relationship) changed, or the identity deleted:
 *   the caller must hold, at the identity's group, everything the identity's bindings grant
 *   (otherwise identity.update alone re-points an owner robot's claim match at the caller).
 * - a group deleted with its role bindings: the caller must hold the roles it takes away
 *   (otherwise groups.delete alone removes an organization from under its owner);
 * - a group invite or an identity provider's default role: both grant their role later, to
 *   whoever redeems or signs in, so setting one needs what granting the role needs. An
 *   invite's creator is kept with it (`grantAuthor`) and judged again at each redemption
 *   (`authorLacks`), as if it made the invite now: rights lost since (a binding deleted, a role
 *   narrowed) end what its invites can grant.
 * Refusals are PERMISSION_DENIED with reason PRIVILEGE_ESCALATION. Operators are exempt.
 *
 * The checks run inside the write's transaction, through a GrantView (src/store/grant-view.ts),
 * so what is checked is what is written. A role that does not exist is left to the repository,
 * which answers INVALID_ARGUMENT without telling missing from foreign roles.
 */
import type { HandlerContext } from "@connectrpc/connect";
import { Capability } from "../../gen/chainguard/capabilities/capabilities_pb.js";
import { permissionDenied } from "../errors/api-error.js";
import type { GrantView } from "../store/grant-view.js";
import type { Grant } from "../store/role-bindings.js";
import { isUidp } from "../store/uidp.js";
import { holdsAt } from "./authorize.js";
import { callerOf } from "./caller.js";
import { limitClaims, limitsFromClaims, narrowGrants } from "./token-limits.js";
import { OPERATOR_CLAIM } from "./tokens.js";

/** The escalation checks for the caller of one call; each throws PERMISSION_DENIED. */
export interface EscalationGuard {
  /** Granting or taking away each role at `groupUid`: the caller holds all its capabilities there. */
  roles(view: GrantView, groupUid: string, roleUids: readonly string[]): void;
  /** Adding `capabilities` to role `roleUid` ("" for a role being created): held at each of `groupUids`. */
  roleCapabilities(view: GrantView, roleUid: string, groupUids: readonly string[], capabilities: readonly number[]): void;
  /**
   * Changing how identity `identityUid` is assumed, or deleting it: the caller holds what each
   * of its bindings grants, at the identity's group (at the binding's group for a user
   * identity, which has none).
   */
  identity(view: GrantView, identityUid: string, identityGroupUid: string | null): void;
}

const NO_CHECKS: EscalationGuard = { roles() {}, roleCapabilities() {}, identity() {} };

function names(capabilities: readonly number[]): string {
  return capabilities.map((c) => Capability[c] ?? String(c)).join(", ");
}

function missing(grants: readonly Grant[], scope: string, capabilities: readonly number[]): number[] {
  return capabilities.filter((c) => !holdsAt(grants, scope, [c]));
}

function escalation(description: string, metadata: Record<string, string>) {
  return permissionDenied(description, { reason: "PRIVILEGE_ESCALATION", metadata });
}

/**
 * The check for writes that will grant a role later rather than now (an invite's role, an
 * identity provider's default role): the caller must be able to grant it today.
 */
export function defaultRoleGuard(context: HandlerContext): (view: GrantView, groupUid: string, roleUid: string) => void {
  const guard = escalationGuard(context);
  return (view, groupUid, roleUid) => guard.roles(view, groupUid, [roleUid]);
}

/** The guard for the call's caller: no checks for an operator. */
export function escalationGuard(context: HandlerContext): EscalationGuard {
  const caller = callerOf(context);
  if (!caller || caller.operator) return NO_CHECKS;
  const { subject, limits } = caller;
  // What the caller holds through THIS token: a down-scoped token grants, re-targets or
  // takes away only within its reduction (token-limits.ts), never with the identity's full set.
  const grantsIn = (view: GrantView) => (isUidp(subject) ? narrowGrants(view.grantsOf(subject), limits) : []);
  return {
    roles(view, groupUid, roleUids) {
      const grants = grantsIn(view);
      for (const roleUid of new Set(roleUids)) {
        const lacking = missing(grants, groupUid, view.roleCapabilities(roleUid) ?? []);
        if (lacking.length > 0) {
          throw escalation(
            `the caller cannot grant or revoke role ${JSON.stringify(roleUid)}: it does not hold all of its capabilities on ${JSON.stringify(groupUid)}`,
            { role_uid: roleUid, scope: groupUid, capabilities: names(lacking) },
          );
        }
      }
    },
    roleCapabilities(view, roleUid, groupUids, capabilities) {
      if (capabilities.length === 0) return;
      const grants = grantsIn(view);
      const which = roleUid === "" ? "a new role" : `role ${JSON.stringify(roleUid)}`;
      for (const scope of new Set(groupUids)) {
        const lacking = missing(grants, scope, capabilities);
        if (lacking.length > 0) {
          throw escalation(`the caller cannot give ${names(lacking)} to ${which}: it does not hold them on ${JSON.stringify(scope)}`, {
            role_uid: roleUid,
            scope,
            capabilities: names(lacking),
          });
        }
      }
    },
    identity(view, identityUid, identityGroupUid) {
      const grants = grantsIn(view);
      for (const granted of view.grantsOf(identityUid)) {
        const scope = identityGroupUid ?? granted.groupUid;
        const lacking = missing(grants, scope, granted.capabilities);
        if (lacking.length > 0) {
          throw escalation(
            `the caller cannot change how identity ${JSON.stringify(identityUid)} is assumed, or delete it: it is granted ${names(lacking)}, which the caller does not hold on ${JSON.stringify(scope)}`,
            { identity_uid: identityUid, scope, capabilities: names(lacking) },
          );
        }
      }
    },
  };
}

/**
 * Who is making a grant that takes effect later (an invite): the caller's subject, whether it
 * is the operator, and its token's reduction, in the claims' own shape (JSON), to be stored
 * with the grant and read back by `authorLacks`.
 */
export function grantAuthor(context: HandlerContext): string {
  const caller = callerOf(context);
  if (!caller) return "{}";
  return JSON.stringify({ sub: caller.subject, ...(caller.operator ? { [OPERATOR_CLAIM]: true } : limitClaims(caller.limits)) });
}

/**
 * What the author of a grant made earlier (`grantAuthor`) lacks today of `capabilities` at
 * `groupUid`, judged as if it made the grant now: its bindings as they are, narrowed by the
 * reduction its token carried then. Empty when it still holds them all (always for the
 * operator). An author that is missing, unreadable or names no identity lacks everything.
 */
export function authorLacks(view: GrantView, author: string | null, groupUid: string, capabilities: readonly number[]): number[] {
  let claims: Record<string, unknown> | undefined;
  try {
    claims = author === null ? undefined : (JSON.parse(author) as Record<string, unknown>);
  } catch {
    claims = undefined;
  }
  if (claims?.[OPERATOR_CLAIM] === true) return [];
  const limits = claims ? limitsFromClaims(claims) : "invalid";
  const subject = claims?.sub;
  if (limits === "invalid" || typeof subject !== "string" || !isUidp(subject)) return [...capabilities];
  return missing(narrowGrants(view.grantsOf(subject), limits), groupUid, capabilities);
}
