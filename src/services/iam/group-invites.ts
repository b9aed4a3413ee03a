/**
 * chainguard.platform.iam.v2beta1.GroupInvitesService. STUB: filled in by the issue-4 work; until
 * then every method answers UNIMPLEMENTED (call-pipeline.ts). See ./groups.ts for the pattern.
 */
import type { ServiceImpl } from "@connectrpc/connect";
import type { GroupInvitesService } from "../../../gen/chainguard/platform/iam/v2beta1/group_invites_pb.js";
import type { ServiceContext } from "../context.js";

export function createGroupInvitesService(_ctx: ServiceContext): Partial<ServiceImpl<typeof GroupInvitesService>> {
  return {};
}
