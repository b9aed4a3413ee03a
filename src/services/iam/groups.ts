/**
 * chainguard.platform.iam.v2beta1.GroupsService: the group tree.
 *
 * Handlers validate, call the repository, convert. SQL lives in src/store/sqlite/groups.ts, error
 * construction in src/errors, paging in src/pagination, masks in src/fieldmask.
 * LookupGroup, RequestGroupAccess and CheckEligibility act on the caller's verified
 * organization, matched by the verified email domain of its identity; the rules (and why) are
 * in caller-organization.ts, shared with v1.
 * `verified` is the operator's to change (src/auth/operator-fields.ts): a customer's Create
 * with verified=true, or Update that would change it, is PERMISSION_DENIED
 * (OPERATOR_ONLY_FIELD).
 * DeleteGroup removes the group's own role bindings with it (src/store/groups.ts); since that
 * takes their roles away from whoever holds them, the caller must hold those roles'
 * capabilities at the group (src/auth/grant-guard.ts, PRIVILEGE_ESCALATION): groups.delete
 * alone does not remove an organization its owner still holds.
 */
import type { ServiceImpl } from "@connectrpc/connect";
import { ownerOfNewOrganization } from "../../auth/caller.js";
import { escalationGuard } from "../../auth/grant-guard.js";
import { isOperator, requireOperatorToChange } from "../../auth/operator-fields.js";
import { GroupSchema, type GroupsService, ListGroupsRequestSchema, OrgKind } from "../../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { type FieldViolation, invalidArgument, invalidField, notFound } from "../../errors/api-error.js";
import { resolveUpdatePaths } from "../../fieldmask/update-mask.js";
import { listPage } from "../../pagination/page.js";
import { type GroupChanges, GROUP_ORDERS } from "../../store/groups.js";
import { parentOf } from "../../store/uidp.js";
import type { ServiceContext } from "../context.js";
import { pageBinding, toUidpFilter } from "../list-request.js";
import { checkDescription, checkName, checkOptionalUidp, checkUidp } from "../validate.js";
import { callerEligible, lookupCallerGroup, requestCallerGroupAccess } from "./caller-organization.js";
import { groupToProto } from "./convert.js";
import { visibleScopes } from "../../auth/visible-scopes.js";

const MUTABLE = ["name", "description", "verified", "kind"] as const;

/**
 * What `update_mask: "*"` replaces on this group for this caller: a folder inherits its
 * organization's kind, so its `*` leaves kind out; only the operator sets `verified`, so a
 * customer's `*` leaves it as stored (as the v1 PUT does) instead of failing on a field the
 * caller never sent. Either field named explicitly still goes through its own check.
 */
function wildcardFor(isFolder: boolean, operator: boolean): readonly string[] {
  return MUTABLE.filter((f) => !(f === "kind" && isFolder) && !(f === "verified" && !operator));
}

export function createGroupsService(ctx: ServiceContext): Partial<ServiceImpl<typeof GroupsService>> {
  const repo = ctx.store.groups;

  return {
    async getGroup(req) {
      requireValid(checkUidp("uid", req.uid));
      const row = await repo.get(req.uid);
      if (!row) throw notFound("group", req.uid);
      return groupToProto(row);
    },

    async createGroup(req, context) {
      const group = req.group;
      const violations = collect(
        checkOptionalUidp("parent", req.parent),
        group ? checkName("name", group.name) : { field: "name", description: `name is required` },
        group ? checkDescription("description", group.description) : undefined,
        group && req.parent !== "" && group.kind !== OrgKind.UNSPECIFIED
          ? { field: "kind", description: "only an organization (a group without parent) sets kind; folders inherit it" }
          : undefined,
      );
      if (violations.length > 0 || !group) throw invalidArgument(violations);
      if (group.verified) requireOperatorToChange(context, "verified");
      const row = await repo.create(
        {
          parentUid: req.parent === "" ? null : req.parent,
          name: group.name,
          description: group.description,
          verified: group.verified,
          kind: group.kind,
        },
        ctx.now(),
        ownerOfNewOrganization(req.parent, context),
      );
      return groupToProto(row);
    },

    async updateGroup(req, context) {
      const group = req.group;
      if (!group) throw invalidField("group", "is required");
      requireValid(checkUidp("uid", group.uid));
      const isFolder = parentOf(group.uid) !== null;
      const paths = resolveUpdatePaths(GroupSchema, group, req.updateMask, {
        mutable: MUTABLE,
        wildcard: wildcardFor(isFolder, isOperator(context)),
      });
      const changes: { -readonly [K in keyof GroupChanges]: GroupChanges[K] } = {};
      const violations: (FieldViolation | undefined)[] = [];
      for (const path of paths) {
        switch (path) {
          case "name":
            violations.push(checkName("name", group.name));
            changes.name = group.name;
            break;
          case "description":
            violations.push(checkDescription("description", group.description));
            changes.description = group.description;
            break;
          case "verified":
            changes.verified = group.verified;
            break;
          case "kind":
            if (isFolder) {
              violations.push({ field: "kind", description: "only an organization sets kind; folders inherit it" });
            }
            changes.kind = group.kind;
            break;
        }
      }
      const found = collect(...violations);
      if (found.length > 0) throw invalidArgument(found);
      const guard =
        changes.verified === undefined || isOperator(context)
          ? undefined
          : (current: { verified: boolean }) => {
              if (current.verified !== changes.verified) requireOperatorToChange(context, "verified");
            };
      return groupToProto(await repo.update(group.uid, changes, ctx.now(), guard));
    },

    async lookupGroup(_req, context) {
      return { group: groupToProto(await lookupCallerGroup(ctx, context)) };
    },

    async checkEligibility(_req, context) {
      return { eligible: await callerEligible(ctx, context) };
    },

    async requestGroupAccess(req, context) {
      await requestCallerGroupAccess(ctx, context, "group_uid", req.groupUid);
      return {};
    },

    async deleteGroup(req, context) {
      requireValid(checkUidp("uid", req.uid));
      const guard = escalationGuard(context);
      await repo.delete(req.uid, (view, roles) => guard.roles(view, req.uid, roles));
      return {};
    },

    async listGroups(req, context) {
      const filter = { uidp: toUidpFilter(req.uidp), name: req.name === "" ? undefined : req.name, within: visibleScopes(context) };
      const page = await listPage(
        req,
        {
          orders: GROUP_ORDERS.spellings,
          defaultOrder: { key: "uid", desc: false },
          binding: pageBinding(context, ListGroupsRequestSchema, req),
          fetch: (q) => repo.list(filter, q),
          count: () => repo.count(filter),
          cursor: (row, order) => ({ value: GROUP_ORDERS.value(row, order), uid: row.uid }),
        },
        ctx.pageTokens,
        ctx.now(),
      );
      return {
        groups: page.items.map(groupToProto),
        nextPageToken: page.nextPageToken,
        totalCount: page.totalCount,
        skipped: page.skipped,
      };
    },
  };
}

function collect(...violations: (FieldViolation | undefined)[]): FieldViolation[] {
  return violations.filter((v): v is FieldViolation => v !== undefined);
}

function requireValid(violation: FieldViolation | undefined): void {
  if (violation) throw invalidArgument([violation]);
}
