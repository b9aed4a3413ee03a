/**
 * identity-providers: the records, filters, orders and repository interface every engine shares (the SQLite
 * implementation is src/store/sqlite/identity-providers.ts).
 */
import type { KeysetQuery, UidpFilter } from "./lists.js";
import type { GrantView } from "./grant-view.js";
import { defineOrders } from "./orders.js";

/** The OIDC settings of a provider as every read returns them: the secret itself stays in the store. */
export interface OidcSettings {
  readonly issuer: string;
  readonly clientId: string;
  readonly additionalScopes: readonly string[];
  readonly groupsClaim: string;
  readonly pkceEnabled: boolean;
  /** CorrelationRule number, never 0: UNSPECIFIED is stored as SUB_EQUALS_EXTERNAL_ID (1). */
  readonly correlationRule: number;
  /** Whether a non-empty client secret is stored. */
  readonly hasClientSecret: boolean;
}

/** The OIDC settings as written on create. */
export type OidcInput = Omit<OidcSettings, "hasClientSecret"> & { readonly clientSecret: string };

/** The OIDC settings as written on update; `clientSecret` undefined keeps the stored one. */
export type OidcChange = Omit<OidcSettings, "hasClientSecret"> & { readonly clientSecret?: string };

export interface IdentityProviderRecord {
  readonly uid: string;
  readonly parentUid: string;
  readonly name: string;
  readonly description: string;
  readonly defaultRole: string;
  readonly oidc: OidcSettings;
  readonly createTime: number;
  readonly updateTime: number;
}

export interface NewIdentityProvider {
  readonly parentUid: string;
  readonly name: string;
  readonly description: string;
  readonly defaultRole: string;
  readonly oidc: OidcInput;
}

/** Fields an update may change (each the complete new value). */
export interface IdentityProviderChanges {
  readonly name?: string;
  readonly description?: string;
  readonly defaultRole?: string;
  readonly oidc?: OidcChange;
}

/** Each order an identity-provider list can take → its record field, also its column's key on the table. */
/** The orders a identity providers list takes (orders.ts). */
export const IDENTITY_PROVIDER_ORDERS = defineOrders<IdentityProviderRecord>()({
  uid: "uid",
  name: "name",
  create_time: "createTime",
  update_time: "updateTime",
});
export type IdentityProviderOrder = (typeof IDENTITY_PROVIDER_ORDERS.keys)[number];

export interface IdentityProviderListFilter {
  readonly uidp: UidpFilter;
  /** Exact, case-sensitive name. */
  readonly name?: string;
  /** Authorization's visible scopes (list-query.ts withinConditions); undefined = all. */
  readonly within?: readonly string[];
}

/** The anti-escalation check on the role a provider grants its users (src/auth/grant-guard.ts). */
export type DefaultRoleGuard = (view: GrantView, groupUid: string, roleUid: string) => void;

export interface IdentityProvidersRepository {
  get(uid: string): Promise<IdentityProviderRecord | undefined>;
  /**
   * Inserts a provider with a fresh uid under its group.
   * @throws NOT_FOUND when the group does not exist; INVALID_ARGUMENT `default_role` when the
   * role cannot be granted in the group (see `requireAssignableRole`); whatever `guard` (the
   * caller's anti-escalation check on the default role) throws.
   */
  create(provider: NewIdentityProvider, now: number, guard?: DefaultRoleGuard): Promise<IdentityProviderRecord>;
  /**
   * Reads the provider, asks `plan` for the changes (it may throw an ApiError, e.g. after
   * validating the merged OIDC settings), checks a changed default role and writes, all in
   * one transaction, and bumps update_time.
   * @throws NOT_FOUND; INVALID_ARGUMENT `default_role`; whatever `guard` throws for a changed
   * default role.
   */
  update(
    uid: string,
    plan: (current: IdentityProviderRecord) => IdentityProviderChanges,
    now: number,
    guard?: DefaultRoleGuard,
  ): Promise<IdentityProviderRecord>;
  /** @throws NOT_FOUND when there is no such provider. */
  delete(uid: string): Promise<void>;
  list(filter: IdentityProviderListFilter, page: KeysetQuery<IdentityProviderOrder>): Promise<IdentityProviderRecord[]>;
  count(filter: IdentityProviderListFilter): Promise<number>;
  /** The stored client secret ("" when none), for the login flow only; undefined when no such provider. */
  clientSecret(uid: string): Promise<string | undefined>;
}
