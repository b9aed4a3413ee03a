/** `trellis iam role-bindings list|create|delete`. */
import type { Command } from "commander";
import { RoleBindingSchema, RoleBindingsService } from "../../../gen/chainguard/platform/iam/v2beta1/role_bindings_pb.js";
import type { Io } from "../io.js";
import { walk, withLimit } from "../list-walk.js";
import { resolveGroup, resolveRole } from "../name-args.js";
import { type ResourceView, time } from "../output.js";
import { clientAction, print, printDeleted } from "./common.js";

export const roleBindingView: ResourceView<typeof RoleBindingSchema> = {
  schema: RoleBindingSchema,
  id: (b) => b.uid,
  columns: [
    { header: "UID", cell: (b) => b.uid },
    { header: "GROUP", cell: (b) => b.group?.name ?? "" },
    { header: "IDENTITY", cell: (b) => b.identity?.name ?? "" },
    { header: "ROLE", cell: (b) => b.role?.name ?? "" },
    { header: "CREATED", cell: (b) => time(b.createTime) },
  ],
};

export function registerRoleBindings(iam: Command, io: Io): void {
  const bindings = iam.command("role-bindings").description("role bindings: grant an identity a role in a group");

  withLimit(bindings.command("list"))
    .description("list role bindings")
    .option("--group <group>", "only bindings in this group and below (uid or name)")
    .option("--identity <uid>", "only bindings of this identity")
    .option("--role <role>", "only bindings of this role (uid or name)")
    .action(
      clientAction(io, async (ctx, o: { group?: string; identity?: string; role?: string; limit?: number }) => {
        const uidp = { descendantsOf: o.group ? await resolveGroup(ctx, o.group) : "" };
        const role = o.role ? await resolveRole(ctx, o.role) : "";
        const client = ctx.client(RoleBindingsService);
        const items = await walk(
          async (pageSize, pageToken) => {
            const r = await client.listRoleBindings({ uidp, identity: o.identity ?? "", role, pageSize, pageToken });
            return { items: r.roleBindings, nextPageToken: r.nextPageToken, totalCount: r.totalCount };
          },
          { limit: o.limit, io, noun: "role bindings" },
        );
        print(ctx, roleBindingView, items);
      }),
    );

  bindings
    .command("create")
    .description("bind an identity to a role in a group")
    .requiredOption("--group <group>", "the group the role applies to (uid or name)")
    .requiredOption("--identity <uid>", "the identity to bind")
    .requiredOption("--role <role>", "the role to grant (uid or name, e.g. viewer)")
    .action(
      clientAction(io, async (ctx, o: { group: string; identity: string; role: string }) => {
        const binding = await ctx.client(RoleBindingsService).createRoleBinding({
          parent: await resolveGroup(ctx, o.group),
          roleBinding: { identityUid: o.identity, roleUid: await resolveRole(ctx, o.role) },
        });
        print(ctx, roleBindingView, [binding], true);
      }),
    );

  bindings
    .command("delete")
    .description("delete a role binding")
    .argument("<uid>", "role binding uid")
    .action(
      clientAction(io, async (ctx, _o, uid: string) => {
        await ctx.client(RoleBindingsService).deleteRoleBinding({ uid });
        printDeleted(ctx, "role binding", uid);
      }),
    );
}
