/**
 * Per-method authorization plans, worked out once at start-up from the descriptors: the
 * method option `(chainguard.annotations.iam)` and the request field marked
 * `(chainguard.annotations.iam_scope)` (docs/published-api.md "Authorization annotations").
 *
 * Plan kinds:
 * - `disabled`: no token needed (the token exchange).
 * - `authenticated`: `enabled: {unscoped: true}` with no capabilities: any signed-in caller.
 * - `scoped`: the caller needs every capability at the UIDP found at `scopePath` in the
 *   request. The path is the top-level field marked iam_scope; when that field is a message
 *   (UpdateGroupRequest.group), the marked field inside it (Group.uid). A marked field inside
 *   an UNmarked message field (CreateIdentityRequest.identity.uid) is not the scope.
 * - `list`: unscoped List, or any unscoped method that reads a set narrowed by a top-level
 *   UIDPFilter (the v1 GetBuildStatus sums over one): the caller sees only groups where it
 *   holds the capabilities; a group the request's UIDPFilter names (`descendants_of`,
 *   `children_of`) is refused only when none of them is at, above or below it (authorize.ts).
 * - `create`: unscoped method with a `parent` field (CreateGroup, v1 Create): an empty parent
 *   creates an organization, open to any signed-in caller; otherwise `scoped` on parent.
 * - `getRole`: GetRole is unscoped so built-in (root) roles are readable by everyone; a
 *   custom role is checked like a scoped method on its uid.
 * - `anywhere`: an unscoped method with capabilities whose request names no group at all
 *   (the v1 GetPackageVersionMetadata reads data about public packages, not about a
 *   tenant): the caller must hold the capabilities at some group, any one. Holding them
 *   nowhere is PERMISSION_DENIED, so a signed-in stranger with no binding gets nothing.
 * - `operatorOnly`: no IAM option, or a shape none of the above covers. Fails closed.
 */
import { type DescField, type DescMessage, type DescMethod, type DescService, getOption, hasOption } from "@bufbuild/protobuf";
import { iam, iam_scope } from "../../gen/chainguard/annotations/iam_pb.js";

export type MethodPlan =
  | { readonly kind: "disabled" }
  | { readonly kind: "authenticated" }
  | { readonly kind: "scoped"; readonly capabilities: readonly number[]; readonly scopePath: readonly DescField[] }
  | {
      readonly kind: "list";
      readonly capabilities: readonly number[];
      /** Paths to the uids a UIDPFilter narrows the List to (`uidp.descendants_of`, `uidp.children_of`). */
      readonly namedScopes: readonly (readonly DescField[])[];
    }
  | { readonly kind: "create"; readonly capabilities: readonly number[]; readonly parent: DescField }
  | { readonly kind: "getRole"; readonly capabilities: readonly number[]; readonly uid: DescField }
  | { readonly kind: "anywhere"; readonly capabilities: readonly number[] }
  | { readonly kind: "operatorOnly"; readonly why: string };

export type MethodPlans = ReadonlyMap<DescMethod, MethodPlan>;

function isScopeField(f: DescField): boolean {
  return hasOption(f, iam_scope) && getOption(f, iam_scope) === true;
}

function stringField(message: DescMessage, name: string): DescField | undefined {
  const f = message.fields.find((x) => x.name === name);
  return f && f.fieldKind === "scalar" && f.scalar === 9 /* STRING */ ? f : undefined;
}

/** The path to the scope UIDP of a request message, or undefined. */
export function scopePathOf(input: DescMessage): DescField[] | undefined {
  const top = input.fields.find(isScopeField);
  if (!top) return undefined;
  if (top.fieldKind === "scalar" && top.scalar === 9) return [top];
  if (top.fieldKind === "message") {
    const inner = top.message.fields.find(isScopeField);
    if (inner && inner.fieldKind === "scalar" && inner.scalar === 9) return [top, inner];
  }
  return undefined;
}

const UIDP_FILTER = "chainguard.platform.common.UIDPFilter";
/** The UIDPFilter fields that name a subtree to list from. */
const NAMED_SCOPE_FIELDS = ["descendants_of", "children_of"];

function uidpFilterField(input: DescMessage): DescField | undefined {
  return input.fields.find((f) => f.fieldKind === "message" && f.message.typeName === UIDP_FILTER);
}

/** In a List request, the paths to the uids its top-level UIDPFilter names, if it has one. */
function namedScopePaths(input: DescMessage): DescField[][] {
  const filter = uidpFilterField(input);
  if (filter?.fieldKind !== "message") return [];
  return NAMED_SCOPE_FIELDS.flatMap((name) => {
    const f = stringField(filter.message, name);
    return f ? [[filter, f]] : [];
  });
}

export function planFor(method: DescMethod): MethodPlan {
  if (!hasOption(method, iam)) return { kind: "operatorOnly", why: "the method declares no IAM rule" };
  const option = getOption(method, iam);
  if (option.mode.case === "disabled") return { kind: "disabled" };
  if (option.mode.case !== "enabled") return { kind: "operatorOnly", why: "the method's IAM rule has no mode" };
  const { capabilities, unscoped } = option.mode.value;
  if (!unscoped) {
    const scopePath = scopePathOf(method.input);
    if (!scopePath || capabilities.length === 0) return { kind: "operatorOnly", why: "a scoped IAM rule without scope field or capabilities" };
    return { kind: "scoped", capabilities, scopePath };
  }
  if (capabilities.length === 0) return { kind: "authenticated" };
  if (method.name.startsWith("List") || uidpFilterField(method.input)) {
    return { kind: "list", capabilities, namedScopes: namedScopePaths(method.input) };
  }
  const parent = stringField(method.input, "parent");
  if (parent) return { kind: "create", capabilities, parent };
  const uid = stringField(method.input, "uid");
  if (method.name === "GetRole" && uid) return { kind: "getRole", capabilities, uid };
  if (uid || method.input.fields.some(isScopeField)) {
    // A request that names a resource but is not one of the shapes above: refusing is the
    // only safe answer until someone decides how it is checked.
    return { kind: "operatorOnly", why: "an unscoped IAM rule this server has no plan for" };
  }
  return { kind: "anywhere", capabilities };
}

/** Plans for every method of the given services. */
export function buildPlans(services: readonly DescService[]): MethodPlans {
  const plans = new Map<DescMethod, MethodPlan>();
  for (const s of services) for (const m of s.methods) plans.set(m, planFor(m));
  return plans;
}

/** The string at `path` in a request message ("" when any step is unset). */
export function readPath(request: unknown, path: readonly DescField[]): string {
  let at: unknown = request;
  for (const f of path) {
    if (at === null || typeof at !== "object") return "";
    at = (at as Record<string, unknown>)[f.localName];
  }
  return typeof at === "string" ? at : "";
}
