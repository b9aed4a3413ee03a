/**
 * IdentityProviders repository: every read and write of the `identity_providers` table.
 *
 * The OIDC configuration is one JSON column in our own shape (identity-provider-rows.ts,
 * shared with PostgreSQL). The client secret is written here but never read back by the CRUD
 * functions: records carry only `hasClientSecret`, and the one reader of the secret itself is
 * `clientSecret`, for the login flow. Every check-then-write runs in one BEGIN IMMEDIATE transaction; errors are
 * ApiErrors; no proto types enter here.
 */
import { eq, sql } from "drizzle-orm";
import { notFound } from "../../errors/api-error.js";
import type { Db } from "./db.js";
import { groupCommit } from "./group-commit.js";
import { allOf, type Bind, preparedLists, uidpConditions, withinConditions } from "./list-query.js";
import { grantView } from "./grant-view.js";
import { requireAssignableRole, requireGroup } from "./references.js";
import { type IdentityProviderRow, identityProviders } from "./schema.js";
import { newUidp } from "../uidp.js";
import { IDENTITY_PROVIDER_ORDERS, type IdentityProviderListFilter, type IdentityProvidersRepository } from "../identity-providers.js";
import { changedOidc, identityProviderRecordOf as toRecord, serializeOidc, storedClientSecret } from "../identity-provider-rows.js";

export function createIdentityProvidersRepository(db: Db): IdentityProvidersRepository {
  const getStmt = db
    .select()
    .from(identityProviders)
    .where(eq(identityProviders.uid, sql.placeholder("uid")))
    .prepare();

  const where = (f: IdentityProviderListFilter, bind: Bind) =>
    allOf([
      ...uidpConditions(identityProviders.uid, identityProviders.parentUid, f.uidp, bind),
      f.name !== undefined ? eq(identityProviders.name, bind(f.name) as string) : undefined,
      withinConditions(identityProviders.uid, f.within, bind),
    ]);
  // list and count run statements prepared once per query shape (list-query.ts preparedLists).
  const lists = preparedLists(db, identityProviders, identityProviders.uid, "identity_providers");

  return {
    async get(uid) {
      const row = getStmt.get({ uid });
      return row && toRecord(row);
    },

    async create(provider, now, guard) {
      return groupCommit(db, (tx) => {
        requireGroup(tx, provider.parentUid);
        requireAssignableRole(tx, provider.defaultRole, provider.parentUid, "default_role");
        guard?.(grantView(tx), provider.parentUid, provider.defaultRole);
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
        tx.insert(identityProviders).values(row).run();
        return toRecord(row);
      });
    },

    async update(uid, plan, now, guard) {
      return groupCommit(db, (tx) => {
        const existing = tx.select().from(identityProviders).where(eq(identityProviders.uid, uid)).get();
        if (!existing) throw notFound("identity provider", uid);
        const current = toRecord(existing);
        const { oidc, ...own } = plan(current);
        if (own.defaultRole !== undefined && own.defaultRole !== current.defaultRole) {
          requireAssignableRole(tx, own.defaultRole, current.parentUid, "default_role");
          guard?.(grantView(tx), current.parentUid, own.defaultRole);
        }
        const set: Partial<IdentityProviderRow> = { ...own, updateTime: now };
        if (oidc !== undefined) set.oidc = changedOidc(existing.oidc, oidc);
        tx.update(identityProviders).set(set).where(eq(identityProviders.uid, uid)).run();
        return toRecord(tx.select().from(identityProviders).where(eq(identityProviders.uid, uid)).get() as IdentityProviderRow);
      });
    },

    async delete(uid) {
      const result = db.delete(identityProviders).where(eq(identityProviders.uid, uid)).run();
      if (result.changes === 0) throw notFound("identity provider", uid);
    },

    async list(filter, page) {
      const col = identityProviders[IDENTITY_PROVIDER_ORDERS.fields[page.order]];
      return (lists.page((bind) => where(filter, bind), col, page) as IdentityProviderRow[]).map(toRecord);
    },

    async count(filter) {
      return lists.count((bind) => where(filter, bind));
    },

    async clientSecret(uid) {
      const row = getStmt.get({ uid });
      return row && storedClientSecret(row.oidc);
    },
  };
}
