/**
 * chainguard.platform.iam.v2beta1.RolesService: built-in and custom roles.
 *
 * Handlers validate, call the repository (src/store/roles.ts), convert. Decisions where the
 * published surface is silent:
 * - Built-in roles (src/store/builtin-roles.ts) are roots with deterministic uids, present from
 *   the first start. Update and Delete of one are FAILED_PRECONDITION with PreconditionFailure
 *   type BUILT_IN_ROLE.
 * - CreateRole: `parent` is an existing group's exact UIDP (malformed: INVALID_ARGUMENT;
 *   missing: NOT_FOUND); uid = parent + "/" + 16 hex. `name` follows the group name rules.
 * - `capabilities`: at least one; each a value our Capability enum defines, neither UNKNOWN
 *   nor CAP_INTERNAL nor marked `internal_only` (those belong to staff roles), else
 *   INVALID_ARGUMENT `capabilities[i]`. Duplicates are dropped, keeping the first occurrence's
 *   place.
 * - UpdateRole: mask paths `name`, `description`, `capabilities`. Without a mask an empty
 *   capability list means "keep" (docs/published-api.md "Update masks"); an explicit mask naming `capabilities` with
 *   an empty list is INVALID_ARGUMENT.
 * - Anti-escalation (src/auth/grant-guard.ts): outside the operator, CreateRole may only use
 *   capabilities the caller holds at `parent`, and UpdateRole may only add capabilities the
 *   caller holds at the role's group and at every group where the role is bound; otherwise
 *   PERMISSION_DENIED, reason PRIVILEGE_ESCALATION. Dropping capabilities is not restricted.
 * - DeleteRole: NOT_FOUND when missing; FAILED_PRECONDITION RESOURCE_IN_USE while a role
 *   binding (`cannot delete role with role bindings`), a group invite or an identity provider's
 *   default role refers to it.
 * - GetRole reads built-in and custom roles alike. ListRoles filters `uidp` (on the role uid:
 *   `in_root` selects the built-in roles) and exact `name`; with no filter it returns the
 *   built-in roles and every custom role. Orders: `uid` (default), `name`,
 *   `create_time`/`created_at`, `update_time`/`updated_at`.
 */
import { getOption, hasOption } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { Capability, CapabilitySchema, internal_only } from "../../../gen/chainguard/capabilities/capabilities_pb.js";
import { ListRolesRequestSchema, RoleSchema, type RolesService } from "../../../gen/chainguard/platform/iam/v2beta1/roles_pb.js";
import { type FieldViolation, invalidArgument, invalidField, notFound } from "../../errors/api-error.js";
import { resolveUpdatePaths } from "../../fieldmask/update-mask.js";
import { listPage } from "../../pagination/page.js";
import { type RoleChanges, ROLE_ORDERS } from "../../store/roles.js";
import type { ServiceContext } from "../context.js";
import { pageBinding, toUidpFilter } from "../list-request.js";
import { checkDescription, checkName, checkUidp, collect, requireValid } from "../validate.js";
import { roleToProto } from "./convert-roles.js";
import { escalationGuard } from "../../auth/grant-guard.js";
import { visibleScopes } from "../../auth/visible-scopes.js";

const MUTABLE = ["name", "description", "capabilities"] as const;

export function createRolesService(ctx: ServiceContext): Partial<ServiceImpl<typeof RolesService>> {
  const repo = ctx.store.roles;

  return {
    async getRole(req) {
      requireValid(checkUidp("uid", req.uid));
      const row = await repo.get(req.uid);
      if (!row) throw notFound("role", req.uid);
      return roleToProto(row);
    },

    async createRole(req, context) {
      const role = req.role;
      const violations = collect(
        checkUidp("parent", req.parent),
        ...(role
          ? [checkName("name", role.name), checkDescription("description", role.description), ...checkCapabilities(role.capabilities)]
          : [{ field: "role", description: "is required" }]),
      );
      if (violations.length > 0 || !role) throw invalidArgument(violations);
      const capabilities = distinct(role.capabilities);
      const guard = escalationGuard(context);
      const row = await repo.create({ parentUid: req.parent, name: role.name, description: role.description, capabilities }, ctx.now(), (view) =>
        guard.roleCapabilities(view, "", [req.parent], capabilities),
      );
      return roleToProto(row);
    },

    async updateRole(req, context) {
      const role = req.role;
      if (!role) throw invalidField("role", "is required");
      requireValid(checkUidp("uid", role.uid));
      const paths = resolveUpdatePaths(RoleSchema, role, req.updateMask, { mutable: MUTABLE });
      const changes: { -readonly [K in keyof RoleChanges]: RoleChanges[K] } = {};
      const violations: (FieldViolation | undefined)[] = [];
      for (const path of paths) {
        switch (path) {
          case "name":
            violations.push(checkName("name", role.name));
            changes.name = role.name;
            break;
          case "description":
            violations.push(checkDescription("description", role.description));
            changes.description = role.description;
            break;
          case "capabilities":
            violations.push(...checkCapabilities(role.capabilities));
            changes.capabilities = distinct(role.capabilities);
            break;
        }
      }
      const found = collect(...violations);
      if (found.length > 0) throw invalidArgument(found);
      const guard = escalationGuard(context);
      const row = await repo.update(role.uid, changes, ctx.now(), (view, current) => {
        if (changes.capabilities === undefined) return;
        // Only what is added can escalate; the role applies at its group and wherever it is
        // bound (bindings sit at the group or below, so this is belt and braces).
        const added = changes.capabilities.filter((c) => !current.capabilities.includes(c));
        const scopes = [...(current.parentUid === null ? [] : [current.parentUid]), ...view.groupsBinding(current.uid)];
        guard.roleCapabilities(view, current.uid, scopes, added);
      });
      return roleToProto(row);
    },

    async deleteRole(req) {
      requireValid(checkUidp("uid", req.uid));
      await repo.delete(req.uid);
      return {};
    },

    async listRoles(req, context) {
      const filter = { uidp: toUidpFilter(req.uidp), name: req.name === "" ? undefined : req.name, within: visibleScopes(context) };
      const page = await listPage(
        req,
        {
          orders: ROLE_ORDERS.spellings,
          defaultOrder: { key: "uid", desc: false },
          binding: pageBinding(context, ListRolesRequestSchema, req),
          fetch: (q) => repo.list(filter, q),
          count: () => repo.count(filter),
          cursor: (row, order) => ({ value: ROLE_ORDERS.value(row, order), uid: row.uid }),
        },
        ctx.pageTokens,
        ctx.now(),
      );
      return {
        roles: page.items.map(roleToProto),
        nextPageToken: page.nextPageToken,
        totalCount: page.totalCount,
        skipped: page.skipped,
      };
    },
  };
}

/**
 * Whether a custom role may hold the capability: a value the enum defines, not UNKNOWN, not
 * CAP_INTERNAL, not marked `(chainguard.capabilities.internal_only)`.
 */
export function grantableCapability(capability: number): boolean {
  const value = CapabilitySchema.values.find((v) => v.number === capability);
  if (value === undefined || capability === Capability.UNKNOWN || capability === Capability.CAP_INTERNAL) return false;
  return !(hasOption(value, internal_only) && getOption(value, internal_only));
}

function checkCapabilities(capabilities: readonly Capability[]): FieldViolation[] {
  if (capabilities.length === 0) return [{ field: "capabilities", description: "at least one capability is required" }];
  return capabilities.flatMap((c, i) =>
    grantableCapability(c) ? [] : [{ field: `capabilities[${i}]`, description: `${Capability[c] ?? c} cannot be granted by a custom role` }],
  );
}

function distinct(capabilities: readonly Capability[]): number[] {
  return [...new Set(capabilities)];
}
