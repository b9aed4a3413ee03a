/**
 * How an identity provider is laid out in a row, the same on every engine: the OIDC settings
 * as one JSON document in our own shape, the client secret inside it. Records carry only
 * `hasClientSecret`; the secret itself is read by `storedClientSecret` alone (the login flow).
 */
import type { IdentityProviderRecord, OidcInput } from "./identity-providers.js";

/** An identity-provider row as every engine's table returns it. */
export interface StoredIdentityProviderRow {
  readonly uid: string;
  readonly parentUid: string;
  readonly name: string;
  readonly description: string;
  readonly defaultRole: string;
  readonly oidc: string;
  readonly createTime: number;
  readonly updateTime: number;
}

/** The JSON document in the `oidc` column. */
type StoredOidc = OidcInput;

/** The keys of the stored document: anything else on the object (e.g. hasClientSecret) is dropped. */
const STORED_OIDC_KEYS: readonly (keyof StoredOidc)[] = [
  "issuer",
  "clientId",
  "clientSecret",
  "additionalScopes",
  "groupsClaim",
  "pkceEnabled",
  "correlationRule",
];

export function serializeOidc(oidc: StoredOidc): string {
  return JSON.stringify(oidc, STORED_OIDC_KEYS as string[]);
}

/** The stored client secret of an `oidc` column ("" when none). */
export function storedClientSecret(oidc: string): string {
  return (JSON.parse(oidc) as StoredOidc).clientSecret;
}

/** The `oidc` column for changed settings; `clientSecret` undefined keeps the stored one. */
export function changedOidc(stored: string, change: Omit<StoredOidc, "clientSecret"> & { readonly clientSecret?: string }): string {
  return serializeOidc({ ...change, clientSecret: change.clientSecret ?? storedClientSecret(stored) });
}

export function identityProviderRecordOf(row: StoredIdentityProviderRow): IdentityProviderRecord {
  const { clientSecret, ...settings } = JSON.parse(row.oidc) as StoredOidc;
  return {
    uid: row.uid,
    parentUid: row.parentUid,
    name: row.name,
    description: row.description,
    defaultRole: row.defaultRole,
    oidc: { ...settings, hasClientSecret: clientSecret !== "" },
    createTime: row.createTime,
    updateTime: row.updateTime,
  };
}
