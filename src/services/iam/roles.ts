/**
 * chainguard.platform.iam.v2beta1.RolesService. STUB: filled in by the issue-4 work; until
 * then every method answers UNIMPLEMENTED (call-pipeline.ts). See ./groups.ts for the pattern.
 */
import type { ServiceImpl } from "@connectrpc/connect";
import type { RolesService } from "../../../gen/chainguard/platform/iam/v2beta1/roles_pb.js";
import type { ServiceContext } from "../context.js";

export function createRolesService(_ctx: ServiceContext): Partial<ServiceImpl<typeof RolesService>> {
  return {};
}
