/**
 * chainguard.platform.iam.v2beta1.IdentityProvidersService. STUB: filled in by the issue-4 work; until
 * then every method answers UNIMPLEMENTED (call-pipeline.ts). See ./groups.ts for the pattern.
 */
import type { ServiceImpl } from "@connectrpc/connect";
import type { IdentityProvidersService } from "../../../gen/chainguard/platform/iam/v2beta1/identity_providers_pb.js";
import type { ServiceContext } from "../context.js";

export function createIdentityProvidersService(_ctx: ServiceContext): Partial<ServiceImpl<typeof IdentityProvidersService>> {
  return {};
}
