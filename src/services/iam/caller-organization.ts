/**
 * The caller's organization: what LookupGroup, CheckEligibility and RequestGroupAccess (v2beta1
 * and v1) are about. Shared by both API versions so they cannot drift.
 *
 * Decision (docs/published-api.md "Verified organizations" and the errors table): the published service matches "verified
 * root organizations by the caller's email domain / IdP" against a verified-domain list that
 * Trellis does not have and the published surface does not let anyone edit. Trellis defines
 * the match from data it already has instead of inventing a domain-list API:
 * - the caller's domain is the part after the last "@" of the **verified** email of its
 *   stored identity (set at user sign-in only when the IdP says `email_verified`; the IdP was
 *   trusted then, or the identity would not exist), its ASCII letters lower-cased and nothing
 *   else mapped (email-match.ts: a Unicode case mapping turned U+212A KELVIN SIGN into "k" and
 *   sent a user to another domain's organization);
 * - the organization is the root group with `verified` set (only an operator or staff sets
 *   it) whose name is exactly that domain (published verified organizations are named by
 *   their domain, e.g. `chainguard.edu`); the oldest one if several share the name.
 * No verified email, no such group, an operator token or an assumable identity without email:
 * all collapse into the same NOT_FOUND, as published, so a caller learns nothing about which
 * organizations exist beyond the one it may join.
 * - CheckEligibility: eligible exactly when RequestGroupAccess would record a request now: a
 *   matching organization exists and this identity has not asked to join it yet.
 * - RequestGroupAccess: `group_uid` must be that organization's uid (anything else, existing
 *   or not, is NOT_FOUND); the request is stored once (table group_access_requests); a repeat
 *   is RESOURCE_EXHAUSTED. Recording is all it does: an owner still grants access with a role
 *   binding (there is no API to list requests yet).
 */
import type { HandlerContext } from "@connectrpc/connect";
import { callerOf } from "../../auth/caller.js";
import { ApiError, GrpcCode, notFound } from "../../errors/api-error.js";
import type { GroupRecord } from "../../store/groups.js";
import type { IdentityRecord } from "../../store/identities.js";
import type { ServiceContext } from "../context.js";
import { checkUidp, requireValid } from "../validate.js";
import { emailDomain } from "./email-match.js";

/** The stored identity behind the caller's token; undefined for operators (and deleted identities). */
export async function callerIdentity(ctx: ServiceContext, context: HandlerContext): Promise<IdentityRecord | undefined> {
  const caller = callerOf(context);
  if (!caller || caller.operator) return undefined;
  return ctx.store.identities.get(caller.subject);
}

interface Match {
  readonly identity: IdentityRecord;
  readonly group: GroupRecord;
}

/** The caller and the verified organization of its email domain, when both exist. */
async function matchCaller(ctx: ServiceContext, context: HandlerContext): Promise<Match | undefined> {
  const identity = await callerIdentity(ctx, context);
  const domain = identity && emailDomain(identity.email);
  const group = domain === undefined ? undefined : await ctx.store.groups.findVerifiedRoot(domain);
  return identity && group ? { identity, group } : undefined;
}

/** LookupGroup: the caller's verified organization. @throws NOT_FOUND (every reason collapsed). */
export async function lookupCallerGroup(ctx: ServiceContext, context: HandlerContext): Promise<GroupRecord> {
  const match = await matchCaller(ctx, context);
  if (!match) {
    throw new ApiError(GrpcCode.NotFound, "Not found: no verified organization matches the caller's verified email domain");
  }
  return match.group;
}

/** CheckEligibility: whether RequestGroupAccess would record a request now. */
export async function callerEligible(ctx: ServiceContext, context: HandlerContext): Promise<boolean> {
  const match = await matchCaller(ctx, context);
  return match !== undefined && !(await ctx.store.groupAccessRequests.has(match.group.uid, match.identity.uid));
}

/**
 * RequestGroupAccess. `field` is the request's name for the group (`group_uid`, v1 `group_id`).
 * @throws INVALID_ARGUMENT (empty or malformed), NOT_FOUND (not the caller's organization),
 * RESOURCE_EXHAUSTED (asked before).
 */
export async function requestCallerGroupAccess(ctx: ServiceContext, context: HandlerContext, field: string, groupUid: string): Promise<void> {
  requireValid(checkUidp(field, groupUid));
  const match = await matchCaller(ctx, context);
  if (!match || match.group.uid !== groupUid) throw notFound("group", groupUid);
  await ctx.store.groupAccessRequests.record(groupUid, match.identity.uid, ctx.now());
}
