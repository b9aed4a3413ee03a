/**
 * Group (and role) arguments accept a uid or a name. A well-formed uid (40 hex, then
 * /16-hex segments) is used as is; anything else is looked up by exact name with the List
 * RPC's `name` filter and must match exactly one resource: none or several is a usage error
 * (exit 2), the latter listing the candidates to choose from.
 */
import { GroupsService } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { RolesService } from "../../gen/chainguard/platform/iam/v2beta1/roles_pb.js";
import { isUidp } from "../store/uidp.js";
import type { CliContext } from "./client.js";
import { usageError } from "./exit-codes.js";

/** One page of candidates is plenty to choose from; totalCount says how many more there are. */
const CANDIDATES = 20;

/** The uid of the group `arg` names. */
export async function resolveGroup(ctx: CliContext, arg: string): Promise<string> {
  if (isUidp(arg)) return arg;
  const res = await ctx.client(GroupsService).listGroups({ name: arg, pageSize: CANDIDATES });
  return pickOne("group", arg, res.groups, res.totalCount);
}

/** The uid of the role `arg` names (built-in roles by their published names, e.g. `viewer`). */
export async function resolveRole(ctx: CliContext, arg: string): Promise<string> {
  if (isUidp(arg)) return arg;
  const res = await ctx.client(RolesService).listRoles({ name: arg, pageSize: CANDIDATES });
  return pickOne("role", arg, res.roles, res.totalCount);
}

function pickOne(kind: string, arg: string, found: readonly { uid: string; name: string }[], total: bigint | undefined): string {
  if (found.length === 1) return found[0]!.uid;
  if (found.length === 0) throw usageError(`no ${kind} named ${JSON.stringify(arg)} (pass a ${kind} uid or an exact name)`);
  const candidates = found.map((r) => `  ${r.uid}  ${r.name}`).join("\n");
  const more = total !== undefined && total > BigInt(found.length) ? `\n  … ${total - BigInt(found.length)} more` : "";
  throw usageError(`several ${kind}s are named ${JSON.stringify(arg)}; pass one of these uids instead:\n${candidates}${more}`);
}
