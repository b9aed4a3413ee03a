/** `trellis iam identities list|get|create|update|delete`. */
import type { Command } from "commander";
import type { CliContext } from "../client.js";
import { IdentitiesService, IdentitySchema } from "../../../gen/chainguard/platform/iam/v2beta1/identities_pb.js";
import { usageError } from "../exit-codes.js";
import type { Io } from "../io.js";
import { walk, withLimit } from "../list-walk.js";
import { resolveGroup, resolveName } from "../name-args.js";
import { type ResourceView, time } from "../output.js";
import { clientAction, print, printDeleted } from "./common.js";

export const identityView: ResourceView<typeof IdentitySchema> = {
  schema: IdentitySchema,
  id: (i) => i.uid,
  columns: [
    { header: "UID", cell: (i) => i.uid },
    { header: "NAME", cell: (i) => i.name },
    {
      header: "ISSUER",
      cell: (i) => (i.relationship.case === "claimMatch" ? (i.relationship.value.iss.value ?? "") : ""),
    },
    {
      header: "SUBJECT",
      cell: (i) => (i.relationship.case === "claimMatch" ? (i.relationship.value.sub.value ?? "") : ""),
    },
    { header: "CREATED", cell: (i) => time(i.createTime) },
  ],
};

/** An identity argument (uid or name), a name looked up within `group` when given. */
async function resolveIdentity(ctx: CliContext, identity: string, group: string | undefined): Promise<string> {
  return resolveName(ctx, "identity", identity, group === undefined ? undefined : await resolveGroup(ctx, group));
}

interface ClaimFlags {
  issuer?: string;
  issuerPattern?: string;
  subject?: string;
  subjectPattern?: string;
}

export function registerIdentities(iam: Command, io: Io): void {
  const identities = iam.command("identities").description("identities: who may act (users, CI jobs) and the tokens that may assume them");

  withLimit(identities.command("list"))
    .description("list identities")
    .option("--group <group>", "only identities in this group (uid or name)")
    .option("--name <name>", "only identities with exactly this name")
    .option("--order-by <field>", "sort: name, name desc, created_at desc ...")
    .action(
      clientAction(io, async (ctx, o: { group?: string; name?: string; orderBy?: string; limit?: number }) => {
        const uidp = { childrenOf: o.group ? await resolveGroup(ctx, o.group) : "" };
        const client = ctx.client(IdentitiesService);
        const items = await walk(
          async (pageSize, pageToken) => {
            const r = await client.listIdentities({ uidp, name: o.name ?? "", orderBy: o.orderBy ?? "", pageSize, pageToken });
            return { items: r.identities, nextPageToken: r.nextPageToken, totalCount: r.totalCount };
          },
          { limit: o.limit, io, noun: "identities" },
        );
        print(ctx, identityView, items);
      }),
    );

  identities
    .command("get")
    .description("show one identity")
    .argument("<identity>", "identity uid or name")
    .option("--group <group>", "narrow a name lookup to this group (uid or name)")
    .action(
      clientAction(io, async (ctx, o: { group?: string }, identity: string) => {
        const uid = await resolveIdentity(ctx, identity, o.group);
        print(ctx, identityView, [await ctx.client(IdentitiesService).getIdentity({ uid })], true);
      }),
    );

  identities
    .command("create")
    .description("create an identity that tokens matching --issuer/--subject may assume")
    .argument("<name>", "identity name")
    .requiredOption("--group <group>", "the group it belongs to (uid or name)")
    .option("--description <text>", "description")
    .option("--issuer <url>", "token issuer that may assume it (exact)")
    .option("--issuer-pattern <regex>", "token issuer that may assume it (RE2 pattern)")
    .option("--subject <sub>", "token subject that may assume it (exact)")
    .option("--subject-pattern <regex>", "token subject that may assume it (RE2 pattern)")
    .action(
      clientAction(io, async (ctx, o: ClaimFlags & { group: string; description?: string }, name: string) => {
        if (o.issuer !== undefined && o.issuerPattern !== undefined) throw usageError("give --issuer or --issuer-pattern, not both");
        if (o.subject !== undefined && o.subjectPattern !== undefined) throw usageError("give --subject or --subject-pattern, not both");
        const parent = await resolveGroup(ctx, o.group);
        const iss =
          o.issuer !== undefined
            ? { case: "issuer" as const, value: o.issuer }
            : o.issuerPattern !== undefined
              ? { case: "issuerPattern" as const, value: o.issuerPattern }
              : { case: undefined };
        const sub =
          o.subject !== undefined
            ? { case: "subject" as const, value: o.subject }
            : o.subjectPattern !== undefined
              ? { case: "subjectPattern" as const, value: o.subjectPattern }
              : { case: undefined };
        const identity = await ctx.client(IdentitiesService).createIdentity({
          parent,
          identity: {
            name,
            description: o.description ?? "",
            relationship: iss.case || sub.case ? { case: "claimMatch", value: { iss, sub } } : { case: undefined },
          },
        });
        print(ctx, identityView, [identity], true);
      }),
    );

  identities
    .command("update")
    .description("change an identity's name or description (only the fields given)")
    .argument("<identity>", "identity uid or name")
    .option("--name <name>", "new name")
    .option("--description <text>", "new description")
    .option("--group <group>", "narrow a name lookup to this group (uid or name)")
    .action(
      clientAction(io, async (ctx, o: { name?: string; description?: string; group?: string }, which: string) => {
        const paths = [o.name !== undefined && "name", o.description !== undefined && "description"].filter((p) => p !== false);
        if (paths.length === 0) throw usageError("nothing to update: give --name and/or --description");
        const uid = await resolveIdentity(ctx, which, o.group);
        const identity = await ctx.client(IdentitiesService).updateIdentity({
          identity: { uid, name: o.name ?? "", description: o.description ?? "" },
          updateMask: { paths },
        });
        print(ctx, identityView, [identity], true);
      }),
    );

  identities
    .command("delete")
    .description("delete an identity")
    .argument("<identity>", "identity uid or name")
    .option("--group <group>", "narrow a name lookup to this group (uid or name)")
    .action(
      clientAction(io, async (ctx, o: { group?: string }, identity: string) => {
        const uid = await resolveIdentity(ctx, identity, o.group);
        await ctx.client(IdentitiesService).deleteIdentity({ uid });
        printDeleted(ctx, "identity", uid);
      }),
    );
}
