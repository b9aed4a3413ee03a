/** `trellis iam groups list|get|create|update|delete`. */
import type { Command } from "commander";
import { GroupSchema, GroupsService } from "../../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { usageError } from "../exit-codes.js";
import { resolveGroup } from "../name-args.js";
import type { Io } from "../io.js";
import { walk, withLimit } from "../list-walk.js";
import { type ResourceView, time } from "../output.js";
import { clientAction, print, printDeleted } from "./common.js";

export const groupView: ResourceView<typeof GroupSchema> = {
  schema: GroupSchema,
  id: (g) => g.uid,
  columns: [
    { header: "UID", cell: (g) => g.uid },
    { header: "NAME", cell: (g) => g.name },
    { header: "DESCRIPTION", cell: (g) => g.description },
    { header: "CREATED", cell: (g) => time(g.createTime) },
  ],
};

export function registerGroups(iam: Command, io: Io): void {
  const groups = iam.command("groups").description("groups: the folders that hold identities, role bindings and repos");

  withLimit(groups.command("list"))
    .description("list groups (all you can see, or those under a group)")
    .option("--parent <group>", "only direct children of this group (uid or name)")
    .option("--descendants-of <group>", "only groups under this group at any depth (uid or name)")
    .option("--name <name>", "only groups with exactly this name")
    .option("--order-by <field>", "sort: name, name desc, created_at desc ...")
    .option("--tree", "draw the hierarchy (children under their parents, by name)")
    .action(
      clientAction(io, async (ctx, o: { parent?: string; descendantsOf?: string; name?: string; orderBy?: string; limit?: number; tree?: boolean }) => {
        if (o.parent && o.descendantsOf) throw usageError("--parent and --descendants-of cannot be combined");
        if (o.tree && ctx.formatFlag !== undefined && ctx.formatFlag !== "table") {
          throw usageError(`--tree draws the hierarchy as text; it cannot be combined with -o ${ctx.formatFlag}`);
        }
        const uidp = {
          childrenOf: o.parent ? await resolveGroup(ctx, o.parent) : "",
          descendantsOf: o.descendantsOf ? await resolveGroup(ctx, o.descendantsOf) : "",
        };
        const client = ctx.client(GroupsService);
        const items = await walk(
          async (pageSize, pageToken) => {
            const r = await client.listGroups({ uidp, name: o.name ?? "", orderBy: o.orderBy ?? "", pageSize, pageToken });
            return { items: r.groups, nextPageToken: r.nextPageToken, totalCount: r.totalCount };
          },
          { limit: o.limit, io, noun: "groups" },
        );
        if (o.tree) ctx.io.out(drawTree(items));
        else print(ctx, groupView, items);
      }),
    );

  groups
    .command("get")
    .description("show one group")
    .argument("<group>", "group uid or name")
    .action(
      clientAction(io, async (ctx, _o, group: string) => {
        const g = await ctx.client(GroupsService).getGroup({ uid: await resolveGroup(ctx, group) });
        print(ctx, groupView, [g], true);
      }),
    );

  groups
    .command("create")
    .description("create a group (a root organization without --parent)")
    .argument("<name>", "group name: lowercase letters, digits, space, . _ -")
    .option("--parent <group>", "parent group (uid or name)")
    .option("--description <text>", "description")
    .action(
      clientAction(io, async (ctx, o: { parent?: string; description?: string }, name: string) => {
        const parent = o.parent ? await resolveGroup(ctx, o.parent) : "";
        const g = await ctx.client(GroupsService).createGroup({ parent, group: { name, description: o.description ?? "" } });
        print(ctx, groupView, [g], true);
      }),
    );

  groups
    .command("update")
    .description("change a group's name or description (only the fields given)")
    .argument("<group>", "group uid or name")
    .option("--name <name>", "new name")
    .option("--description <text>", "new description")
    .action(
      clientAction(io, async (ctx, o: { name?: string; description?: string }, group: string) => {
        const paths = [o.name !== undefined && "name", o.description !== undefined && "description"].filter((p) => p !== false);
        if (paths.length === 0) throw usageError("nothing to update: give --name and/or --description");
        const uid = await resolveGroup(ctx, group);
        const g = await ctx.client(GroupsService).updateGroup({
          group: { uid, name: o.name ?? "", description: o.description ?? "" },
          updateMask: { paths },
        });
        print(ctx, groupView, [g], true);
      }),
    );

  groups
    .command("delete")
    .description("delete an empty group")
    .argument("<group>", "group uid or name")
    .action(
      clientAction(io, async (ctx, _o, group: string) => {
        const uid = await resolveGroup(ctx, group);
        await ctx.client(GroupsService).deleteGroup({ uid });
        printDeleted(ctx, "group", uid);
      }),
    );
}

/**
 * The groups as a tree: each under its parent (the uid minus its last segment) when the parent
 * is among them, else at the top; siblings by name.
 *
 *   acme  <uid>
 *   ├── eng  <uid>
 *   │   └── web  <uid>
 *   └── ops  <uid>
 */
export function drawTree(groups: readonly { uid: string; name: string }[]): string {
  const byUid = new Map(groups.map((g) => [g.uid, g]));
  const children = new Map<string, { uid: string; name: string }[]>();
  const roots: { uid: string; name: string }[] = [];
  for (const g of groups) {
    const cut = g.uid.lastIndexOf("/");
    const parent = cut < 0 ? undefined : g.uid.slice(0, cut);
    if (parent !== undefined && byUid.has(parent)) {
      const list = children.get(parent) ?? [];
      list.push(g);
      children.set(parent, list);
    } else {
      roots.push(g);
    }
  }
  const byName = (a: { name: string; uid: string }, b: { name: string; uid: string }) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.uid < b.uid ? -1 : 1);
  const lines: string[] = [];
  const visit = (g: { uid: string; name: string }, prefix: string, branch: string) => {
    lines.push(`${prefix}${branch}${g.name}  ${g.uid}`);
    const kids = (children.get(g.uid) ?? []).sort(byName);
    const childPrefix = prefix + (branch === "" ? "" : branch === "└── " ? "    " : "│   ");
    for (const [i, k] of kids.entries()) visit(k, childPrefix, i === kids.length - 1 ? "└── " : "├── ");
  };
  for (const r of roots.sort(byName)) visit(r, "", "");
  return lines.length ? `${lines.join("\n")}\n` : "";
}
