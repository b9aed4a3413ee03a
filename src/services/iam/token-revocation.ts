/**
 * trellis.iam.v1.TokensService: revoking API tokens (proto/trellis/iam/v1/tokens.proto; the
 * list itself is src/store/token-revocations.ts, the check on every call src/auth/tokens.ts).
 *
 * The method is annotated "any authenticated caller" because who may revoke depends on whose
 * tokens are named, which the descriptor cannot say; the rules are applied here (a
 * down-scoped token never gets here: the authorization hook refuses it every caller-method
 * that is not a read):
 * - the operator revokes anything, operator tokens included (`operator:NAME`);
 * - an identity revokes its own tokens (a user ending a session it lost);
 * - anyone else needs identity.delete at the identity's group AND, as DeleteIdentity does
 *   (grant-guard.ts), everything the identity's bindings grant there. Revoking takes the
 *   identity's access away until it signs in again; without the second rule, a caller with
 *   identity.delete alone at a folder could keep cutting off an owner-bound robot it could
 *   not delete. User identities (roots, in no group) are revocable only by themselves and
 *   the operator. An unknown identity and a forbidden one get the same PERMISSION_DENIED.
 * The check runs inside the write's transaction, so it judges the bindings as written.
 */
import type { ServiceImpl } from "@connectrpc/connect";
import { Capability } from "../../../gen/chainguard/capabilities/capabilities_pb.js";
import type { TokensService } from "../../../gen/trellis/iam/v1/tokens_pb.js";
import { holdsAt } from "../../auth/authorize.js";
import { callerOf } from "../../auth/caller.js";
import { escalationGuard } from "../../auth/grant-guard.js";
import { narrowGrants } from "../../auth/token-limits.js";
import { invalidArgument, permissionDenied } from "../../errors/api-error.js";
import { revocationProblems } from "../../auth/revocation-request.js";
import { REVOCATION_RETENTION_MS } from "../../auth/token-lifetime.js";
import { isUidp } from "../../store/uidp.js";
import type { ServiceContext } from "../context.js";

export function createTokenRevocationService(ctx: ServiceContext): Partial<ServiceImpl<typeof TokensService>> {
  return {
    async revokeTokens(req, context) {
      const violations = revocationProblems(req.identity, req.jti);
      if (violations.length > 0) throw invalidArgument(violations);

      const caller = callerOf(context);
      if (!caller) throw permissionDenied("no authenticated caller");
      const revocation = req.jti === "" ? { subject: req.identity } : { subject: req.identity, jti: req.jti };
      if (caller.operator || caller.subject === req.identity) {
        await ctx.store.tokenRevocations.revoke(revocation, ctx.now(), REVOCATION_RETENTION_MS);
        return {};
      }
      const refused = () =>
        permissionDenied(
          `the caller may not revoke tokens of ${JSON.stringify(req.identity)}: it needs identity.delete at the identity's group (or to be that identity, or the operator)`,
          { reason: "TOKEN_REVOCATION_DENIED", metadata: { identity: req.identity } },
        );
      if (!isUidp(req.identity) || !isUidp(caller.subject)) throw refused();
      const guard = escalationGuard(context);
      await ctx.store.tokenRevocations.revoke(revocation, ctx.now(), REVOCATION_RETENTION_MS, (view, identity) => {
        const group = identity?.parentUid;
        if (!identity || !group) throw refused();
        const grants = narrowGrants(view.grantsOf(caller.subject), caller.limits);
        if (!holdsAt(grants, group, [Capability.CAP_IAM_IDENTITY_DELETE])) throw refused();
        guard.identity(view, identity.uid, group);
      });
      return {};
    },
  };
}
