/**
 * trellis.iam.v1.InvitesService: redeeming a group invite (proto/trellis/iam/v1/invites.proto).
 *
 * The code is the authorization (the method needs only an authenticated caller), so what it
 * may do is fixed here and in the store's one transaction (`redeemInvite`, which runs `judge`
 * below inside it, before anything is written):
 * - it binds the caller's own identity, never one named in the request (there is no field for
 *   it), and only a signed-in user's identity: an operator token has no identity, and an
 *   assumable identity (a CI job's, living in a group) is not a person who was invited, so
 *   both are FAILED_PRECONDITION (`INVITE_NEEDS_USER`);
 * - it grants exactly the invite's role at the invite's group, nothing else;
 * - the grant is judged as if the invite's creator made it now: the creator must still hold
 *   what CreateGroupInvite needs at the group and every capability of the role (its bindings
 *   as they are today, narrowed by the reduction of the token it used). Otherwise
 *   FAILED_PRECONDITION `INVITE_CREATOR_CANNOT_GRANT`: a member who made a multi-use invite and
 *   then lost her binding (or had her role narrowed) could otherwise redeem it to get back what
 *   was taken, and her invites would keep granting what she no longer may. Judging at use,
 *   rather than ending invites when a right is lost, covers every way a right is lost (a
 *   binding deleted or re-targeted, a role narrowed, the identity deleted) in one place, and
 *   an invite whose creator regains the right works again. Invites stored before creators were recorded name none and are refused the same way;
 * - an expired invite, or one for another email (email-match.ts: ASCII letters folded, nothing
 *   else), is FAILED_PRECONDITION; a single-use invite is deleted in the same transaction as
 *   the binding is made, so it works once even when two redemptions race; an unknown code is
 *   NOT_FOUND without echoing it.
 */
import type { ServiceImpl } from "@connectrpc/connect";
import type { InvitesService } from "../../../gen/trellis/iam/v1/invites_pb.js";
import { callerOf } from "../../auth/caller.js";
import { GroupInvitesService } from "../../../gen/chainguard/platform/iam/v2beta1/group_invites_pb.js";
import { authorLacks } from "../../auth/grant-guard.js";
import { planFor } from "../../auth/iam-plan.js";
import { failedPrecondition, internal, invalidField } from "../../errors/api-error.js";
import type { GrantView } from "../../store/grant-view.js";
import type { InviteToRedeem } from "../../store/group-invites.js";
import { parentOf } from "../../store/uidp.js";
import type { ServiceContext } from "../context.js";
import { roleBindingToProto } from "./convert-role-bindings.js";
import { sameEmailAddress } from "./email-match.js";

/** Codes are a 16-hex key id and 43 base64url characters; anything far longer is not one. */
const MAX_CODE = 256;

/** What CreateGroupInvite needs at the group (its IAM annotation), held by the creator at every redemption. */
const CREATE_INVITE_CAPABILITIES: readonly number[] = (() => {
  const plan = planFor(GroupInvitesService.method.createGroupInvite);
  if (plan.kind !== "scoped") throw new Error("CreateGroupInvite is expected to be a scoped method");
  return plan.capabilities;
})();

/** The rules a redemption is judged by inside the store's transaction (see the header). */
function judge(view: GrantView, invite: InviteToRedeem): void {
  if (invite.email !== "" && !sameEmailAddress(invite.email, invite.identityEmail)) {
    throw failedPrecondition({ type: "INVITE_EMAIL_MISMATCH", subject: invite.uid, description: "the group invite is for another email address" });
  }
  const needed = [...new Set([...CREATE_INVITE_CAPABILITIES, ...(view.roleCapabilities(invite.roleUid) ?? [])])];
  if (authorLacks(view, invite.creator, invite.parentUid, needed).length > 0) {
    throw failedPrecondition({
      type: "INVITE_CREATOR_CANNOT_GRANT",
      subject: invite.uid,
      description: "whoever made the group invite may no longer grant its role at its group; ask for a new invite",
    });
  }
}

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
      const bindingUid = await ctx.store.groupInvites.redeemInvite(code, identity.uid, ctx.now(), judge);
      const row = await ctx.store.roleBindings.get(bindingUid);
      if (!row) throw internal(new Error(`role binding ${bindingUid} vanished after redemption`));
      return roleBindingToProto(row);
    },
  };
}
