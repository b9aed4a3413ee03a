/**
 * Authorization: the second before-call hook, driven by the per-method plans (iam-plan.ts).
 *
 * A role bound at group G grants its capabilities at G and at every descendant of G, so the
 * caller holds capability C at scope S when some binding at S or at an ancestor of S grants a
 * role containing C. The caller's bindings are read fresh on every call (no decision cache:
 * a revoked binding stops working on the next call).
 *
 * The check runs before the implementation, i.e. before any existence check: an unknown uid
 * and a forbidden one both get the same PERMISSION_DENIED, so uids cannot be probed.
 * Operator tokens (OPERATOR_CLAIM, only mintable with our signing key) pass every check and
 * see every row.
 */
import type { DescField, DescMethod } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import { Capability } from "../../gen/chainguard/capabilities/capabilities_pb.js";
import { invalidField, permissionDenied } from "../errors/api-error.js";
import { builtInRoleUid, BUILT_IN_ROLES } from "../store/builtin-roles.js";
import type { Grant } from "../store/role-bindings.js";
import { isAncestorOrSelf, isUidp } from "../store/uidp.js";
import { callerOf } from "./caller.js";
import { type MethodPlans, readPath } from "./iam-plan.js";
import { isLimited, narrowGrants } from "./token-limits.js";
import { VISIBLE_SCOPES } from "./visible-scopes.js";

export interface AuthorizationDeps {
  readonly plans: MethodPlans;
  /** The caller's bindings: (group, capabilities) pairs. */
  readonly grantsOf: (identityUid: string) => Promise<Grant[]>;
}

const BUILT_IN_ROLE_UIDS = new Set(BUILT_IN_ROLES.map((r) => builtInRoleUid(r.name)));

/** True when the grants give every capability at `scope` (bindings at scope or above). */
export function holdsAt(grants: readonly Grant[], scope: string, capabilities: readonly number[]): boolean {
  const held = new Set<number>();
  for (const g of grants) if (isAncestorOrSelf(g.groupUid, scope)) for (const c of g.capabilities) held.add(c);
  return capabilities.every((c) => held.has(c));
}

/**
 * The groups (each standing for its subtree) where the grants give every capability: the
 * bound groups that qualify, minus those already covered by a qualifying ancestor.
 */
export function visibleGroups(grants: readonly Grant[], capabilities: readonly number[]): string[] {
  const qualifying = [...new Set(grants.map((g) => g.groupUid))].filter((g) => holdsAt(grants, g, capabilities));
  return qualifying.filter((g) => !qualifying.some((other) => other !== g && isAncestorOrSelf(other, g)));
}

function denied(method: DescMethod, capabilities: readonly number[], scope: string) {
  const names = capabilities.map((c) => Capability[c] ?? String(c)).join(", ");
  return permissionDenied(`the caller does not hold ${names} on ${JSON.stringify(scope)}`, {
    metadata: { method: `${method.parent.typeName}/${method.name}`, capabilities: names, scope },
  });
}

/**
 * The capability-free methods about the caller that a down-scoped token may still call: they
 * only read about the caller (or, LookupIdentity, about nothing). Every other such method
 * changes something on the caller's behalf (UpdateIdentityMetadata, RequestGroupAccess) and
 * is refused, as is founding an organization: a token asked to be worth less must not write
 * outside what it was reduced to. An allowlist, so a method added later fails closed.
 */
const READS_ABOUT_THE_CALLER = new Set(["LookupIdentity", "LookupGroup", "CheckEligibility"]);

function downScopedRefusal(method: DescMethod, what: string) {
  return permissionDenied(`a down-scoped token cannot ${what}; exchange for a token without cap/scopes`, {
    reason: "TOKEN_DOWN_SCOPED",
    metadata: { method: `${method.parent.typeName}/${method.name}` },
  });
}

function fieldPath(path: readonly DescField[]): string {
  return path.map((f) => f.name).join(".");
}

export function createAuthorizationHook(deps: AuthorizationDeps) {
  // Named: the name is the span name when tracing is on (src/observe/tracing-sdk.ts).
  return async function authorize(method: DescMethod, context: HandlerContext, request: unknown): Promise<void> {
    const plan = deps.plans.get(method) ?? { kind: "operatorOnly" as const, why: "unknown method" };
    if (plan.kind === "disabled") return;
    const caller = callerOf(context);
    // The authentication hook runs first and always sets a caller on non-disabled methods.
    if (!caller) throw permissionDenied("no authenticated caller");
    if (caller.operator) return;
    const limited = isLimited(caller.limits);
    if (plan.kind === "authenticated") {
      if (limited && !READS_ABOUT_THE_CALLER.has(method.name)) throw downScopedRefusal(method, `call ${method.name}`);
      return;
    }
    if (plan.kind === "operatorOnly") throw permissionDenied(`only an operator may call ${method.name} (${plan.why})`);

    // A down-scoped token holds its identity's bindings narrowed to what it asked for
    // (token-limits.ts), for every plan below, Lists included.
    const grants = isUidp(caller.subject) ? narrowGrants(await deps.grantsOf(caller.subject), caller.limits) : [];
    const requireAt = (path: readonly DescField[], capabilities: readonly number[]) => {
      const scope = readPath(request, path);
      if (!isUidp(scope)) throw invalidField(fieldPath(path), "must be a valid UIDP");
      if (!holdsAt(grants, scope, capabilities)) throw denied(method, capabilities, scope);
    };

    switch (plan.kind) {
      case "scoped":
        requireAt(plan.scopePath, plan.capabilities);
        return;
      case "list": {
        // The List shows what the caller may see (unscoped): the rows at or under its visible
        // groups, which the repository intersects with the request's filter in SQL, so rows,
        // paging and total_count only ever count visible rows. A group the filter names
        // (`uidp.descendants_of` / `children_of`) is refused only when the caller can see
        // nothing at, above or below it: a viewer bound at a folder who lists its
        // organization's descendants gets the rows of its folder (the organization's uid is
        // a prefix of its own folder's, so naming it reveals nothing). An unknown uid looks
        // the same as a forbidden one: no visible group lies above an unknown uid without it
        // existing (a uid's ancestors are its prefixes), and below one nothing exists. A
        // malformed uid is left to the List's own validation (INVALID_ARGUMENT on the field);
        // the operator returned above and lists anything.
        const visible = visibleGroups(grants, plan.capabilities);
        for (const path of plan.namedScopes) {
          const named = readPath(request, path);
          if (named !== "" && isUidp(named) && !visible.some((v) => isAncestorOrSelf(v, named) || isAncestorOrSelf(named, v))) {
            throw denied(method, plan.capabilities, named);
          }
        }
        context.values.set(VISIBLE_SCOPES, visible);
        return;
      }
      case "create":
        // An empty parent creates an organization: open to every signed-in caller, who
        // becomes its owner in the same transaction (src/store/sqlite/groups.ts).
        if (readPath(request, [plan.parent]) === "") {
          if (limited) throw downScopedRefusal(method, "found an organization");
          return;
        }
        requireAt([plan.parent], plan.capabilities);
        return;
      case "getRole":
        if (BUILT_IN_ROLE_UIDS.has(readPath(request, [plan.uid]))) return;
        requireAt([plan.uid], plan.capabilities);
        return;
      case "anywhere":
        // The request names no group; holding the capabilities at any one is enough.
        if (visibleGroups(grants, plan.capabilities).length === 0) throw denied(method, plan.capabilities, "any group");
        return;
    }
  };
}
