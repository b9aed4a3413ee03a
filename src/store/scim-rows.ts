/**
 * The SCIM state of an identity provider as every engine stores and changes it (the rules are
 * in the service, src/services/iam/scim-tokens.ts, and docs/auth.md "SCIM tokens"): the row's
 * layout, what each change writes, and the errors it refuses with. A provider without a row is
 * "SCIM off, no token ever issued", with etag "0"; every change bumps the etag. Times are epoch
 * milliseconds. Each engine reads the row, calls these in its own write transaction and writes
 * what they return.
 */
import { ApiError, failedPrecondition, GrpcCode, notFound } from "../errors/api-error.js";
import type { NewScimToken, ScimState } from "./scim-credentials.js";

/** A scim_credentials row as every engine's table returns it. */
export interface StoredScimRow {
  readonly identityProviderUid: string;
  readonly enabled: boolean;
  readonly tokenHash: string | null;
  readonly tokenExpireTime: number | null;
  readonly previousTokenHash: string | null;
  readonly previousTokenExpireTime: number | null;
  readonly revokeTime: number | null;
  readonly issued: boolean;
  readonly etag: string;
  readonly updateTime: number;
}

/** The columns a change sets (the etag and update time are the engine's write). */
export type ScimColumns = Partial<Omit<StoredScimRow, "identityProviderUid" | "etag" | "updateTime">>;

export const INITIAL_SCIM_STATE: ScimState = {
  enabled: false,
  hasToken: false,
  tokenExpireTime: null,
  previousTokenExpireTime: null,
  revokeTime: null,
  issued: false,
  etag: "0",
};

export function scimStateOf(row: StoredScimRow | undefined): ScimState {
  if (!row) return INITIAL_SCIM_STATE;
  return {
    enabled: row.enabled,
    hasToken: row.tokenHash !== null,
    tokenExpireTime: row.tokenExpireTime,
    previousTokenExpireTime: row.previousTokenHash !== null ? row.previousTokenExpireTime : null,
    revokeTime: row.revokeTime,
    issued: row.issued,
    etag: row.etag,
  };
}

/** The etag a change of `row` (undefined: no row yet) stores. */
export function nextScimEtag(row: StoredScimRow | undefined): string {
  return String((Number.parseInt(row?.etag ?? INITIAL_SCIM_STATE.etag, 10) || 0) + 1);
}

/** ABORTED (AIP-154) unless `etag` is the state's current one: the caller's view is stale. */
export function requireScimEtag(identityProviderUid: string, row: StoredScimRow | undefined, etag: string): void {
  if ((row?.etag ?? INITIAL_SCIM_STATE.etag) === etag) return;
  throw new ApiError(GrpcCode.Aborted, "Aborted: the etag does not match the provider's current SCIM state; read it again (GetIdentityProvider) and retry", {
    reason: "ETAG_MISMATCH",
    metadata: { identity_provider_uid: identityProviderUid },
  });
}

/** NOT_FOUND (SCIM token) unless a token was ever issued: what regenerate and revoke need. */
export function requireScimIssued(identityProviderUid: string, row: StoredScimRow | undefined): asserts row is StoredScimRow {
  if (!row?.issued) throw notFound("SCIM token", identityProviderUid);
}

/** What generate writes. @throws FAILED_PRECONDITION SCIM_TOKEN_EXISTS while a token exists. */
export function generatedScimColumns(identityProviderUid: string, row: StoredScimRow | undefined, token: NewScimToken): ScimColumns {
  if (row?.tokenHash) {
    throw failedPrecondition(
      {
        type: "SCIM_TOKEN_EXISTS",
        subject: identityProviderUid,
        description: "the provider already has a SCIM token; use RegenerateScimToken to replace it",
      },
      { metadata: { identity_provider_uid: identityProviderUid } },
    );
  }
  return {
    tokenHash: token.tokenHash,
    tokenExpireTime: token.expireTime,
    previousTokenHash: null,
    previousTokenExpireTime: null,
    revokeTime: null,
    issued: true,
  };
}

/** What regenerate writes: the new token, and the previous one kept for the overlap. */
export function regeneratedScimColumns(row: StoredScimRow, token: NewScimToken, overlapMs: number, now: number): ScimColumns {
  // Only a token that still works gets an overlap; an expired or revoked one ends now.
  const stillValid = row.tokenHash !== null && (row.tokenExpireTime === null || row.tokenExpireTime > now);
  const previousEnd = stillValid && overlapMs > 0 ? Math.min(now + overlapMs, row.tokenExpireTime ?? Number.POSITIVE_INFINITY) : null;
  return {
    tokenHash: token.tokenHash,
    tokenExpireTime: token.expireTime,
    previousTokenHash: previousEnd !== null ? row.tokenHash : null,
    previousTokenExpireTime: previousEnd,
    revokeTime: null,
  };
}

/** What revoke writes, or undefined when both tokens are gone already (the first revocation's time stands). */
export function revokedScimColumns(row: StoredScimRow, now: number): ScimColumns | undefined {
  if (row.tokenHash === null && row.previousTokenHash === null) return undefined;
  return { tokenHash: null, tokenExpireTime: null, previousTokenHash: null, previousTokenExpireTime: null, revokeTime: now };
}

/**
 * FAILED_PRECONDITION SCIM_OWNERS when turning SCIM on would leave fewer than `minOwners`
 * identities bound owner at the organization by hand.
 */
export function requireScimOwners(org: string, owners: number, minOwners: number): void {
  if (owners >= minOwners) return;
  throw failedPrecondition(
    {
      type: "SCIM_OWNERS",
      subject: org,
      description: `turning SCIM on needs at least ${minOwners} identities bound owner at the organization by hand (it has ${owners}), so provisioning cannot lock everyone out`,
    },
    { metadata: { group_uid: org, owners: String(owners) } },
  );
}

/** Whether a token whose expiry is `expireTime` (null: never; `previous`: null means none) still works at `now`. */
export function scimTokenValid(expireTime: number | null, now: number, previous: boolean): boolean {
  return expireTime === null ? !previous : expireTime > now;
}
