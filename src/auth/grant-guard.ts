/**
 * Anti-escalation for role bindings: a caller may grant a role at a group only if it already
 * holds every capability of that role there. Without this, `role_bindings.create` alone (held
 * by e.g. registry.pull_token_creator) would let a caller bind itself, or an identity it
 * created, to `owner`. Operators are exempt. A role that does not exist is left to the
 * repository, which answers INVALID_ARGUMENT without telling missing from foreign roles.
 */
import type { HandlerContext } from "@connectrpc/connect";
import { permissionDenied } from "../errors/api-error.js";
import type { ServiceContext } from "../services/context.js";
import { isUidp } from "../store/uidp.js";
import { holdsAt } from "./authorize.js";
import { callerOf } from "./caller.js";

/** @throws PERMISSION_DENIED when the caller lacks a capability of one of the roles at `groupUid`. */
export async function requireGrantable(ctx: ServiceContext, context: HandlerContext, groupUid: string, roleUids: readonly string[]): Promise<void> {
  const caller = callerOf(context);
  if (!caller || caller.operator) return;
  const grants = isUidp(caller.subject) ? await ctx.store.roleBindings.grantsOf(caller.subject) : [];
  for (const roleUid of new Set(roleUids)) {
    const role = await ctx.store.roles.get(roleUid);
    if (role && !holdsAt(grants, groupUid, role.capabilities)) {
      throw permissionDenied(`the caller cannot grant role ${JSON.stringify(roleUid)}: it does not hold all of its capabilities on ${JSON.stringify(groupUid)}`, {
        reason: "PRIVILEGE_ESCALATION",
        metadata: { role_uid: roleUid, scope: groupUid },
      });
    }
  }
}
