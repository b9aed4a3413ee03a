/** `trellis registry repos list|get`, `trellis registry tags list`. */
import type { Command } from "commander";
import { RepoSchema, ReposService } from "../../../gen/chainguard/platform/registry/v2beta1/repos_pb.js";
import { TagSchema, TagsService } from "../../../gen/chainguard/platform/registry/v2beta1/tags_pb.js";
import type { Io } from "../io.js";
import { walk, withLimit } from "../list-walk.js";
import { resolveGroup, resolveName } from "../name-args.js";
import type { CliContext } from "../client.js";
import { type ResourceView, time } from "../output.js";
import { clientAction, print } from "./common.js";

export const repoView: ResourceView<typeof RepoSchema> = {
  schema: RepoSchema,
  id: (r) => r.uid,
  columns: [
    { header: "UID", cell: (r) => r.uid },
    { header: "NAME", cell: (r) => r.name },
    { header: "ACTIVE TAGS", cell: (r) => r.activeTags.join(",") },
    { header: "CREATED", cell: (r) => time(r.createTime) },
  ],
};

export const tagView: ResourceView<typeof TagSchema> = {
  schema: TagSchema,
  id: (t) => t.uid,
  columns: [
    { header: "UID", cell: (t) => t.uid },
    { header: "NAME", cell: (t) => t.name },
    { header: "DIGEST", cell: (t) => t.digest },
    { header: "UPDATED", cell: (t) => time(t.updateTime) },
  ],
};

export function registerRegistry(program: Command, io: Io): void {
  const registry = program.command("registry").description("registry metadata: repos and their tags");
  const repos = registry.command("repos").description("container image repositories");

  withLimit(repos.command("list"))
    .description("list repos")
    .option("--group <group>", "only repos under this group (uid or name)")
    .option("--name <name>", "only repos with exactly this name")
    .option("--order-by <field>", "sort: name, name desc, created_at desc ...")
    .action(
      clientAction(io, async (ctx, o: { group?: string; name?: string; orderBy?: string; limit?: number }) => {
        const uidp = { descendantsOf: o.group ? await resolveGroup(ctx, o.group) : "" };
        const client = ctx.client(ReposService);
        const items = await walk(
          async (pageSize, pageToken) => {
            const r = await client.listRepos({ uidp, name: o.name, orderBy: o.orderBy ?? "", pageSize, pageToken });
            return { items: r.repos, nextPageToken: r.nextPageToken, totalCount: r.totalCount };
          },
          { limit: o.limit, io, noun: "repos" },
        );
        print(ctx, repoView, items);
      }),
    );

  repos
    .command("get")
    .description("show one repo")
    .argument("<repo>", "repo uid or name")
    .option("--group <group>", "narrow a name lookup to this group and below (uid or name)")
    .action(
      clientAction(io, async (ctx, o: { group?: string }, repo: string) => {
        const uid = await resolveRepo(ctx, repo, o.group);
        print(ctx, repoView, [await ctx.client(ReposService).getRepo({ uid })], true);
      }),
    );

  const tags = registry.command("tags").description("tags of a repo");
  withLimit(tags.command("list"))
    .description("list tags")
    .option("--repo <repo>", "only tags of this repo (uid or name)")
    .option("--group <group>", "narrow a --repo name lookup to this group and below (uid or name)")
    .option("--name <name>", "only tags with exactly this name")
    .action(
      clientAction(io, async (ctx, o: { repo?: string; group?: string; name?: string; limit?: number }) => {
        const uidp = { childrenOf: o.repo ? await resolveRepo(ctx, o.repo, o.group) : "" };
        const client = ctx.client(TagsService);
        const items = await walk(
          async (pageSize, pageToken) => {
            const r = await client.listTags({ uidp, name: o.name ?? "", pageSize, pageToken });
            return { items: r.tags, nextPageToken: r.nextPageToken, totalCount: r.totalCount };
          },
          { limit: o.limit, io, noun: "tags" },
        );
        print(ctx, tagView, items);
      }),
    );

  tags
    .command("get")
    .description("show one tag")
    .argument("<tag>", "tag uid, or its name with --repo")
    .option("--repo <repo>", "the tag's repo, for a tag named by name (uid or name)")
    .option("--group <group>", "narrow a --repo name lookup to this group and below (uid or name)")
    .action(
      clientAction(io, async (ctx, o: { repo?: string; group?: string }, tag: string) => {
        const repo = o.repo ? await resolveRepo(ctx, o.repo, o.group) : undefined;
        const uid = await resolveName(ctx, "tag", tag, repo);
        print(ctx, tagView, [await ctx.client(TagsService).getTag({ uid })], true);
      }),
    );
}

/** A repo argument (uid or name; names are unique within a group), within `group` when given. */
async function resolveRepo(ctx: CliContext, repo: string, group: string | undefined): Promise<string> {
  return resolveName(ctx, "repo", repo, group === undefined ? undefined : await resolveGroup(ctx, group));
}
