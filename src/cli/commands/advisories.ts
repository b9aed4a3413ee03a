/** `trellis advisories list|get`. */
import type { Command } from "commander";
import { AdvisoriesService, AdvisorySchema } from "../../../gen/chainguard/platform/vulnerabilities/v2beta1/advisories_pb.js";
import type { Io } from "../io.js";
import { walk, withLimit } from "../list-walk.js";
import { type ResourceView, time } from "../output.js";
import { clientAction, collect, print } from "./common.js";

export const advisoryView: ResourceView<typeof AdvisorySchema> = {
  schema: AdvisorySchema,
  id: (a) => a.uid,
  columns: [
    { header: "UID", cell: (a) => a.uid },
    { header: "ADVISORY", cell: (a) => a.advisoryId },
    { header: "ARTIFACT", cell: (a) => a.artifactName },
    { header: "COMPONENT", cell: (a) => a.componentName },
    { header: "ALIASES", cell: (a) => a.aliases.join(",") },
    { header: "UPDATED", cell: (a) => time(a.updateTime) },
  ],
};

export function registerAdvisories(program: Command, io: Io): void {
  const advisories = program.command("advisories").description("vulnerability advisories");

  withLimit(advisories.command("list"))
    .description("list advisories")
    .option("--artifact <name>", "only advisories for this artifact; repeatable", collect)
    .option("--alias <id>", "only advisories with this alias (e.g. a CVE id); repeatable", collect)
    .option("--query <text>", "free-text search")
    .action(
      clientAction(io, async (ctx, o: { artifact?: string[]; alias?: string[]; query?: string; limit?: number }) => {
        const client = ctx.client(AdvisoriesService);
        const items = await walk(
          async (pageSize, pageToken) => {
            const r = await client.listAdvisories({
              artifactNames: o.artifact ?? [],
              aliases: o.alias ?? [],
              query: o.query ?? "",
              pageSize,
              pageToken,
            });
            return { items: r.advisories, nextPageToken: r.nextPageToken, totalCount: r.totalCount };
          },
          { limit: o.limit, io, noun: "advisories" },
        );
        print(ctx, advisoryView, items);
      }),
    );

  advisories
    .command("get")
    .description("show one advisory")
    .argument("<uid>", "advisory uid")
    .action(
      clientAction(io, async (ctx, _o, uid: string) => {
        print(ctx, advisoryView, [await ctx.client(AdvisoriesService).getAdvisory({ uid })], true);
      }),
    );
}
