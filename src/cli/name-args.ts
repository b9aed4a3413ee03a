/**
 * Arguments that name a resource accept a uid or a name, through one resolver.
 *
 * A well-formed uid (40 hex, then /16-hex segments) is used as is; anything else is looked up
 * by exact name with the List RPC's `name` filter, optionally within a parent (`--group` for
 * identities, roles and repos; `--repo` for tags), and must match exactly one resource: none
 * or several is a usage error (exit 2), the latter listing the candidates to choose from and
 * saying how to narrow the search. Names are unique within their parent for repos and tags;
 * identities and roles may share a name across groups, hence the narrowing.
 *
 * Role bindings have no name: one is named by identity + role (+ group), see
 * `resolveRoleBinding`.
 */
import { GroupsService } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { IdentitiesService } from "../../gen/chainguard/platform/iam/v2beta1/identities_pb.js";
import { RoleBindingsService } from "../../gen/chainguard/platform/iam/v2beta1/role_bindings_pb.js";
import { RolesService } from "../../gen/chainguard/platform/iam/v2beta1/roles_pb.js";
import { ReposService } from "../../gen/chainguard/platform/registry/v2beta1/repos_pb.js";
import { TagsService } from "../../gen/chainguard/platform/registry/v2beta1/tags_pb.js";
import { isUidp } from "../store/uidp.js";
import type { CliContext } from "./client.js";
import { usageError } from "./exit-codes.js";

/** One page of candidates is plenty to choose from; totalCount says how many more there are. */
const CANDIDATES = 20;

interface Found {
  readonly items: readonly { uid: string; name: string }[];
  readonly total: bigint | undefined;
}

/** Each kind of named resource: how to find it by name (within a parent uid when given). */
const KINDS = {
  group: {
    narrow: "",
    find: async (ctx: CliContext, name: string): Promise<Found> => {
      const r = await ctx.client(GroupsService).listGroups({ name, pageSize: CANDIDATES });
      return { items: r.groups, total: r.totalCount };
    },
  },
  role: {
    narrow: "--group",
    find: async (ctx: CliContext, name: string, parent?: string): Promise<Found> => {
      const r = await ctx.client(RolesService).listRoles({ name, uidp: { childrenOf: parent ?? "" }, pageSize: CANDIDATES });
      return { items: r.roles, total: r.totalCount };
    },
  },
  identity: {
    narrow: "--group",
    find: async (ctx: CliContext, name: string, parent?: string): Promise<Found> => {
      const r = await ctx.client(IdentitiesService).listIdentities({ name, uidp: { childrenOf: parent ?? "" }, pageSize: CANDIDATES });
      return { items: r.identities, total: r.totalCount };
    },
  },
  repo: {
    narrow: "--group",
    find: async (ctx: CliContext, name: string, parent?: string): Promise<Found> => {
      const r = await ctx.client(ReposService).listRepos({ name, uidp: { descendantsOf: parent ?? "" }, pageSize: CANDIDATES });
      return { items: r.repos, total: r.totalCount };
    },
  },
  tag: {
    narrow: "--repo",
    find: async (ctx: CliContext, name: string, parent?: string): Promise<Found> => {
      const r = await ctx.client(TagsService).listTags({ name, uidp: { childrenOf: parent ?? "" }, pageSize: CANDIDATES });
      return { items: r.tags, total: r.totalCount };
    },
  },
} as const;

export type NamedKind = keyof typeof KINDS;

/**
 * The uid of the `kind` that `arg` names (a uid is returned as is). `parent` (a uid) narrows
 * a name lookup to one group (or repo, for tags).
 */
export async function resolveName(ctx: CliContext, kind: NamedKind, arg: string, parent?: string): Promise<string> {
  if (isUidp(arg)) return arg;
  if (arg === "") throw usageError(`a ${kind} must be named (uid or name)`);
  const found = await KINDS[kind].find(ctx, arg, parent);
  return pickOne(kind, arg, found, parent === undefined ? KINDS[kind].narrow : "");
}

/** The uid of the group `arg` names. */
export const resolveGroup = (ctx: CliContext, arg: string): Promise<string> => resolveName(ctx, "group", arg);

/** The uid of the role `arg` names (built-in roles by their published names, e.g. `viewer`). */
export const resolveRole = (ctx: CliContext, arg: string, group?: string): Promise<string> => resolveName(ctx, "role", arg, group);

/**
 * The role binding of `identity` to `role` (each a uid or name) in `group` (when given, else
 * anywhere the caller can see): exactly one, else a usage error listing the candidates.
 */
export async function resolveRoleBinding(ctx: CliContext, by: { identity: string; role: string; group?: string }): Promise<string> {
  const group = by.group === undefined ? undefined : await resolveGroup(ctx, by.group);
  // The identity may live in another group than the binding (an organization's identity
  // bound at a folder), so its name is looked up everywhere the caller can see.
  const identity = await resolveName(ctx, "identity", by.identity);
  const role = await resolveRole(ctx, by.role);
  const r = await ctx.client(RoleBindingsService).listRoleBindings({
    identity,
    role,
    group: group ?? "",
    pageSize: CANDIDATES,
  });
  const items = r.roleBindings.map((b) => ({ uid: b.uid, name: `${b.identity?.name ?? identity} as ${b.role?.name ?? role} in ${b.group?.name ?? ""}` }));
  return pickOne("role binding", `${by.identity} as ${by.role}`, { items, total: r.totalCount }, group === undefined ? "--group" : "");
}

function pickOne(kind: string, arg: string, found: Found, narrow: string): string {
  const { items, total } = found;
  if (items.length === 1) return items[0]!.uid;
  if (items.length === 0) throw usageError(`no ${kind} named ${JSON.stringify(arg)} (pass a ${kind} uid or an exact name)`);
  const candidates = items.map((r) => `  ${r.uid}  ${r.name}`).join("\n");
  const more = total !== undefined && total > BigInt(items.length) ? `\n  … ${total - BigInt(items.length)} more` : "";
  const hint = narrow ? ` (or narrow the search with ${narrow})` : "";
  throw usageError(
    `several ${kind === "identity" ? "identities" : `${kind}s`} are named ${JSON.stringify(arg)}; pass one of these uids instead${hint}:\n${candidates}${more}`,
  );
}
