/**
 * AccountAssociations repository: every read and write of the `account_associations` table.
 *
 * An association belongs to one group and its uid IS that group's uid (docs/published-api.md "Uids"), so a
 * group has at most one. The provider blocks are one JSON column in our own shape
 * (`AccountProviders`). Every check-then-write runs in one BEGIN IMMEDIATE transaction;
 * errors are ApiErrors; no proto types enter here.
 */
import { eq, sql } from "drizzle-orm";
import { alreadyExists, notFound } from "../../errors/api-error.js";
import type { Db } from "./db.js";
import { groupCommit } from "./group-commit.js";
import { requireGroup } from "./references.js";
import { allOf, type Bind, preparedLists, withinConditions } from "./list-query.js";
import { type NoSlashFrom, uidShapeConditions } from "../list-predicates.js";
import { type AccountAssociationRow, accountAssociations } from "./schema.js";
import { ACCOUNT_ASSOCIATION_ORDERS, type AccountAssociationListFilter, type AccountAssociationsRepository } from "../account-associations.js";
import { accountAssociationRecordOf as toRecord } from "../account-association-rows.js";

export function createAccountAssociationsRepository(db: Db): AccountAssociationsRepository {
  const getStmt = db
    .select()
    .from(accountAssociations)
    .where(eq(accountAssociations.uid, sql.placeholder("uid")))
    .prepare();

  const where = (f: AccountAssociationListFilter, bind: Bind) =>
    allOf([
      ...uidShapeConditions(accountAssociations.uid, f.uidp, noSlashFrom, bind),
      f.name !== undefined ? eq(accountAssociations.name, bind(f.name) as string) : undefined,
      withinConditions(accountAssociations.uid, f.within, bind),
    ]);
  // list and count run statements prepared once per query shape (list-query.ts preparedLists).
  const lists = preparedLists(db, accountAssociations, accountAssociations.uid, "account_associations");

  return {
    async get(uid) {
      const row = getStmt.get({ uid });
      return row && toRecord(row);
    },

    async create(association, now) {
      return groupCommit(db, (tx) => {
        requireGroup(tx, association.groupUid);
        const existing = tx.select({ uid: accountAssociations.uid }).from(accountAssociations).where(eq(accountAssociations.uid, association.groupUid)).get();
        if (existing) {
          throw alreadyExists("account association", association.groupUid, `group ${association.groupUid} already has an account association`);
        }
        const row: AccountAssociationRow = {
          uid: association.groupUid,
          name: association.name,
          description: association.description,
          providers: JSON.stringify(association.providers),
          createTime: now,
          updateTime: now,
        };
        tx.insert(accountAssociations).values(row).run();
        return toRecord(row);
      });
    },

    async update(uid, plan, now) {
      return groupCommit(db, (tx) => {
        const existing = tx.select().from(accountAssociations).where(eq(accountAssociations.uid, uid)).get();
        if (!existing) throw notFound("account association", uid);
        const { providers, ...own } = plan(toRecord(existing));
        const set: Partial<AccountAssociationRow> = { ...own, updateTime: now };
        if (providers !== undefined) set.providers = JSON.stringify(providers);
        tx.update(accountAssociations).set(set).where(eq(accountAssociations.uid, uid)).run();
        return toRecord(tx.select().from(accountAssociations).where(eq(accountAssociations.uid, uid)).get() as AccountAssociationRow);
      });
    },

    async delete(uid) {
      await groupCommit(db, (tx) => {
        tx.delete(accountAssociations).where(eq(accountAssociations.uid, uid)).run();
      });
    },

    async list(filter, page) {
      const col = accountAssociations[ACCOUNT_ASSOCIATION_ORDERS.fields[page.order]];
      return (lists.page((bind) => where(filter, bind), col, page) as AccountAssociationRow[]).map(toRecord);
    },

    async count(filter) {
      return lists.count((bind) => where(filter, bind));
    },
  };
}

/** SQLite's spelling of "no '/' from character `from` on" (list-predicates.ts uidShapeConditions). */
const noSlashFrom: NoSlashFrom = (uid, from) => (from === undefined ? sql`instr(${uid}, '/') = 0` : sql`instr(substr(${uid}, ${from}), '/') = 0`);
