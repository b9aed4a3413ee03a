/**
 * chainguard.platform.iam.v2beta1.RoleBindingsService: roles granted to identities at groups.
 *
 * Handlers validate, call the repository (src/store/role-bindings.ts), convert. Decisions
 * where the published surface is silent:
 * - CreateRoleBinding: `parent` is an existing group's exact UIDP (malformed: INVALID_ARGUMENT;
 *   missing: NOT_FOUND). Only `role_binding.identity_uid` and `role_uid` are read; both are
 *   required UIDPs (violations on `identity_uid` / `role_uid`). A reference that does not
 *   exist, an identity not visible from the group (neither a user identity nor one of the group
 *   or an ancestor) and a role that cannot be granted there (neither built-in nor a custom role
 *   of the group or an ancestor) are all INVALID_ARGUMENT on that field, with one description
 *   ("does not exist or is not visible …") so other organizations' uids are not probed.
 *   The same identity and role at the same group twice is ALREADY_EXISTS with ResourceInfo
 *   naming the existing binding. uid = parent + "/" + 16 hex.
 * - Every response is hydrated from current data: identity {uid, name, description, subject,
 *   issuer (from an exact claim match or static keys, else ""), email}, group and role
 *   {uid, name, description}, plus identity_uid, role_uid and create_time.
 * - UpdateRoleBinding: mask paths `identity_uid`, `role_uid` (without a mask, the non-empty
 *   ones), checked as on create against the binding's group.
 * - DeleteRoleBinding succeeds when the binding does not exist (AIP-135; docs/published-api.md "Creates and deletes"); a
 *   malformed uid is still INVALID_ARGUMENT. GetRoleBinding is NOT_FOUND when missing.
 * - An organization's last `owner` binding at the organization cannot be deleted or
 *   re-targeted (FAILED_PRECONDITION, PreconditionFailure type LAST_OWNER); deleting the
 *   organization removes it with the group.
 * - List filters: `uidp` (on the binding uid), `identity`, `group`, `role` (exact UIDPs).
 *   Orders: `uid` (default), `create_time`/`created_at`.
 * - Anti-escalation (src/auth/grant-guard.ts): outside the operator, granting a role (create,
 *   batch create) needs every capability of that role at the group; re-targeting a binding
 *   (identity_uid or role_uid) needs those of the old role and of the new one, and deleting
 *   one those of its role (taking a grant away from someone who holds more than the caller
 *   is refused too); otherwise PERMISSION_DENIED with reason PRIVILEGE_ESCALATION.
 * - BatchCreateRoleBindings: 1 to 25 `requests`; each sub-request's `parent` is empty or equal
 *   to the batch `parent`; its role is its own `role_uid` or, when empty, the batch `role_uid`
 *   (a sub-request role_uid different from a non-empty batch role_uid is INVALID_ARGUMENT).
 *   Violations name `requests[i].role_binding.identity_uid` etc. (`role_uid` when the batch
 *   default is at fault). All bindings are written in one transaction or none is; the
 *   response lists them in request order.
 */
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import {
  type BatchCreateRoleBindingsRequest,
  ListRoleBindingsRequestSchema,
  RoleBindingSchema,
  type RoleBindingsService,
} from "../../../gen/chainguard/platform/iam/v2beta1/role_bindings_pb.js";
import { type FieldViolation, invalidArgument, invalidField, notFound } from "../../errors/api-error.js";
import { resolveUpdatePaths } from "../../fieldmask/update-mask.js";
import { listPage } from "../../pagination/page.js";
import { type BindingGuard, type NewRoleBinding, type RoleBindingChanges, ROLE_BINDING_ORDERS } from "../../store/role-bindings.js";
import type { ServiceContext } from "../context.js";
import { pageBinding, toUidpFilter } from "../list-request.js";
import { checkOptionalUidp, checkUidp, collect, requireValid } from "../validate.js";
import { roleBindingToProto } from "./convert-role-bindings.js";
import { escalationGuard } from "../../auth/grant-guard.js";
import { visibleScopes } from "../../auth/visible-scopes.js";

const MUTABLE = ["identity_uid", "role_uid"] as const;

/** Most sub-requests in one BatchCreateRoleBindings (docs/published-api.md "Creates and deletes"). */
export const MAX_BATCH = 25;

/** Field names of a single CreateRoleBinding. */
const SINGLE_FIELDS = { identityUid: "identity_uid", roleUid: "role_uid" };

export function createRoleBindingsService(ctx: ServiceContext): Partial<ServiceImpl<typeof RoleBindingsService>> {
  const repo = ctx.store.roleBindings;

  return {
    async getRoleBinding(req) {
      requireValid(checkUidp("uid", req.uid));
      const row = await repo.get(req.uid);
      if (!row) throw notFound("role binding", req.uid);
      return roleBindingToProto(row);
    },

    async createRoleBinding(req, context) {
      const identityUid = req.roleBinding?.identityUid ?? "";
      const roleUid = req.roleBinding?.roleUid ?? "";
      const violations = collect(checkUidp("parent", req.parent), checkUidp(SINGLE_FIELDS.identityUid, identityUid), checkUidp(SINGLE_FIELDS.roleUid, roleUid));
      if (violations.length > 0) throw invalidArgument(violations);
      const [row] = await repo.create(req.parent, [{ identityUid, roleUid, fields: SINGLE_FIELDS }], ctx.now(), bindingGuard(context));
      return roleBindingToProto(row as NonNullable<typeof row>);
    },

    async batchCreateRoleBindings(req, context) {
      const { bindings, violations } = batchBindings(req);
      if (violations.length > 0) throw invalidArgument(violations);
      const rows = await repo.create(req.parent, bindings, ctx.now(), bindingGuard(context));
      return { roleBindings: rows.map(roleBindingToProto) };
    },

    async updateRoleBinding(req, context) {
      const binding = req.roleBinding;
      if (!binding) throw invalidField("role_binding", "is required");
      requireValid(checkUidp("uid", binding.uid));
      const paths = resolveUpdatePaths(RoleBindingSchema, binding, req.updateMask, { mutable: MUTABLE });
      const changes: { -readonly [K in keyof RoleBindingChanges]: RoleBindingChanges[K] } = {};
      const violations: (FieldViolation | undefined)[] = [];
      for (const path of paths) {
        switch (path) {
          case "identity_uid":
            violations.push(checkUidp(SINGLE_FIELDS.identityUid, binding.identityUid));
            changes.identityUid = binding.identityUid;
            break;
          case "role_uid":
            violations.push(checkUidp(SINGLE_FIELDS.roleUid, binding.roleUid));
            changes.roleUid = binding.roleUid;
            break;
        }
      }
      const found = collect(...violations);
      if (found.length > 0) throw invalidArgument(found);
      return roleBindingToProto(await repo.update(binding.uid, changes, SINGLE_FIELDS, bindingGuard(context)));
    },

    async deleteRoleBinding(req, context) {
      requireValid(checkUidp("uid", req.uid));
      await repo.delete(req.uid, bindingGuard(context));
      return {};
    },

    async listRoleBindings(req, context) {
      const violations = collect(checkOptionalUidp("identity", req.identity), checkOptionalUidp("group", req.group), checkOptionalUidp("role", req.role));
      if (violations.length > 0) throw invalidArgument(violations);
      const filter = {
        uidp: toUidpFilter(req.uidp),
        identityUid: req.identity || undefined,
        groupUid: req.group || undefined,
        roleUid: req.role || undefined,
        within: visibleScopes(context),
      };
      const page = await listPage(
        req,
        {
          orders: ROLE_BINDING_ORDERS.spellings,
          defaultOrder: { key: "uid", desc: false },
          binding: pageBinding(context, ListRoleBindingsRequestSchema, req),
          fetch: (q) => repo.list(filter, q),
          count: () => repo.count(filter),
          cursor: (row, order) => ({ value: ROLE_BINDING_ORDERS.value(row, order), uid: row.uid }),
        },
        ctx.pageTokens,
        ctx.now(),
      );
      return {
        roleBindings: page.items.map(roleBindingToProto),
        nextPageToken: page.nextPageToken,
        totalCount: page.totalCount,
        skipped: page.skipped,
      };
    },
  };
}

/**
 * The anti-escalation check of a binding write: the caller holds every capability of the role
 * it grants (`after`) and of the role it takes away (`before`), at the binding's group.
 */
function bindingGuard(context: HandlerContext): BindingGuard {
  const guard = escalationGuard(context);
  return (view, before, after) => {
    if (before) guard.roles(view, before.groupUid, [before.roleUid]);
    if (after) guard.roles(view, after.groupUid, [after.roleUid]);
  };
}

/** The bindings a batch asks for, with every format violation (module comment). */
function batchBindings(req: BatchCreateRoleBindingsRequest): { bindings: NewRoleBinding[]; violations: FieldViolation[] } {
  if (req.requests.length > MAX_BATCH) {
    return { bindings: [], violations: [{ field: "requests", description: `must have at most ${MAX_BATCH} requests` }] };
  }
  const violations: (FieldViolation | undefined)[] = [
    checkUidp("parent", req.parent),
    checkOptionalUidp("role_uid", req.roleUid),
    req.requests.length === 0 ? { field: "requests", description: "at least one request is required" } : undefined,
  ];
  const bindings = req.requests.map((sub, i): NewRoleBinding => {
    const at = `requests[${i}]`;
    const own = sub.roleBinding?.roleUid ?? "";
    const fromBatch = own === "" && req.roleUid !== "";
    const fields = {
      identityUid: `${at}.role_binding.identity_uid`,
      roleUid: fromBatch ? "role_uid" : `${at}.role_binding.role_uid`,
      request: at,
    };
    violations.push(
      sub.parent !== "" && sub.parent !== req.parent ? { field: `${at}.parent`, description: "must be empty or equal to the batch parent" } : undefined,
      checkUidp(fields.identityUid, sub.roleBinding?.identityUid ?? ""),
      fromBatch ? undefined : checkUidp(fields.roleUid, own),
      own !== "" && req.roleUid !== "" && own !== req.roleUid
        ? { field: fields.roleUid, description: "conflicts with the batch role_uid: leave it empty or repeat it" }
        : undefined,
    );
    return { identityUid: sub.roleBinding?.identityUid ?? "", roleUid: fromBatch ? req.roleUid : own, fields };
  });
  return { bindings, violations: collect(...violations) };
}
