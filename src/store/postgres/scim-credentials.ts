/**
 * SCIM state of identity providers on PostgreSQL: the ScimCredentialsRepository contract
 * (src/store/scim-credentials.ts), answer for answer as SQLite's
 * (src/store/sqlite/scim-credentials.ts; what each change writes and refuses is shared,
 * scim-rows.ts), with writers on several replicas at once.
 *
 * Every change locks the provider's row FOR UPDATE before reading its SCIM row. The SCIM row
 * may not exist yet (the first token), so it cannot be the lock itself; the provider row
 * always exists while SCIM is changed. Hence:
 * - one change at a time per provider: the etag check, the "a token exists" check and the
 *   write are never overtaken, so two replicas generating a first token at once give one
 *   token and one SCIM_TOKEN_EXISTS, and of two changes sent with one etag exactly one
 *   commits (the other is ABORTED, ETAG_MISMATCH), never a unique-index error;
 * - the escalation guard judges the provider's default role as it stays until commit: a
 *   provider update (which locks the row too) cannot swap in a stronger default role between
 *   the guard and the write, and the role itself is read FOR SHARE before the guard runs, so
 *   a change of its capabilities (FOR UPDATE) waits until the change committed;
 * - a provider deleted meanwhile: the change waits and then finds no provider (NOT_FOUND),
 *   or the delete waits for it and removes its SCIM row with it (cascade).
 * Turning SCIM on counts the organization's owners without locking them: an owner removed
 * just after the check is the same as one removed just after the commit, which SQLite allows
 * too (the rule is checked when SCIM is turned on, not kept afterwards).
 */
import { and, eq, inArray } from "drizzle-orm";
import { notFound } from "../../errors/api-error.js";
import { builtInRoleUid } from "../builtin-roles.js";
import type { ScimCredentialsRepository, ScimGuard, ScimProvider, ScimState } from "../scim-credentials.js";
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
  scimStateOf,
  scimTokenValid,
} from "../scim-rows.js";
import { rootOf } from "../uidp.js";
import type { PgDb } from "./connection.js";
import { runGuard } from "./grant-view.js";
import { identityProviders, roleBindings, roles, scimCredentials } from "./schema.js";
import { type Tx, writeTransaction } from "./transaction.js";

type ScimCredentialRow = typeof scimCredentials.$inferSelect;

export function createPostgresScimCredentialsRepository(db: PgDb): ScimCredentialsRepository {
  const rowOf = async (tx: Tx | PgDb, uid: string): Promise<ScimCredentialRow | undefined> => {
    const [row] = await tx.select().from(scimCredentials).where(eq(scimCredentials.identityProviderUid, uid));
    return row;
  };

  /** The provider, locked FOR UPDATE (NOT_FOUND without one), and its SCIM row (see the header). */
  async function lockProvider(tx: Tx, uid: string): Promise<{ provider: ScimProvider; row: ScimCredentialRow | undefined }> {
    const [provider] = await tx
      .select({ uid: identityProviders.uid, parentUid: identityProviders.parentUid, defaultRole: identityProviders.defaultRole })
      .from(identityProviders)
      .where(eq(identityProviders.uid, uid))
      .for("update");
    if (!provider) throw notFound("identity provider", uid);
    return { provider, row: await rowOf(tx, uid) };
  }

  /** Runs the caller's escalation guard on the provider, its default role locked FOR SHARE (see the header). */
  async function judge(tx: Tx, guard: ScimGuard, provider: ScimProvider): Promise<void> {
    await tx.select({ uid: roles.uid }).from(roles).where(eq(roles.uid, provider.defaultRole)).for("share");
    await runGuard(tx, guard, provider);
  }

  async function write(tx: Tx, uid: string, row: ScimCredentialRow | undefined, set: ScimColumns, now: number): Promise<ScimState> {
    const etag = nextScimEtag(row);
    const [written] = row
      ? await tx
          .update(scimCredentials)
          .set({ ...set, etag, updateTime: now })
          .where(eq(scimCredentials.identityProviderUid, uid))
          .returning()
      : await tx
          .insert(scimCredentials)
          .values({ identityProviderUid: uid, ...set, etag, updateTime: now })
          .returning();
    return scimStateOf(written);
  }

  return {
    async get(uid) {
      return scimStateOf(await rowOf(db, uid));
    },

    async getMany(uids) {
      const out = new Map<string, ScimState>(uids.map((u) => [u, INITIAL_SCIM_STATE]));
      if (uids.length === 0) return out;
      const rows = await db
        .select()
        .from(scimCredentials)
        .where(inArray(scimCredentials.identityProviderUid, [...uids]));
      for (const row of rows) out.set(row.identityProviderUid, scimStateOf(row));
      return out;
    },

    async generate(uid, token, now, guard) {
      return writeTransaction(db, async (tx) => {
        const { provider, row } = await lockProvider(tx, uid);
        const set = generatedScimColumns(uid, row, token);
        await judge(tx, guard, provider);
        return write(tx, uid, row, set, now);
      });
    },

    async regenerate(uid, etag, token, overlapMs, now, guard) {
      return writeTransaction(db, async (tx) => {
        const { provider, row } = await lockProvider(tx, uid);
        requireScimIssued(uid, row);
        requireScimEtag(uid, row, etag);
        await judge(tx, guard, provider);
        return write(tx, uid, row, regeneratedScimColumns(row, token, overlapMs, now), now);
      });
    },

    async revoke(uid, now) {
      return writeTransaction(db, async (tx) => {
        const { row } = await lockProvider(tx, uid);
        requireScimIssued(uid, row);
        const set = revokedScimColumns(row, now);
        return set === undefined ? scimStateOf(row) : write(tx, uid, row, set, now);
      });
    },

    async setEnabled(uid, enabled, etag, minOwners, now, guard) {
      return writeTransaction(db, async (tx) => {
        const { provider, row } = await lockProvider(tx, uid);
        requireScimEtag(uid, row, etag);
        if ((row?.enabled ?? false) === enabled) return scimStateOf(row);
        if (enabled) {
          await judge(tx, guard, provider);
          const org = rootOf(provider.parentUid);
          const owners = await tx
            .selectDistinct({ identityUid: roleBindings.identityUid })
            .from(roleBindings)
            .where(and(eq(roleBindings.groupUid, org), eq(roleBindings.roleUid, builtInRoleUid("owner"))));
          requireScimOwners(org, owners.length, minOwners);
        }
        return write(tx, uid, row, { enabled }, now);
      });
    },

    async findByTokenHash(tokenHash, now) {
      const [current] = await db
        .select({ uid: scimCredentials.identityProviderUid, exp: scimCredentials.tokenExpireTime })
        .from(scimCredentials)
        .where(eq(scimCredentials.tokenHash, tokenHash))
        .limit(1);
      if (current && scimTokenValid(current.exp, now, false)) return current.uid;
      const [previous] = await db
        .select({ uid: scimCredentials.identityProviderUid, exp: scimCredentials.previousTokenExpireTime })
        .from(scimCredentials)
        .where(eq(scimCredentials.previousTokenHash, tokenHash))
        .limit(1);
      return previous && scimTokenValid(previous.exp, now, true) ? previous.uid : undefined;
    },
  };
}
