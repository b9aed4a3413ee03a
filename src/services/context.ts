/**
 * ServiceContext: everything a service implementation may use, built once at start-up by
 * src/server/create-app.ts through `createServiceContext` (tests build it with their own
 * database and clock; the benchmark's grpc-js peer in bench/ builds it the same way).
 */
import { loadOrCreatePageKeys, PAGE_KEYS_NAME, parsePageKeyRing } from "../pagination/page-keys.js";
import { createPageTokenCodec, type PageTokenCodec } from "../pagination/page-token.js";
import { type AccountAssociationsRepository, createAccountAssociationsRepository } from "../store/account-associations.js";
import { type AdvisoriesRepository, createAdvisoriesRepository } from "../store/advisories.js";
import type { Db } from "../store/db.js";
import { createGroupAccessRequestsRepository, type GroupAccessRequestsRepository } from "../store/group-access-requests.js";
import { createGroupInvitesRepository, type GroupInvitesRepository } from "../store/group-invites.js";
import { createGroupsRepository, type GroupsRepository } from "../store/groups.js";
import { createIdentitiesRepository, type IdentitiesRepository } from "../store/identities.js";
import { createIdentityProvidersRepository, type IdentityProvidersRepository } from "../store/identity-providers.js";
import { createEolTagsRepository, type EolTagsRepository } from "../store/eol-tags.js";
import { createRegistrySettingsRepository, type RegistrySettingsRepository } from "../store/registry-settings.js";
import { createRepoDeploymentsRepository, type RepoDeploymentsRepository } from "../store/repo-deployments.js";
import { createRepoReadmesRepository, type RepoReadmesRepository } from "../store/repo-readmes.js";
import { createReposRepository, type ReposRepository } from "../store/repos.js";
import { createRoleBindingsRepository, type RoleBindingsRepository } from "../store/role-bindings.js";
import { createRolesRepository, type RolesRepository } from "../store/roles.js";
import { createScimCredentialsRepository, type ScimCredentialsRepository } from "../store/scim-credentials.js";
import { sharedValuesFor } from "../store/shared-values.js";
import { createTokenRevocationsRepository, type TokenRevocationsRepository } from "../store/token-revocations.js";
import { createTagsRepository, type TagsRepository } from "../store/tags.js";

export interface ServiceContext {
  /** Current time in ms since the epoch (injectable for tests). */
  readonly now: () => number;
  readonly store: {
    readonly groups: GroupsRepository;
    readonly groupAccessRequests: GroupAccessRequestsRepository;
    readonly identities: IdentitiesRepository;
    readonly roles: RolesRepository;
    readonly roleBindings: RoleBindingsRepository;
    readonly identityProviders: IdentityProvidersRepository;
    readonly scimCredentials: ScimCredentialsRepository;
    readonly accountAssociations: AccountAssociationsRepository;
    readonly groupInvites: GroupInvitesRepository;
    readonly repos: ReposRepository;
    readonly tags: TagsRepository;
    readonly repoReadmes: RepoReadmesRepository;
    readonly repoDeployments: RepoDeploymentsRepository;
    readonly registrySettings: RegistrySettingsRepository;
    readonly eolTags: EolTagsRepository;
    readonly advisories: AdvisoriesRepository;
    readonly tokenRevocations: TokenRevocationsRepository;
  };
  readonly pageTokens: PageTokenCodec;
}

/** The repositories over `db` and the page-token codec keyed by the database's own secret. */
export function createServiceContext(db: Db, now: () => number): ServiceContext {
  // Read through the shared-values watcher: a rotation by `trellis keys rotate` (another
  // process) seals new tokens with the new key from the next List on, without a restart.
  const firstPageKeys = loadOrCreatePageKeys(db, now());
  const watchedPageKeys = sharedValuesFor(db).watch([PAGE_KEYS_NAME], ([value]) => parsePageKeyRing(value));
  return {
    now,
    store: {
      groups: createGroupsRepository(db),
      groupAccessRequests: createGroupAccessRequestsRepository(db),
      identities: createIdentitiesRepository(db),
      roles: createRolesRepository(db),
      roleBindings: createRoleBindingsRepository(db),
      identityProviders: createIdentityProvidersRepository(db),
      scimCredentials: createScimCredentialsRepository(db),
      accountAssociations: createAccountAssociationsRepository(db),
      groupInvites: createGroupInvitesRepository(db),
      repos: createReposRepository(db),
      tags: createTagsRepository(db),
      repoReadmes: createRepoReadmesRepository(db),
      repoDeployments: createRepoDeploymentsRepository(db),
      registrySettings: createRegistrySettingsRepository(db),
      eolTags: createEolTagsRepository(db),
      advisories: createAdvisoriesRepository(db),
      tokenRevocations: createTokenRevocationsRepository(db),
    },
    pageTokens: createPageTokenCodec(() => watchedPageKeys() ?? firstPageKeys),
  };
}
