/**
 * chainguard.platform.iam.v2beta1.IdentitiesService. STUB: filled in by the issue-4 work; until
 * then every method answers UNIMPLEMENTED (call-pipeline.ts). See ./groups.ts for the pattern.
 */
import type { ServiceImpl } from "@connectrpc/connect";
import type { IdentitiesService } from "../../../gen/chainguard/platform/iam/v2beta1/identities_pb.js";
import type { ServiceContext } from "../context.js";

export function createIdentitiesService(_ctx: ServiceContext): Partial<ServiceImpl<typeof IdentitiesService>> {
  return {};
}
