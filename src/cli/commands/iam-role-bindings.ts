/** `trellis iam role-bindings list|create|delete`. */
import type { Command } from "commander";
import { RoleBindingSchema, RoleBindingsService } from "../../../gen/chainguard/platform/iam/v2beta1/role_bindings_pb.js";
import type { Io } from "../io.js";
import { walk, withLimit } from "../list-walk.js";
import { resolveGroup, resolveName, resolveRole, resolveRoleBinding } from "../name-args.js";
import { usageError } from "../exit-codes.js";
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
    .option("--identity <identity>", "only bindings of this identity (uid or name)")
    .option("--role <role>", "only bindings of this role (uid or name)")
    .action(
      clientAction(io, async (ctx, o: { group?: string; identity?: string; role?: string; limit?: number }) => {
        const uidp = { descendantsOf: o.group ? await resolveGroup(ctx, o.group) : "" };
        const role = o.role ? await resolveRole(ctx, o.role) : "";
        const identity = o.identity ? await resolveName(ctx, "identity", o.identity) : "";
        const client = ctx.client(RoleBindingsService);
        const items = await walk(
          async (pageSize, pageToken) => {
            const r = await client.listRoleBindings({ uidp, identity, role, pageSize, pageToken });
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
    .requiredOption("--identity <identity>", "the identity to bind (uid or name)")
    .requiredOption("--role <role>", "the role to grant (uid or name, e.g. viewer)")
    .action(
      clientAction(io, async (ctx, o: { group: string; identity: string; role: string }) => {
        const binding = await ctx.client(RoleBindingsService).createRoleBinding({
          parent: await resolveGroup(ctx, o.group),
          roleBinding: { identityUid: await resolveName(ctx, "identity", o.identity), roleUid: await resolveRole(ctx, o.role) },
        });
        print(ctx, roleBindingView, [binding], true);
      }),
    );

  bindings
    .command("delete")
    .description("delete a role binding, by uid or by --identity and --role (and --group)")
    .argument("[uid]", "role binding uid")
    .option("--identity <identity>", "the bound identity (uid or name)")
    .option("--role <role>", "the bound role (uid or name)")
    .option("--group <group>", "the group the binding is at (uid or name)")
    .action(
      clientAction(io, async (ctx, o: { identity?: string; role?: string; group?: string }, given: string | undefined) => {
        const byPair = o.identity !== undefined || o.role !== undefined;
        if (given !== undefined && byPair) throw usageError("give a role binding uid, or --identity and --role, not both");
        if (given === undefined && (o.identity === undefined || o.role === undefined)) {
          throw usageError("name the role binding: its uid, or --identity and --role (and --group)");
        }
        const uid = given ?? (await resolveRoleBinding(ctx, { identity: o.identity!, role: o.role!, group: o.group }));
        await ctx.client(RoleBindingsService).deleteRoleBinding({ uid });
        printDeleted(ctx, "role binding", uid);
      }),
    );
}
