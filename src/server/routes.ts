/**
 * The one list of API services and their implementations.
 *
 * Every service of the published surface is registered with its real descriptor, so gRPC
 * reflection shows it and clients get a proper answer; a method without an implementation
 * yet answers UNIMPLEMENTED with ErrorInfo (call-pipeline.ts). Nothing pretends to work.
 */
import type { DescService } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { Groups as GroupsV1 } from "../../gen/chainguard/platform/iam/groups_v1_pb.js";
import { AccountAssociationsService } from "../../gen/chainguard/platform/iam/v2beta1/account_associations_pb.js";
import { GroupInvitesService } from "../../gen/chainguard/platform/iam/v2beta1/group_invites_pb.js";
import { GroupsService } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { IdentitiesService } from "../../gen/chainguard/platform/iam/v2beta1/identities_pb.js";
import { IdentityProvidersService } from "../../gen/chainguard/platform/iam/v2beta1/identity_providers_pb.js";
import { RoleBindingsService } from "../../gen/chainguard/platform/iam/v2beta1/role_bindings_pb.js";
import { RolesService } from "../../gen/chainguard/platform/iam/v2beta1/roles_pb.js";
import { SecurityTokenService } from "../../gen/chainguard/platform/oidc/oidc_pb.js";
import { Registry as RegistryV1 } from "../../gen/chainguard/platform/registry/registry_v1_pb.js";
import { ReposService } from "../../gen/chainguard/platform/registry/v2beta1/repos_pb.js";
import { TagsService } from "../../gen/chainguard/platform/registry/v2beta1/tags_pb.js";
import { AdvisoriesService } from "../../gen/chainguard/platform/vulnerabilities/v2beta1/advisories_pb.js";
import { InvitesService } from "../../gen/trellis/iam/v1/invites_pb.js";
import { TokensService } from "../../gen/trellis/iam/v1/tokens_pb.js";
import type { ServiceContext } from "../services/context.js";
import { createAccountAssociationsService } from "../services/iam/account-associations.js";
import { createGroupInvitesService } from "../services/iam/group-invites.js";
import { createInviteRedemptionService } from "../services/iam/invite-redemption.js";
import { createTokenRevocationService } from "../services/iam/token-revocation.js";
import { createGroupsService } from "../services/iam/groups.js";
import { createIdentitiesService } from "../services/iam/identities.js";
import { createIdentityProvidersService } from "../services/iam/identity-providers.js";
import { createRoleBindingsService } from "../services/iam/role-bindings.js";
import { createGroupsV1Service } from "../services/legacy/iam-v1.js";
import { createRegistryV1Service } from "../services/legacy/registry-v1.js";
import { createRolesService } from "../services/iam/roles.js";
import { createReposService } from "../services/registry/repos.js";
import { createTagsService } from "../services/registry/tags.js";
import { createAdvisoriesService } from "../services/vulnerabilities/advisories.js";

/** A service descriptor with its (possibly partial) implementation. */
export interface ServiceEntry {
  readonly service: DescService;
  readonly impl: Partial<ServiceImpl<DescService>>;
}

function entry<S extends DescService>(service: S, impl: Partial<ServiceImpl<S>>): ServiceEntry {
  return { service, impl: impl as Partial<ServiceImpl<DescService>> };
}

/** Implementations built outside the service context (the token exchange needs the issuer). */
export interface ServiceOverrides {
  readonly securityTokenService?: Partial<ServiceImpl<typeof SecurityTokenService>>;
}

/** All API services, in the order they appear in reflection. */
export function apiServices(ctx: ServiceContext, overrides: ServiceOverrides = {}): ServiceEntry[] {
  return [
    // IAM v2beta1
    entry(GroupsService, createGroupsService(ctx)),
    entry(IdentitiesService, createIdentitiesService(ctx)),
    entry(RolesService, createRolesService(ctx)),
    entry(RoleBindingsService, createRoleBindingsService(ctx)),
    entry(IdentityProvidersService, createIdentityProvidersService(ctx)),
    entry(AccountAssociationsService, createAccountAssociationsService(ctx)),
    entry(GroupInvitesService, createGroupInvitesService(ctx)),
    // Registry and vulnerabilities v2beta1
    entry(ReposService, createReposService(ctx)),
    entry(TagsService, createTagsService(ctx)),
    entry(AdvisoriesService, createAdvisoriesService(ctx)),
    // v1 endpoints kept alongside v2
    entry(GroupsV1, createGroupsV1Service(ctx)),
    entry(RegistryV1, createRegistryV1Service(ctx)),
    // Token exchange
    entry(SecurityTokenService, overrides.securityTokenService ?? {}), // src/auth/exchange.ts
    // Trellis's own: redeeming group invites (not in the published surface)
    entry(InvitesService, createInviteRedemptionService(ctx)),
    // Trellis's own: revoking API tokens before they expire
    entry(TokensService, createTokenRevocationService(ctx)),
  ];
}
