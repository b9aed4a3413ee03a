/**
 * chainguard.platform.iam.v2beta1.AccountAssociationsService. STUB: filled in by the issue-4 work; until
 * then every method answers UNIMPLEMENTED (call-pipeline.ts). See ./groups.ts for the pattern.
 */
import type { ServiceImpl } from "@connectrpc/connect";
import type { AccountAssociationsService } from "../../../gen/chainguard/platform/iam/v2beta1/account_associations_pb.js";
import type { ServiceContext } from "../context.js";

export function createAccountAssociationsService(_ctx: ServiceContext): Partial<ServiceImpl<typeof AccountAssociationsService>> {
  return {};
}
