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
import { AccountAssociationsService as AccountAssociationsServiceV2 } from "../../gen/chainguard/platform/iam/v2/account_associations_pb.js";
import { GroupInvitesService as GroupInvitesServiceV2 } from "../../gen/chainguard/platform/iam/v2/group_invites_pb.js";
import { GroupsService as GroupsServiceV2 } from "../../gen/chainguard/platform/iam/v2/groups_pb.js";
import { IdentitiesService as IdentitiesServiceV2 } from "../../gen/chainguard/platform/iam/v2/identities_pb.js";
import { IdentityProvidersService as IdentityProvidersServiceV2 } from "../../gen/chainguard/platform/iam/v2/identity_providers_pb.js";
import { RoleBindingsService as RoleBindingsServiceV2 } from "../../gen/chainguard/platform/iam/v2/role_bindings_pb.js";
import { RolesService as RolesServiceV2 } from "../../gen/chainguard/platform/iam/v2/roles_pb.js";
import { AccountAssociationsService } from "../../gen/chainguard/platform/iam/v2beta1/account_associations_pb.js";
import { GroupInvitesService } from "../../gen/chainguard/platform/iam/v2beta1/group_invites_pb.js";
import { GroupsService } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { IdentitiesService } from "../../gen/chainguard/platform/iam/v2beta1/identities_pb.js";
import { IdentityProvidersService } from "../../gen/chainguard/platform/iam/v2beta1/identity_providers_pb.js";
import { RoleBindingsService } from "../../gen/chainguard/platform/iam/v2beta1/role_bindings_pb.js";
import { RolesService } from "../../gen/chainguard/platform/iam/v2beta1/roles_pb.js";
import { SecurityTokenService } from "../../gen/chainguard/platform/oidc/oidc_pb.js";
import { Registry as RegistryV1 } from "../../gen/chainguard/platform/registry/registry_v1_pb.js";
import { ReposService as ReposServiceV2 } from "../../gen/chainguard/platform/registry/v2/repos_pb.js";
import { TagsService as TagsServiceV2 } from "../../gen/chainguard/platform/registry/v2/tags_pb.js";
import { ReposService } from "../../gen/chainguard/platform/registry/v2beta1/repos_pb.js";
import { TagsService } from "../../gen/chainguard/platform/registry/v2beta1/tags_pb.js";
import { AdvisoriesService as AdvisoriesServiceV2 } from "../../gen/chainguard/platform/vulnerabilities/v2/advisories_pb.js";
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
import { gaTwin } from "./api-versions.js";

/** A service descriptor with its (possibly partial) implementation. */
export interface ServiceEntry {
  readonly service: DescService;
  readonly impl: Partial<ServiceImpl<DescService>>;
}

/** Implementations built outside the service context (the token exchange needs the issuer). */
export interface ServiceOverrides {
  readonly securityTokenService?: Partial<ServiceImpl<typeof SecurityTokenService>>;
}

type Build<S extends DescService> = (ctx: ServiceContext, overrides: ServiceOverrides) => Partial<ServiceImpl<S>>;
interface Row {
  readonly service: DescService;
  readonly build: Build<DescService>;
}

function row<S extends DescService>(service: S, build: Build<S>): Row {
  return { service, build: build as unknown as Build<DescService> };
}

/** The API services built from an implementation of their own, each with how it is built. */
const ROWS: readonly Row[] = [
  // IAM v2beta1
  row(GroupsService, createGroupsService),
  row(IdentitiesService, createIdentitiesService),
  row(RolesService, createRolesService),
  row(RoleBindingsService, createRoleBindingsService),
  row(IdentityProvidersService, createIdentityProvidersService),
  row(AccountAssociationsService, createAccountAssociationsService),
  row(GroupInvitesService, createGroupInvitesService),
  // Registry and vulnerabilities v2beta1
  row(ReposService, createReposService),
  row(TagsService, createTagsService),
  row(AdvisoriesService, createAdvisoriesService),
  // v1 endpoints kept alongside v2
  row(GroupsV1, createGroupsV1Service),
  row(RegistryV1, createRegistryV1Service),
  // Token exchange (src/services/oidc/exchange.ts)
  row(SecurityTokenService, (_ctx, overrides) => overrides.securityTokenService ?? {}),
  // Trellis's own: redeeming group invites (not in the published surface)
  row(InvitesService, createInviteRedemptionService),
  // Trellis's own: revoking API tokens before they expire
  row(TokensService, createTokenRevocationService),
];

/**
 * The generally available (v2) services, each served by its v2beta1 twin's implementation
 * through the edge adapter (api-versions.ts): [v2 service, its v2beta1 twin].
 */
const GA_TWINS: readonly (readonly [DescService, DescService])[] = [
  [GroupsServiceV2, GroupsService],
  [IdentitiesServiceV2, IdentitiesService],
  [RolesServiceV2, RolesService],
  [RoleBindingsServiceV2, RoleBindingsService],
  [IdentityProvidersServiceV2, IdentityProvidersService],
  [AccountAssociationsServiceV2, AccountAssociationsService],
  [GroupInvitesServiceV2, GroupInvitesService],
  [ReposServiceV2, ReposService],
  [TagsServiceV2, TagsService],
  [AdvisoriesServiceV2, AdvisoriesService],
];

/** The token exchange's service: rate-limited per peer address on every version (rate-limits.ts). */
export const TOKEN_EXCHANGE: DescService = SecurityTokenService;

/** The v1 services (deprecated, v1-sunset.ts), each with the v2 service a client calls instead. */
export const V1_REPLACEMENTS: ReadonlyMap<DescService, string> = new Map<DescService, string>([
  [GroupsV1, GroupsServiceV2.typeName],
  [RegistryV1, ReposServiceV2.typeName],
]);

/**
 * The descriptors alone, in the order they appear in reflection and in /openapi.json (the GA
 * services after the others, so the operationIds the v2beta1 methods had stay theirs):
 * authorization plans its checks from them before any implementation exists (the token
 * exchange's needs the issuer, which authentication makes).
 */
export const API_SERVICES: readonly DescService[] = [...ROWS.map((r) => r.service), ...GA_TWINS.map(([ga]) => ga)];

/**
 * All API services with their implementations, in the order of API_SERVICES. Each
 * implementation is built once; a GA service and its v2beta1 twin share it.
 */
export function apiServices(ctx: ServiceContext, overrides: ServiceOverrides = {}): ServiceEntry[] {
  const built = ROWS.map(({ service, build }) => ({ service, impl: build(ctx, overrides) as Partial<ServiceImpl<DescService>> }));
  const implOf = (service: DescService) => built.find((b) => b.service === service)?.impl ?? {};
  return [...built, ...GA_TWINS.map(([ga, twin]) => ({ service: ga, impl: gaTwin(ga, twin, implOf(twin)) }))];
}
