/**
 * trellis.iam.v1.InvitesService: redeeming a group invite (proto/trellis/iam/v1/invites.proto).
 *
 * The code is the authorization (the method needs only an authenticated caller), so what it
 * may do is fixed here and in the store's one transaction (`redeemInvite`):
 * - it binds the caller's own identity, never one named in the request (there is no field for
 *   it), and only a signed-in user's identity: an operator token has no identity, and an
 *   assumable identity (a CI job's, living in a group) is not a person who was invited, so
 *   both are FAILED_PRECONDITION (`INVITE_NEEDS_USER`);
 * - it grants exactly the invite's role at the invite's group, nothing else (the role was
 *   checked against its creator's own rights when the invite was made);
 * - an expired invite, or one for another verified email, is FAILED_PRECONDITION; a
 *   single-use invite is deleted in the same transaction as the binding is made, so it works
 *   once even when two redemptions race; an unknown code is NOT_FOUND without echoing it.
 */
import type { ServiceImpl } from "@connectrpc/connect";
import type { InvitesService } from "../../../gen/trellis/iam/v1/invites_pb.js";
import { callerOf } from "../../auth/caller.js";
import { failedPrecondition, internal, invalidField } from "../../errors/api-error.js";
import { parentOf } from "../../store/uidp.js";
import type { ServiceContext } from "../context.js";
import { roleBindingToProto } from "./convert-role-bindings.js";

/** Codes are a 16-hex key id and 43 base64url characters; anything far longer is not one. */
const MAX_CODE = 256;

export function createInviteRedemptionService(ctx: ServiceContext): Partial<ServiceImpl<typeof InvitesService>> {
  return {
    async redeemGroupInvite(req, context) {
      const code = req.code;
      if (code === "" || code.length > MAX_CODE || !/^[A-Za-z0-9_-]+$/.test(code)) {
        throw invalidField("code", "must be the code CreateGroupInvite returned");
      }
      const caller = callerOf(context);
      const identity = caller && !caller.operator ? await ctx.store.identities.get(caller.subject) : undefined;
      // A user's identity is a root identity (sign-in creates it without a group).
      if (!identity || parentOf(identity.uid) !== null) {
        throw failedPrecondition({
          type: "INVITE_NEEDS_USER",
          subject: "caller",
          description: "a group invite is redeemed by a signed-in user (trellis auth login), not an operator or an assumed identity",
        });
      }
      const bindingUid = await ctx.store.groupInvites.redeemInvite(code, identity.uid, ctx.now());
      const row = await ctx.store.roleBindings.get(bindingUid);
      if (!row) throw internal(new Error(`role binding ${bindingUid} vanished after redemption`));
      return roleBindingToProto(row);
    },
  };
}
