/**
 * SCIM state of identity providers: every read and write of `scim_credentials` (the rules are
 * in the service, src/services/iam/scim-tokens.ts, and docs/auth.md "SCIM tokens").
 *
 * Tokens are stored as SHA-256 hashes only; the token itself exists once, in the response
 * that issued it. Every change runs in one BEGIN IMMEDIATE transaction that re-reads the row,
 * checks the etag the caller sent (ABORTED on a mismatch), runs the caller's escalation
 * guard, and bumps the etag. What each change writes and refuses is the same on every engine
 * (scim-rows.ts). No proto types enter here.
 */
import { and, eq, inArray } from "drizzle-orm";
import { notFound } from "../../errors/api-error.js";
import { builtInRoleUid } from "../builtin-roles.js";
import type { Db } from "./db.js";
import { grantView } from "./grant-view.js";
import { groupCommit } from "./group-commit.js";
import { identityProviders, roleBindings, type ScimCredentialRow, scimCredentials } from "./schema.js";
import { rootOf } from "../uidp.js";
import type { ScimState, ScimProvider, ScimCredentialsRepository } from "../scim-credentials.js";
import {
  generatedScimColumns,
  INITIAL_SCIM_STATE,
  nextScimEtag,
  regeneratedScimColumns,
  requireScimEtag,
  requireScimIssued,
  requireScimOwners,
  revokedScimColumns,
  type ScimColumns,
  scimStateOf as toState,
  scimTokenValid,
} from "../scim-rows.js";

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

  function write(tx: Db, uid: string, row: ScimCredentialRow | undefined, set: ScimColumns, now: number): ScimState {
    const etag = nextScimEtag(row);
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
      const out = new Map<string, ScimState>(uids.map((u) => [u, INITIAL_SCIM_STATE]));
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
        const set = generatedScimColumns(uid, row, token);
        guard(grantView(tx), provider);
        return write(tx, uid, row, set, now);
      });
    },

    async regenerate(uid, etag, token, overlapMs, now, guard) {
      return groupCommit(db, (tx) => {
        const { provider, row } = read(tx, uid);
        requireScimIssued(uid, row);
        requireScimEtag(uid, row, etag);
        guard(grantView(tx), provider);
        return write(tx, uid, row, regeneratedScimColumns(row, token, overlapMs, now), now);
      });
    },

    async revoke(uid, now) {
      return groupCommit(db, (tx) => {
        const { row } = read(tx, uid);
        requireScimIssued(uid, row);
        const set = revokedScimColumns(row, now);
        return set === undefined ? toState(row) : write(tx, uid, row, set, now);
      });
    },

    async setEnabled(uid, enabled, etag, minOwners, now, guard) {
      return groupCommit(db, (tx) => {
        const { provider, row } = read(tx, uid);
        requireScimEtag(uid, row, etag);
        if ((row?.enabled ?? false) === enabled) return toState(row);
        if (enabled) {
          guard(grantView(tx), provider);
          const org = rootOf(provider.parentUid);
          const owners = tx
            .selectDistinct({ identityUid: roleBindings.identityUid })
            .from(roleBindings)
            .where(and(eq(roleBindings.groupUid, org), eq(roleBindings.roleUid, builtInRoleUid("owner"))))
            .all().length;
          requireScimOwners(org, owners, minOwners);
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
      if (current && scimTokenValid(current.exp, now, false)) return current.uid;
      const previous = db
        .select({ uid: scimCredentials.identityProviderUid, exp: scimCredentials.previousTokenExpireTime })
        .from(scimCredentials)
        .where(eq(scimCredentials.previousTokenHash, tokenHash))
        .get();
      return previous && scimTokenValid(previous.exp, now, true) ? previous.uid : undefined;
    },
  };
}
