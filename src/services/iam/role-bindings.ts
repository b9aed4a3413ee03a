/**
 * chainguard.platform.iam.v2beta1.RoleBindingsService. STUB: filled in by the issue-4 work; until
 * then every method answers UNIMPLEMENTED (call-pipeline.ts). See ./groups.ts for the pattern.
 */
import type { ServiceImpl } from "@connectrpc/connect";
import type { RoleBindingsService } from "../../../gen/chainguard/platform/iam/v2beta1/role_bindings_pb.js";
import type { ServiceContext } from "../context.js";

export function createRoleBindingsService(_ctx: ServiceContext): Partial<ServiceImpl<typeof RoleBindingsService>> {
  return {};
}
