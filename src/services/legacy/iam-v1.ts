/**
 * chainguard.platform.iam.Groups (v1), kept alongside v2 over the same table: the
 * published API keeps v1 available beside v2 (docs/published-api.md "Lists", "Update masks").
 *
 * v1 shapes: `id` instead of `uid`, lists as `{items: [...]}` with no paging, resource
 * limits with the v1 members (clusters, idps, repositories), and Update as a full
 * replacement (PUT, body "*"). Validation and errors are the v2 ones. The published v1
 * Group message carries no timestamps, so none are returned. LookupGroup, RequestGroupAccess
 * (`group_id`) and CheckEligibility are the v2beta1 ones (src/services/iam/caller-organization.ts).
 */
import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { type Group, GroupSchema, type Groups } from "../../../gen/chainguard/platform/iam/groups_v1_pb.js";
import { type FieldViolation, failedPrecondition, invalidArgument, invalidField } from "../../errors/api-error.js";
import type { GroupRecord } from "../../store/groups.js";
import type { ServiceContext } from "../context.js";
import { toUidpFilter } from "../list-request.js";
import { checkDescription, checkName, checkOptionalUidp, checkUidp } from "../validate.js";
import { ownerOfNewOrganization } from "../../auth/caller.js";
import { escalationGuard } from "../../auth/grant-guard.js";
import { isOperator, requireOperatorToChange } from "../../auth/operator-fields.js";
import { callerEligible, lookupCallerGroup, requestCallerGroupAccess } from "../iam/caller-organization.js";
import { visibleScopes } from "../../auth/visible-scopes.js";

/** The v1 list is unpaged; beyond this many matches it asks the caller to page with v2. */
export const V1_LIST_MAX = 10_000;

export function createGroupsV1Service(ctx: ServiceContext): Partial<ServiceImpl<typeof Groups>> {
  const repo = ctx.store.groups;
  return {
    async list(req, context) {
      const violation = checkOptionalUidp("id", req.id);
      if (violation) throw invalidArgument([violation]);
      const uidp = toUidpFilter(req.uidp);
      const rows = await repo.listAll(
        {
          uidp: req.id ? { ...uidp, ids: [...(uidp.ids ?? []), req.id] } : uidp,
          name: req.name === "" ? undefined : req.name,
          within: visibleScopes(context),
        },
        V1_LIST_MAX,
      );
      if (rows.length > V1_LIST_MAX) {
        throw failedPrecondition({
          type: "TOO_MANY_RESULTS",
          description: `more than ${V1_LIST_MAX} groups match; narrow the filter or page with /iam/v2beta1/groups`,
        });
      }
      return { items: rows.map(groupV1) };
    },

    async create(req, context) {
      const group = req.group;
      const violations = [
        checkOptionalUidp("parent", req.parent),
        group ? checkName("name", group.name) : { field: "name", description: "name is required" },
        group ? checkDescription("description", group.description) : undefined,
      ].filter((v): v is FieldViolation => v !== undefined);
      if (violations.length > 0 || !group) throw invalidArgument(violations);
      if (group.verified) requireOperatorToChange(context, "verified");
      const row = await repo.create(
        {
          parentUid: req.parent === "" ? null : req.parent,
          name: group.name,
          description: group.description,
          verified: group.verified,
          kind: req.parent === "" ? group.kind : 0,
        },
        ctx.now(),
        ownerOfNewOrganization(req.parent, context),
      );
      return groupV1(row);
    },

    async update(req, context) {
      const violations = [checkUidp("id", req.id), checkName("name", req.name), checkDescription("description", req.description)].filter(
        (v): v is FieldViolation => v !== undefined,
      );
      if (violations.length > 0) throw invalidArgument(violations);
      // v1 PUT replaces every mutable field (docs/published-api.md "Update masks": v1 resets what is left out).
      // Except `verified` for a customer (src/auth/operator-fields.ts): false cannot be told
      // from "not sent", so it keeps the stored value; true on a group that is not verified is
      // PERMISSION_DENIED, as on v2beta1.
      const operator = isOperator(context);
      const changes = { name: req.name, description: req.description, ...(operator || req.verified ? { verified: req.verified } : {}) };
      const guard = operator
        ? undefined
        : (current: { verified: boolean }) => {
            if (changes.verified !== undefined && current.verified !== changes.verified) requireOperatorToChange(context, "verified");
          };
      return groupV1(await repo.update(req.id, changes, ctx.now(), guard));
    },

    async lookupGroup(_req, context) {
      return { group: groupV1(await lookupCallerGroup(ctx, context)) };
    },

    async checkEligibility(_req, context) {
      return { eligible: await callerEligible(ctx, context) };
    },

    async requestGroupAccess(req, context) {
      await requestCallerGroupAccess(ctx, context, "group_id", req.groupId);
      return {};
    },

    async delete(req, context) {
      if (req.id === "") throw invalidField("id", "is required");
      const violation = checkUidp("id", req.id);
      if (violation) throw invalidArgument([violation]);
      const guard = escalationGuard(context);
      await repo.delete(req.id, (view, roles) => guard.roles(view, req.id, roles));
      return {};
    },
  };
}

function groupV1(row: GroupRecord): Group {
  return create(GroupSchema, {
    id: row.uid,
    name: row.name,
    description: row.description,
    resourceLimits: { clusters: 0, idps: 0, repositories: 0 },
    verified: row.verified,
    kind: row.kind,
  });
}
