/** `trellis iam invites list|create|delete`. */
import type { Command } from "commander";
import { GroupInviteSchema, GroupInvitesService } from "../../../gen/chainguard/platform/iam/v2beta1/group_invites_pb.js";
import type { Io } from "../io.js";
import { walk, withLimit } from "../list-walk.js";
import { resolveGroup, resolveRole } from "../name-args.js";
import { type ResourceView, time } from "../output.js";
import { clientAction, durationSeconds, print, printDeleted } from "./common.js";

export const inviteView: ResourceView<typeof GroupInviteSchema> = {
  schema: GroupInviteSchema,
  id: (i) => i.uid,
  columns: [
    { header: "UID", cell: (i) => i.uid },
    { header: "ROLE", cell: (i) => i.role?.name ?? i.roleUid },
    { header: "EMAIL", cell: (i) => i.email },
    { header: "SINGLE-USE", cell: (i) => (i.singleUse ? "yes" : "no") },
    { header: "EXPIRES", cell: (i) => time(i.expirationTime) },
    // Only the create response carries the code: it is the secret to hand to the invitee.
    { header: "CODE", cell: (i) => i.code },
  ],
};

export function registerInvites(iam: Command, io: Io): void {
  const invites = iam.command("invites").description("group invites: codes that let someone join a group with a role");

  withLimit(invites.command("list"))
    .description("list invites")
    .option("--group <group>", "only invites to this group (uid or name)")
    .action(
      clientAction(io, async (ctx, o: { group?: string; limit?: number }) => {
        const uidp = { childrenOf: o.group ? await resolveGroup(ctx, o.group) : "" };
        const client = ctx.client(GroupInvitesService);
        const items = await walk(
          async (pageSize, pageToken) => {
            const r = await client.listGroupInvites({ uidp, pageSize, pageToken });
            return { items: r.groupInvites, nextPageToken: r.nextPageToken, totalCount: r.totalCount };
          },
          { limit: o.limit, io, noun: "invites" },
        );
        print(ctx, inviteView, items);
      }),
    );

  invites
    .command("create")
    .description("create an invite; prints its code once")
    .requiredOption("--group <group>", "the group to invite to (uid or name)")
    .requiredOption("--role <role>", "the role the invitee gets (uid or name)")
    .option("--ttl <duration>", "how long the invite is valid: 90m, 24h, 7d (at most 30d)", durationSeconds, 7 * 86400)
    .option("--email <address>", "only this email address may use it")
    .option("--single-use", "the invite works once")
    .action(
      clientAction(io, async (ctx, o: { group: string; role: string; ttl: number; email?: string; singleUse?: boolean }) => {
        const invite = await ctx.client(GroupInvitesService).createGroupInvite({
          parent: await resolveGroup(ctx, o.group),
          groupInvite: {
            roleUid: await resolveRole(ctx, o.role),
            email: o.email ?? "",
            singleUse: o.singleUse === true,
            ttl: { seconds: BigInt(o.ttl) },
          },
        });
        print(ctx, inviteView, [invite], true);
      }),
    );

  invites
    .command("delete")
    .description("delete (revoke) an invite")
    .argument("<uid>", "invite uid")
    .action(
      clientAction(io, async (ctx, _o, uid: string) => {
        await ctx.client(GroupInvitesService).deleteGroupInvite({ uid });
        printDeleted(ctx, "invite", uid);
      }),
    );
}
