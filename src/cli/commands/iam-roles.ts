/** `trellis iam roles list|get|create|delete`. */
import type { Command } from "commander";
import { type Capability, CapabilitySchema } from "../../../gen/chainguard/capabilities/capabilities_pb.js";
import { RoleSchema, RolesService } from "../../../gen/chainguard/platform/iam/v2beta1/roles_pb.js";
import { usageError } from "../exit-codes.js";
import type { Io } from "../io.js";
import { walk, withLimit } from "../list-walk.js";
import { resolveGroup, resolveRole } from "../name-args.js";
import type { ResourceView } from "../output.js";
import { clientAction, print, printDeleted } from "./common.js";

export const roleView: ResourceView<typeof RoleSchema> = {
  schema: RoleSchema,
  id: (r) => r.uid,
  columns: [
    { header: "UID", cell: (r) => r.uid },
    { header: "NAME", cell: (r) => r.name },
    { header: "CAPABILITIES", cell: (r) => String(r.capabilities.length) },
    { header: "DESCRIPTION", cell: (r) => r.description },
  ],
};

/** `CAP_IAM_GROUPS_LIST`, `iam_groups_list` or `IAM_GROUPS_LIST` → the enum value. */
export function parseCapability(value: string, previous: Capability[] | undefined): Capability[] {
  const wanted = value.toUpperCase().replace(/[.-]/g, "_");
  const found = CapabilitySchema.values.find((v) => v.name === wanted || v.name === `CAP_${wanted}`);
  if (!found || found.number === 0) throw usageError(`unknown capability ${JSON.stringify(value)} (e.g. CAP_IAM_GROUPS_LIST)`);
  return [...(previous ?? []), found.number as Capability];
}

export function registerRoles(iam: Command, io: Io): void {
  const roles = iam.command("roles").description("roles: named sets of capabilities (built-in ones such as viewer, and custom ones)");

  withLimit(roles.command("list"))
    .description("list roles (built-in and custom)")
    .option("--group <group>", "only custom roles defined in this group (uid or name)")
    .option("--name <name>", "only roles with exactly this name")
    .action(
      clientAction(io, async (ctx, o: { group?: string; name?: string; limit?: number }) => {
        const uidp = { childrenOf: o.group ? await resolveGroup(ctx, o.group) : "" };
        const client = ctx.client(RolesService);
        const items = await walk(
          async (pageSize, pageToken) => {
            const r = await client.listRoles({ uidp, name: o.name ?? "", pageSize, pageToken });
            return { items: r.roles, nextPageToken: r.nextPageToken, totalCount: r.totalCount };
          },
          { limit: o.limit, io, noun: "roles" },
        );
        print(ctx, roleView, items);
      }),
    );

  roles
    .command("get")
    .description("show one role and its capabilities")
    .argument("<role>", "role uid or name")
    .action(
      clientAction(io, async (ctx, _o, role: string) => {
        print(ctx, roleView, [await ctx.client(RolesService).getRole({ uid: await resolveRole(ctx, role) })], true);
      }),
    );

  roles
    .command("create")
    .description("create a custom role in a group")
    .argument("<name>", "role name")
    .requiredOption("--group <group>", "the group that owns the role (uid or name)")
    .requiredOption("--capability <cap>", "a capability it grants; repeatable", parseCapability)
    .option("--description <text>", "description")
    .action(
      clientAction(io, async (ctx, o: { group: string; capability: Capability[]; description?: string }, name: string) => {
        const role = await ctx.client(RolesService).createRole({
          parent: await resolveGroup(ctx, o.group),
          role: { name, description: o.description ?? "", capabilities: o.capability },
        });
        print(ctx, roleView, [role], true);
      }),
    );

  roles
    .command("delete")
    .description("delete a custom role")
    .argument("<uid>", "role uid")
    .action(
      clientAction(io, async (ctx, _o, uid: string) => {
        await ctx.client(RolesService).deleteRole({ uid });
        printDeleted(ctx, "role", uid);
      }),
    );
}
