/**
 * chainguard.platform.iam.v2beta1.GroupInvitesService: invitations to join a group with a
 * role.
 *
 * Handlers validate, call the repository (src/store/group-invites.ts), convert.
 * Decisions where the published surface is silent:
 * - `parent` is an existing group's exact UIDP (malformed: INVALID_ARGUMENT; missing:
 *   NOT_FOUND).
 * - `role_uid` must be a built-in role or a custom role of the group or one of its ancestors,
 *   else INVALID_ARGUMENT `role_uid` (missing and foreign roles alike).
 * - Anti-escalation (src/auth/grant-guard.ts): an invite grants its role to whoever redeems
 *   it, so creating one needs every capability of that role at the group (PERMISSION_DENIED,
 *   PRIVILEGE_ESCALATION), as granting the role directly does. Its creator (and its token's
 *   reduction) is kept with it, and every redemption judges the grant again as if the
 *   creator made the invite then (invite-redemption.ts).
 * - `ttl` is required, positive and at most 30 days; expiration_time = now + ttl.
 * - `email`, when given, must look like an address (one `@`, a dotted domain, no whitespace,
 *   at most 254 characters); it is matched against the redeeming identity's verified email
 *   with only ASCII letters folded (email-match.ts).
 * - The server makes the code (the 16-hex key id followed by 256 random bits in base64url)
 *   and returns it only in the CreateGroupInvite response; the store keeps its SHA-256.
 *   Get and List never return `code` or `ttl`.
 * - List filters: `uidp`, exact `key_id`. Orders: `created_at desc` by default, `uid`,
 *   `create_time`/`created_at`, `expiration_time`.
 * - Delete of a missing invite is NOT_FOUND.
 * - Redemption has no RPC in the published surface (it happens during login): it is the
 *   store's `redeemInvite`.
 */
import type { Duration } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import { type GroupInvitesService, ListGroupInvitesRequestSchema } from "../../../gen/chainguard/platform/iam/v2beta1/group_invites_pb.js";
import { type FieldViolation, invalidArgument, notFound } from "../../errors/api-error.js";
import { listPage } from "../../pagination/page.js";
import { GROUP_INVITE_ORDERS } from "../../store/group-invites.js";
import type { ServiceContext } from "../context.js";
import { pageBinding, toUidpFilter } from "../list-request.js";
import { checkUidp, collect, requireValid } from "../validate.js";
import { groupInviteToProto } from "./convert-group-invites.js";
import { defaultRoleGuard, grantAuthor } from "../../auth/grant-guard.js";
import { visibleScopes } from "../../auth/visible-scopes.js";

export const MAX_INVITE_TTL_MS = 30 * 24 * 60 * 60 * 1000;
const MAX_EMAIL = 254;
const EMAIL = /^[^\s@\p{Cc}]+@[^\s@\p{Cc}]+\.[^\s@\p{Cc}]+$/u;

export function createGroupInvitesService(ctx: ServiceContext): Partial<ServiceImpl<typeof GroupInvitesService>> {
  const repo = ctx.store.groupInvites;

  return {
    async createGroupInvite(req, context) {
      const invite = req.groupInvite;
      const ttl = ttlMs(invite?.ttl);
      const violations = collect(
        checkUidp("parent", req.parent),
        checkUidp("role_uid", invite?.roleUid ?? ""),
        typeof ttl === "number" ? undefined : ttl,
        invite && invite.email !== "" && (invite.email.length > MAX_EMAIL || !EMAIL.test(invite.email))
          ? { field: "email", description: "must be an email address" }
          : undefined,
      );
      if (violations.length > 0 || !invite || typeof ttl !== "number") throw invalidArgument(violations);
      const created = await repo.create(
        { parentUid: req.parent, roleUid: invite.roleUid, email: invite.email, singleUse: invite.singleUse, ttlMs: ttl, creator: grantAuthor(context) },
        ctx.now(),
        defaultRoleGuard(context),
      );
      return groupInviteToProto(created.invite, created.code);
    },

    async getGroupInvite(req) {
      requireValid(checkUidp("uid", req.uid));
      const row = await repo.get(req.uid);
      if (!row) throw notFound("group invite", req.uid);
      return groupInviteToProto(row);
    },

    async deleteGroupInvite(req) {
      requireValid(checkUidp("uid", req.uid));
      await repo.delete(req.uid);
      return {};
    },

    async listGroupInvites(req, context) {
      const filter = { uidp: toUidpFilter(req.uidp), keyId: req.keyId === "" ? undefined : req.keyId, within: visibleScopes(context) };
      const page = await listPage(
        req,
        {
          orders: GROUP_INVITE_ORDERS.spellings,
          defaultOrder: { key: "create_time", desc: true },
          binding: pageBinding(context, ListGroupInvitesRequestSchema, req),
          fetch: (q) => repo.list(filter, q),
          count: () => repo.count(filter),
          cursor: (row, order) => ({ value: GROUP_INVITE_ORDERS.value(row, order), uid: row.uid }),
        },
        ctx.pageTokens,
        ctx.now(),
      );
      return {
        groupInvites: page.items.map((row) => groupInviteToProto(row)),
        nextPageToken: page.nextPageToken,
        totalCount: page.totalCount,
        skipped: page.skipped,
      };
    },
  };
}

/** The ttl in whole milliseconds (a positive fraction rounds up), or the violation. */
function ttlMs(ttl: Duration | undefined): number | FieldViolation {
  if (!ttl) return { field: "ttl", description: "is required" };
  const mixedSigns = (ttl.seconds > 0n && ttl.nanos < 0) || (ttl.seconds < 0n && ttl.nanos > 0);
  if (mixedSigns || Math.abs(ttl.nanos) > 999_999_999) return { field: "ttl", description: "is not a valid duration" };
  const ms = Math.ceil(Number(ttl.seconds) * 1000 + ttl.nanos / 1e6);
  if (ms <= 0) return { field: "ttl", description: "must be positive" };
  if (ms > MAX_INVITE_TTL_MS) return { field: "ttl", description: "must be at most 30 days (2592000s)" };
  return ms;
}
