/**
 * Account associations on PostgreSQL: the AccountAssociationsRepository contract
 * (src/store/account-associations.ts), answer for answer as SQLite's
 * (src/store/sqlite/account-associations.ts; the row layout and the List's hierarchy filter
 * are shared, account-association-rows.ts and list-predicates.ts), with writers on several
 * replicas at once. Locks (iam-locks.ts), top-down:
 * - create locks the group FOR SHARE: no association for a group being deleted (the delete
 *   waits and then finds the association, RESOURCE_NOT_EMPTY; or the create waits and then
 *   finds no group, NOT_FOUND);
 * - one association per group (its uid is the group's): INSERT … ON CONFLICT DO NOTHING on the
 *   primary key, so two replicas creating one at once give one success and one ALREADY_EXISTS,
 *   never a unique-index error;
 * - update locks the association FOR UPDATE before `plan` reads it, so the merged provider
 *   blocks it validates are the ones it overwrites (two replicas' updates apply one after the
 *   other, neither lost).
 */
import { count, eq, sql } from "drizzle-orm";
import { alreadyExists, notFound } from "../../errors/api-error.js";
import { accountAssociationRecordOf } from "../account-association-rows.js";
import { ACCOUNT_ASSOCIATION_ORDERS, type AccountAssociationListFilter, type AccountAssociationsRepository } from "../account-associations.js";
import { allOf, keysetClauses, type NoSlashFrom, uidShapeConditions, withinConditions } from "../list-predicates.js";
import type { PgDb } from "./connection.js";
import { lockParentGroup } from "./iam-locks.js";
import { accountAssociations } from "./schema.js";
import { writeTransaction } from "./transaction.js";

type AccountAssociationRow = typeof accountAssociations.$inferSelect;

/** PostgreSQL's spelling of "no '/' from character `from` on" (list-predicates.ts uidShapeConditions). */
const noSlashFrom: NoSlashFrom = (uid, from) => (from === undefined ? sql`strpos(${uid}, '/') = 0` : sql`strpos(substr(${uid}, ${from}::integer), '/') = 0`);

export function createPostgresAccountAssociationsRepository(db: PgDb): AccountAssociationsRepository {
  const where = (f: AccountAssociationListFilter) =>
    allOf([
      ...uidShapeConditions(accountAssociations.uid, f.uidp, noSlashFrom),
      f.name !== undefined ? eq(accountAssociations.name, f.name) : undefined,
      withinConditions(accountAssociations.uid, f.within),
    ]);

  return {
    async get(uid) {
      const [row] = await db.select().from(accountAssociations).where(eq(accountAssociations.uid, uid));
      return row && accountAssociationRecordOf(row);
    },

    async create(association, now) {
      return writeTransaction(db, async (tx) => {
        await lockParentGroup(tx, association.groupUid);
        const row: AccountAssociationRow = {
          uid: association.groupUid,
          name: association.name,
          description: association.description,
          providers: JSON.stringify(association.providers),
          createTime: now,
          updateTime: now,
        };
        const inserted = await tx.insert(accountAssociations).values(row).onConflictDoNothing().returning({ uid: accountAssociations.uid });
        if (inserted.length === 0) {
          throw alreadyExists("account association", association.groupUid, `group ${association.groupUid} already has an account association`);
        }
        return accountAssociationRecordOf(row);
      });
    },

    async update(uid, plan, now) {
      return writeTransaction(db, async (tx) => {
        const [existing] = await tx.select().from(accountAssociations).where(eq(accountAssociations.uid, uid)).for("update");
        if (!existing) throw notFound("account association", uid);
        const { providers, ...own } = plan(accountAssociationRecordOf(existing));
        const set: Partial<AccountAssociationRow> = { ...own, updateTime: now };
        if (providers !== undefined) set.providers = JSON.stringify(providers);
        const [row] = await tx.update(accountAssociations).set(set).where(eq(accountAssociations.uid, uid)).returning();
        return accountAssociationRecordOf(row as AccountAssociationRow);
      });
    },

    async delete(uid) {
      await writeTransaction(db, (tx) => tx.delete(accountAssociations).where(eq(accountAssociations.uid, uid)));
    },

    async list(filter, page) {
      const column = accountAssociations[ACCOUNT_ASSOCIATION_ORDERS.fields[page.order]];
      const ks = keysetClauses(column, accountAssociations.uid, page, column === accountAssociations.uid);
      const rows = await db
        .select()
        .from(accountAssociations)
        .where(allOf([where(filter), ks.where]))
        .orderBy(...ks.orderBy)
        .limit(page.limit)
        .offset(page.offset);
      return rows.map(accountAssociationRecordOf);
    },

    async count(filter) {
      const [row] = await db.select({ n: count() }).from(accountAssociations).where(where(filter));
      return row?.n ?? 0;
    },
  };
}
