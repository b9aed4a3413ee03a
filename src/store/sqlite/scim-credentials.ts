/**
 * SCIM state of identity providers: every read and write of `scim_credentials` (the rules are
 * in the service, src/services/iam/scim-tokens.ts, and docs/auth.md "SCIM tokens").
 *
 * Tokens are stored as SHA-256 hashes only; the token itself exists once, in the response
 * that issued it. Every change runs in one BEGIN IMMEDIATE transaction that re-reads the row,
 * checks the etag the caller sent (ABORTED on a mismatch), runs the caller's escalation
 * guard, and bumps the etag. A provider without a row is "SCIM off, no token ever issued",
 * with etag "0". Times are epoch milliseconds. No proto types enter here.
 */
import { and, eq, inArray } from "drizzle-orm";
import { ApiError, failedPrecondition, GrpcCode, notFound } from "../../errors/api-error.js";
import { builtInRoleUid } from "../builtin-roles.js";
import type { Db } from "./db.js";
import { grantView } from "./grant-view.js";
import { groupCommit } from "./group-commit.js";
import { identityProviders, roleBindings, type ScimCredentialRow, scimCredentials } from "./schema.js";
import { rootOf } from "../uidp.js";
import type { ScimState, ScimProvider, ScimCredentialsRepository } from "../scim-credentials.js";

const INITIAL: ScimState = {
  enabled: false,
  hasToken: false,
  tokenExpireTime: null,
  previousTokenExpireTime: null,
  revokeTime: null,
  issued: false,
  etag: "0",
};

function toState(row: ScimCredentialRow | undefined): ScimState {
  if (!row) return INITIAL;
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

function nextEtag(etag: string): string {
  return String((Number.parseInt(etag, 10) || 0) + 1);
}

/** ABORTED: the caller's view of the SCIM state is stale (AIP-154). */
function etagMismatch(identityProviderUid: string): ApiError {
  return new ApiError(GrpcCode.Aborted, "Aborted: the etag does not match the provider's current SCIM state; read it again (GetIdentityProvider) and retry", {
    reason: "ETAG_MISMATCH",
    metadata: { identity_provider_uid: identityProviderUid },
  });
}

export function createScimCredentialsRepository(db: Db): ScimCredentialsRepository {
  const rowOf = (tx: Db, uid: string) => tx.select().from(scimCredentials).where(eq(scimCredentials.identityProviderUid, uid)).get();

  /** The provider (NOT_FOUND without one) and its SCIM row, read inside `tx`. */
  function read(tx: Db, uid: string): { provider: ScimProvider; row: ScimCredentialRow | undefined } {
    const provider = tx
      .select({ uid: identityProviders.uid, parentUid: identityProviders.parentUid, defaultRole: identityProviders.defaultRole })
      .from(identityProviders)
      .where(eq(identityProviders.uid, uid))
      .get();
    if (!provider) throw notFound("identity provider", uid);
    return { provider, row: rowOf(tx, uid) };
  }

  function write(tx: Db, uid: string, row: ScimCredentialRow | undefined, set: Partial<ScimCredentialRow>, now: number): ScimState {
    const etag = nextEtag(row?.etag ?? INITIAL.etag);
    if (row) {
      tx.update(scimCredentials)
        .set({ ...set, etag, updateTime: now })
        .where(eq(scimCredentials.identityProviderUid, uid))
        .run();
    } else {
      tx.insert(scimCredentials)
        .values({ identityProviderUid: uid, ...set, etag, updateTime: now })
        .run();
    }
    return toState(rowOf(tx, uid));
  }

  return {
    async get(uid) {
      return toState(rowOf(db, uid));
    },

    async getMany(uids) {
      const out = new Map<string, ScimState>(uids.map((u) => [u, INITIAL]));
      if (uids.length === 0) return out;
      for (const row of db
        .select()
        .from(scimCredentials)
        .where(inArray(scimCredentials.identityProviderUid, [...uids]))
        .all()) {
        out.set(row.identityProviderUid, toState(row));
      }
      return out;
    },

    async generate(uid, token, now, guard) {
      return groupCommit(db, (tx) => {
        const { provider, row } = read(tx, uid);
        if (row?.tokenHash) {
          throw failedPrecondition(
            { type: "SCIM_TOKEN_EXISTS", subject: uid, description: "the provider already has a SCIM token; use RegenerateScimToken to replace it" },
            { metadata: { identity_provider_uid: uid } },
          );
        }
        guard(grantView(tx), provider);
        return write(
          tx,
          uid,
          row,
          {
            tokenHash: token.tokenHash,
            tokenExpireTime: token.expireTime,
            previousTokenHash: null,
            previousTokenExpireTime: null,
            revokeTime: null,
            issued: true,
          },
          now,
        );
      });
    },

    async regenerate(uid, etag, token, overlapMs, now, guard) {
      return groupCommit(db, (tx) => {
        const { provider, row } = read(tx, uid);
        if (!row?.issued) throw notFound("SCIM token", uid);
        if (row.etag !== etag) throw etagMismatch(uid);
        guard(grantView(tx), provider);
        // Only a token that still works gets an overlap; an expired or revoked one ends now.
        const stillValid = row.tokenHash !== null && (row.tokenExpireTime === null || row.tokenExpireTime > now);
        const previousEnd = stillValid && overlapMs > 0 ? Math.min(now + overlapMs, row.tokenExpireTime ?? Number.POSITIVE_INFINITY) : null;
        return write(
          tx,
          uid,
          row,
          {
            tokenHash: token.tokenHash,
            tokenExpireTime: token.expireTime,
            previousTokenHash: previousEnd !== null ? row.tokenHash : null,
            previousTokenExpireTime: previousEnd,
            revokeTime: null,
          },
          now,
        );
      });
    },

    async revoke(uid, now) {
      return groupCommit(db, (tx) => {
        const { row } = read(tx, uid);
        if (!row?.issued) throw notFound("SCIM token", uid);
        // Already revoked: nothing to change, the first revocation's time stands.
        if (row.tokenHash === null && row.previousTokenHash === null) return toState(row);
        return write(tx, uid, row, { tokenHash: null, tokenExpireTime: null, previousTokenHash: null, previousTokenExpireTime: null, revokeTime: now }, now);
      });
    },

    async setEnabled(uid, enabled, etag, minOwners, now, guard) {
      return groupCommit(db, (tx) => {
        const { provider, row } = read(tx, uid);
        if ((row?.etag ?? INITIAL.etag) !== etag) throw etagMismatch(uid);
        if ((row?.enabled ?? false) === enabled) return toState(row);
        if (enabled) {
          guard(grantView(tx), provider);
          const org = rootOf(provider.parentUid);
          const owners = tx
            .selectDistinct({ identityUid: roleBindings.identityUid })
            .from(roleBindings)
            .where(and(eq(roleBindings.groupUid, org), eq(roleBindings.roleUid, builtInRoleUid("owner"))))
            .all().length;
          if (owners < minOwners) {
            throw failedPrecondition(
              {
                type: "SCIM_OWNERS",
                subject: org,
                description: `turning SCIM on needs at least ${minOwners} identities bound owner at the organization by hand (it has ${owners}), so provisioning cannot lock everyone out`,
              },
              { metadata: { group_uid: org, owners: String(owners) } },
            );
          }
        }
        return write(tx, uid, row, { enabled }, now);
      });
    },

    async findByTokenHash(tokenHash, now) {
      const current = db
        .select({ uid: scimCredentials.identityProviderUid, exp: scimCredentials.tokenExpireTime })
        .from(scimCredentials)
        .where(eq(scimCredentials.tokenHash, tokenHash))
        .get();
      if (current && (current.exp === null || current.exp > now)) return current.uid;
      const previous = db
        .select({ uid: scimCredentials.identityProviderUid, exp: scimCredentials.previousTokenExpireTime })
        .from(scimCredentials)
        .where(eq(scimCredentials.previousTokenHash, tokenHash))
        .get();
      return previous && previous.exp !== null && previous.exp > now ? previous.uid : undefined;
    },
  };
}
