/** `trellis iam roles list|get|create|delete`. */
import type { Command } from "commander";
import type { Capability } from "../../../gen/chainguard/capabilities/capabilities_pb.js";
import { parseCapability } from "../capabilities.js";
import { RoleSchema, RolesService } from "../../../gen/chainguard/platform/iam/v2beta1/roles_pb.js";
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
    .option("--group <group>", "narrow a name lookup to the custom roles of this group (uid or name)")
    .action(
      clientAction(io, async (ctx, o: { group?: string }, role: string) => {
        const uid = await resolveRole(ctx, role, o.group === undefined ? undefined : await resolveGroup(ctx, o.group));
        print(ctx, roleView, [await ctx.client(RolesService).getRole({ uid })], true);
      }),
    );

  roles
    .command("create")
    .description("create a custom role in a group")
    .argument("<name>", "role name")
    .requiredOption("--group <group>", "the group that owns the role (uid or name)")
    .requiredOption("--capability <cap>", "a capability it grants, by its published name (groups.list); repeatable", parseCapability)
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
    .argument("<role>", "role uid or name")
    .option("--group <group>", "narrow a name lookup to the custom roles of this group (uid or name)")
    .action(
      clientAction(io, async (ctx, o: { group?: string }, role: string) => {
        const uid = await resolveRole(ctx, role, o.group === undefined ? undefined : await resolveGroup(ctx, o.group));
        await ctx.client(RolesService).deleteRole({ uid });
        printDeleted(ctx, "role", uid);
      }),
    );
}
