/**
 * Identity providers on PostgreSQL: the IdentityProvidersRepository contract
 * (src/store/identity-providers.ts), answer for answer as SQLite's
 * (src/store/sqlite/identity-providers.ts; the row layout is shared,
 * identity-provider-rows.ts), with writers on several replicas at once. Locks (iam-locks.ts),
 * top-down (group, provider, role):
 * - create locks the group FOR SHARE: no provider under a group being deleted;
 * - the default role is read FOR SHARE (`lockAssignableRole`), on create and when an update
 *   changes it: the role's delete waits and then finds the provider (RESOURCE_IN_USE), or the
 *   provider waits and then finds no role (INVALID_ARGUMENT default_role); and a change of the
 *   role's capabilities cannot slip between the escalation guard's judgement and the write,
 *   so a caller can never make a provider hand out more than the guard allowed;
 * - update locks the provider FOR UPDATE before `plan` reads it, so the merged OIDC settings it
 *   validates are the ones it overwrites, and the SCIM writers (scim-credentials.ts), which
 *   lock the provider too, never judge a default role that is being replaced.
 * delete needs the provider's row lock as any DELETE does, so it waits for those writers; its
 * SCIM row goes with it (cascade).
 */
import { count, eq } from "drizzle-orm";
import { notFound } from "../../errors/api-error.js";
import { changedOidc, identityProviderRecordOf, serializeOidc, storedClientSecret } from "../identity-provider-rows.js";
import { IDENTITY_PROVIDER_ORDERS, type IdentityProviderListFilter, type IdentityProvidersRepository } from "../identity-providers.js";
import { allOf, keysetClauses, uidpConditions, withinConditions } from "../list-predicates.js";
import { newUidp } from "../uidp.js";
import type { PgDb } from "./connection.js";
import { runGuard } from "./grant-view.js";
import { lockAssignableRole, lockParentGroup } from "./iam-locks.js";
import { identityProviders } from "./schema.js";
import { writeTransaction } from "./transaction.js";

type IdentityProviderRow = typeof identityProviders.$inferSelect;

export function createPostgresIdentityProvidersRepository(db: PgDb): IdentityProvidersRepository {
  const where = (f: IdentityProviderListFilter) =>
    allOf([
      ...uidpConditions(identityProviders.uid, identityProviders.parentUid, f.uidp),
      f.name !== undefined ? eq(identityProviders.name, f.name) : undefined,
      withinConditions(identityProviders.uid, f.within),
    ]);

  const getRow = async (uid: string) => {
    const [row] = await db.select().from(identityProviders).where(eq(identityProviders.uid, uid));
    return row;
  };

  return {
    async get(uid) {
      const row = await getRow(uid);
      return row && identityProviderRecordOf(row);
    },

    async create(provider, now, guard) {
      return writeTransaction(db, async (tx) => {
        await lockParentGroup(tx, provider.parentUid);
        await lockAssignableRole(tx, provider.defaultRole, provider.parentUid, "default_role");
        if (guard) await runGuard(tx, guard, provider.parentUid, provider.defaultRole);
        const row: IdentityProviderRow = {
          uid: newUidp(provider.parentUid),
          parentUid: provider.parentUid,
          name: provider.name,
          description: provider.description,
          defaultRole: provider.defaultRole,
          oidc: serializeOidc(provider.oidc),
          createTime: now,
          updateTime: now,
        };
        await tx.insert(identityProviders).values(row);
        return identityProviderRecordOf(row);
      });
    },

    async update(uid, plan, now, guard) {
      return writeTransaction(db, async (tx) => {
        const [existing] = await tx.select().from(identityProviders).where(eq(identityProviders.uid, uid)).for("update");
        if (!existing) throw notFound("identity provider", uid);
        const current = identityProviderRecordOf(existing);
        const { oidc, ...own } = plan(current);
        if (own.defaultRole !== undefined && own.defaultRole !== current.defaultRole) {
          await lockAssignableRole(tx, own.defaultRole, current.parentUid, "default_role");
          if (guard) await runGuard(tx, guard, current.parentUid, own.defaultRole);
        }
        const set: Partial<IdentityProviderRow> = { ...own, updateTime: now };
        if (oidc !== undefined) set.oidc = changedOidc(existing.oidc, oidc);
        const [row] = await tx.update(identityProviders).set(set).where(eq(identityProviders.uid, uid)).returning();
        return identityProviderRecordOf(row as IdentityProviderRow);
      });
    },

    async delete(uid) {
      const deleted = await writeTransaction(db, (tx) =>
        tx.delete(identityProviders).where(eq(identityProviders.uid, uid)).returning({ uid: identityProviders.uid }),
      );
      if (deleted.length === 0) throw notFound("identity provider", uid);
    },

    async list(filter, page) {
      const column = identityProviders[IDENTITY_PROVIDER_ORDERS.fields[page.order]];
      const ks = keysetClauses(column, identityProviders.uid, page, column === identityProviders.uid);
      const rows = await db
        .select()
        .from(identityProviders)
        .where(allOf([where(filter), ks.where]))
        .orderBy(...ks.orderBy)
        .limit(page.limit)
        .offset(page.offset);
      return rows.map(identityProviderRecordOf);
    },

    async count(filter) {
      const [row] = await db.select({ n: count() }).from(identityProviders).where(where(filter));
      return row?.n ?? 0;
    },

    async clientSecret(uid) {
      const row = await getRow(uid);
      return row && storedClientSecret(row.oidc);
    },
  };
}
