/**
 * ServiceContext: everything a service implementation may use, built once at start-up by
 * src/server/create-app.ts (tests build it with their own database and clock).
 */
import type { PageTokenCodec } from "../pagination/page-token.js";
import type { AccountAssociationsRepository } from "../store/account-associations.js";
import type { GroupInvitesRepository } from "../store/group-invites.js";
import type { GroupAccessRequestsRepository } from "../store/group-access-requests.js";
import type { GroupsRepository } from "../store/groups.js";
import type { IdentitiesRepository } from "../store/identities.js";
import type { IdentityProvidersRepository } from "../store/identity-providers.js";
import type { RoleBindingsRepository } from "../store/role-bindings.js";
import type { AdvisoriesRepository } from "../store/advisories.js";
import type { ReposRepository } from "../store/repos.js";
import type { RolesRepository } from "../store/roles.js";
import type { TagsRepository } from "../store/tags.js";

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
    readonly accountAssociations: AccountAssociationsRepository;
    readonly groupInvites: GroupInvitesRepository;
    readonly repos: ReposRepository;
    readonly tags: TagsRepository;
    readonly advisories: AdvisoriesRepository;
  };
  readonly pageTokens: PageTokenCodec;
}
