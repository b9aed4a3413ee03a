/**
 * The SCIM token lifecycle of IdentityProvidersService: GenerateScimToken,
 * RegenerateScimToken, RevokeScimToken, SetScimEnabled (docs/auth.md "SCIM tokens").
 *
 * Trellis serves no SCIM endpoint: what is built is the credential's lifecycle and its
 * authorization, so a directory's token can be issued, rotated and revoked the published way
 * and an endpoint added later has a verifier (ScimCredentialsRepository.findByTokenHash).
 * `endpoint_url` is therefore empty everywhere.
 *
 * Decisions where the published surface is silent:
 * - Token: "cgscim_" + 64 hex (32 random bytes), returned only in the response that issued
 *   it; the store keeps its SHA-256.
 * - Generate: refused (FAILED_PRECONDITION `SCIM_TOKEN_EXISTS`) while a token exists,
 *   expired or not (replace it with Regenerate); allowed again after a revocation.
 * - `expire_time`: after now and at most 730 days ahead, default 365 days; with
 *   `never_expires` it is INVALID_ARGUMENT.
 * - Regenerate: NOT_FOUND if no token was ever issued; `etag` required. `overlap`: unset = 1
 *   hour, above 24 hours = 24 hours, 0 = the old token stops at once, negative
 *   INVALID_ARGUMENT. The old token keeps working until now + overlap, never past its own
 *   expiry; an expired or revoked old token gets no overlap.
 * - Revoke: both tokens stop at once; NOT_FOUND if none was ever issued; revoking again
 *   changes nothing and reports the first revocation. It does not turn SCIM off.
 * - SetScimEnabled: `etag` required; turning SCIM on needs at least two identities bound
 *   `owner` at the provider's organization (every binding in Trellis is made by hand, none is
 *   provisioned); setting the current value changes nothing.
 * - Etags: the SCIM state's version ("0" before SCIM was ever touched); a stale one is
 *   ABORTED `ETAG_MISMATCH` (AIP-154), and nothing changes.
 * - Anti-escalation: a SCIM token lets a directory provision users, who get the provider's
 *   `default_role`; issuing one (Generate, Regenerate) or turning SCIM on needs what granting
 *   that role needs (PERMISSION_DENIED `PRIVILEGE_ESCALATION`), judged inside the write's
 *   transaction like every grant (src/auth/grant-guard.ts).
 */
import { randomBytes } from "node:crypto";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { type Duration, durationFromMs, type Timestamp, timestampFromMs } from "@bufbuild/protobuf/wkt";
import {
  IdentityProvider_SCIM_CredentialState,
  type IdentityProvider_SCIMSchema,
  type IdentityProvidersService,
} from "../../../gen/chainguard/platform/iam/v2beta1/identity_providers_pb.js";
import { defaultRoleGuard } from "../../auth/grant-guard.js";
import { type FieldViolation, invalidArgument } from "../../errors/api-error.js";
import { secretHash } from "../../auth/secret-hash.js";
import type { ScimGuard, ScimState } from "../../store/scim-credentials.js";
import type { ServiceContext } from "../context.js";
import { checkUidp, collect } from "../validate.js";

const DAY_MS = 24 * 60 * 60 * 1000;
export const SCIM_TOKEN_PREFIX = "cgscim_";
export const SCIM_DEFAULT_TTL_MS = 365 * DAY_MS;
export const SCIM_MAX_TTL_MS = 730 * DAY_MS;
export const SCIM_DEFAULT_OVERLAP_MS = 60 * 60 * 1000;
export const SCIM_MAX_OVERLAP_MS = DAY_MS;
/** Owners an organization needs before SCIM may be switched on. */
export const SCIM_MIN_OWNERS = 2;
const MAX_ETAG = 64;

/** The SCIM endpoint's base URL: none, Trellis serves no SCIM endpoint (module comment). */
const ENDPOINT_URL = "";

function newScimToken(): string {
  return `${SCIM_TOKEN_PREFIX}${randomBytes(32).toString("hex")}`;
}

/** A Timestamp as ms, or a violation when it is not a valid one. */
function timestampMs(field: string, ts: Timestamp): number | FieldViolation {
  if (ts.nanos < 0 || ts.nanos > 999_999_999) return { field, description: "is not a valid timestamp" };
  const ms = Number(ts.seconds) * 1000 + Math.floor(ts.nanos / 1e6);
  return Number.isSafeInteger(ms) ? ms : { field, description: "is not a valid timestamp" };
}

/** When the new token expires (null: never), or the violations. */
function tokenExpiry(expireTime: Timestamp | undefined, neverExpires: boolean, now: number): number | null | FieldViolation {
  if (neverExpires) {
    return expireTime ? { field: "expire_time", description: "cannot be set together with never_expires" } : null;
  }
  if (!expireTime) return now + SCIM_DEFAULT_TTL_MS;
  const ms = timestampMs("expire_time", expireTime);
  if (typeof ms !== "number") return ms;
  if (ms <= now) return { field: "expire_time", description: "must be in the future" };
  if (ms > now + SCIM_MAX_TTL_MS) return { field: "expire_time", description: "must be at most 2 years (730 days) ahead" };
  return ms;
}

/** The overlap to apply, in ms, or a violation. */
function overlapMs(overlap: Duration | undefined): number | FieldViolation {
  if (!overlap) return SCIM_DEFAULT_OVERLAP_MS;
  const mixedSigns = (overlap.seconds > 0n && overlap.nanos < 0) || (overlap.seconds < 0n && overlap.nanos > 0);
  if (mixedSigns || Math.abs(overlap.nanos) > 999_999_999) return { field: "overlap", description: "is not a valid duration" };
  if (overlap.seconds < 0n || overlap.nanos < 0) return { field: "overlap", description: "must not be negative" };
  const ms = Number(overlap.seconds) * 1000 + Math.floor(overlap.nanos / 1e6);
  return Math.min(ms, SCIM_MAX_OVERLAP_MS);
}

function checkEtag(etag: string): FieldViolation | undefined {
  if (etag === "") return { field: "etag", description: "is required: send the etag last read from the provider's SCIM state" };
  if (etag.length > MAX_ETAG) return { field: "etag", description: `must be at most ${MAX_ETAG} characters` };
  return undefined;
}

function isViolation(v: unknown): v is FieldViolation {
  return typeof v === "object" && v !== null && "field" in v;
}

/** The escalation check for the call's caller: issuing a SCIM credential grants the default role. */
function scimGuard(context: HandlerContext): ScimGuard {
  const guard = defaultRoleGuard(context);
  return (view, provider) => guard(view, provider.parentUid, provider.defaultRole);
}

/** The credential state a Get reports. */
export function credentialState(s: ScimState, now: number): IdentityProvider_SCIM_CredentialState {
  if (!s.issued) return IdentityProvider_SCIM_CredentialState.NOT_ISSUED;
  if (!s.hasToken) return IdentityProvider_SCIM_CredentialState.REVOKED;
  if (s.tokenExpireTime !== null && s.tokenExpireTime <= now) return IdentityProvider_SCIM_CredentialState.EXPIRED;
  if (s.previousTokenExpireTime !== null && s.previousTokenExpireTime > now) return IdentityProvider_SCIM_CredentialState.ROTATING;
  return IdentityProvider_SCIM_CredentialState.LIVE;
}

/**
 * IdentityProvider.scim as the API reports it: on Get (`detail`) every field; on List the
 * published omissions (no token_expire_time, credential_state UNSPECIFIED).
 */
export function scimToProto(s: ScimState, now: number, detail: boolean): MessageInitShape<typeof IdentityProvider_SCIMSchema> {
  const previousLive = s.previousTokenExpireTime !== null && s.previousTokenExpireTime > now;
  return {
    enabled: s.enabled,
    endpointUrl: ENDPOINT_URL,
    etag: s.etag,
    ...(previousLive ? { previousTokenExpireTime: timestampFromMs(s.previousTokenExpireTime as number) } : {}),
    ...(detail && s.tokenExpireTime !== null ? { tokenExpireTime: timestampFromMs(s.tokenExpireTime) } : {}),
    ...(detail ? { credentialState: credentialState(s, now) } : {}),
  };
}

type ScimMethods = Pick<ServiceImpl<typeof IdentityProvidersService>, "generateScimToken" | "regenerateScimToken" | "revokeScimToken" | "setScimEnabled">;

export function createScimTokenMethods(ctx: ServiceContext): ScimMethods {
  const repo = ctx.store.scimCredentials;

  return {
    async generateScimToken(req, context) {
      const now = ctx.now();
      const expiry = tokenExpiry(req.expireTime, req.neverExpires, now);
      const violations = collect(checkUidp("identity_provider_uid", req.identityProviderUid), isViolation(expiry) ? expiry : undefined);
      if (violations.length > 0 || isViolation(expiry)) throw invalidArgument(violations);
      const token = newScimToken();
      const state = await repo.generate(req.identityProviderUid, { tokenHash: secretHash(token), expireTime: expiry }, now, scimGuard(context));
      return {
        token,
        endpointUrl: ENDPOINT_URL,
        ...(expiry !== null ? { expireTime: timestampFromMs(expiry) } : {}),
        identityProviderUid: req.identityProviderUid,
        etag: state.etag,
      };
    },

    async regenerateScimToken(req, context) {
      const now = ctx.now();
      const expiry = tokenExpiry(req.expireTime, req.neverExpires, now);
      const overlap = overlapMs(req.overlap);
      const violations = collect(
        checkUidp("identity_provider_uid", req.identityProviderUid),
        checkEtag(req.etag),
        isViolation(expiry) ? expiry : undefined,
        isViolation(overlap) ? overlap : undefined,
      );
      if (violations.length > 0 || isViolation(expiry) || isViolation(overlap)) throw invalidArgument(violations);
      const token = newScimToken();
      const state = await repo.regenerate(
        req.identityProviderUid,
        req.etag,
        { tokenHash: secretHash(token), expireTime: expiry },
        overlap,
        now,
        scimGuard(context),
      );
      return {
        token,
        endpointUrl: ENDPOINT_URL,
        ...(expiry !== null ? { expireTime: timestampFromMs(expiry) } : {}),
        identityProviderUid: req.identityProviderUid,
        etag: state.etag,
        ...(state.previousTokenExpireTime !== null ? { previousTokenExpireTime: timestampFromMs(state.previousTokenExpireTime) } : {}),
        requestedOverlap: durationFromMs(overlap),
      };
    },

    async revokeScimToken(req) {
      const violations = collect(checkUidp("identity_provider_uid", req.identityProviderUid));
      if (violations.length > 0) throw invalidArgument(violations);
      const state = await repo.revoke(req.identityProviderUid, ctx.now());
      return {
        identityProviderUid: req.identityProviderUid,
        etag: state.etag,
        enabled: state.enabled,
        ...(state.revokeTime !== null ? { revokeTime: timestampFromMs(state.revokeTime) } : {}),
      };
    },

    async setScimEnabled(req, context) {
      const violations = collect(checkUidp("identity_provider_uid", req.identityProviderUid), checkEtag(req.etag));
      if (violations.length > 0) throw invalidArgument(violations);
      const state = await repo.setEnabled(req.identityProviderUid, req.enabled, req.etag, SCIM_MIN_OWNERS, ctx.now(), scimGuard(context));
      return { identityProviderUid: req.identityProviderUid, enabled: state.enabled, etag: state.etag };
    },
  };
}
