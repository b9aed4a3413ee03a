/**
 * Identities repository: every read and write of the `identities` table.
 *
 * An assumable identity lives under a group (uid = group uid + "/" + 16 hex); user identities
 * (made at a user's first sign-in, docs/auth.md "The token exchange") are roots. The relationship (how a token proves it is this
 * identity) is one JSON column in the store's own shape (`Relationship`), with its
 * RelationshipType number in `relationship_type` for filtering, and the exact issuer/subject
 * of a claim match or static keys copied to `claim_issuer`/`claim_subject` (indexed, and read
 * by role-binding hydration). Every check-then-write runs in one BEGIN IMMEDIATE transaction;
 * errors are ApiErrors; no proto types enter here.
 */
import { eq, sql } from "drizzle-orm";
import { notFound } from "../../errors/api-error.js";
import type { Db } from "./db.js";
import { grantView, requireOwnersRemain } from "./grant-view.js";
import { groupCommit } from "./group-commit.js";
import { requireGroup } from "./references.js";
import { allOf, type Bind, preparedLists, uidpConditions, withinConditions } from "./list-query.js";
import { identities, type IdentityRow, roleBindings } from "./schema.js";
import { identityRecordOf, newUserIdentityRow, parseIdentityMetadata, relationshipColumns } from "../identity-rows.js";
import { newUidp } from "../uidp.js";
import { RELATIONSHIP_TYPES, userIdentityUid, IDENTITY_ORDERS, type IdentityListFilter, type IdentitiesRepository } from "../identities.js";

export function createIdentitiesRepository(db: Db): IdentitiesRepository {
  const getStmt = db
    .select()
    .from(identities)
    .where(eq(identities.uid, sql.placeholder("uid")))
    .prepare();
  const touchStmt = db
    .update(identities)
    .set({ lastSeenTime: sql.placeholder("now") as unknown as number })
    .where(eq(identities.uid, sql.placeholder("uid")))
    .prepare();

  const where = (f: IdentityListFilter, bind: Bind = (v) => v) =>
    allOf([
      ...uidpConditions(identities.uid, identities.parentUid, f.uidp, bind),
      f.name !== undefined ? eq(identities.name, bind(f.name) as string) : undefined,
      f.kind !== undefined ? eq(identities.relationshipType, bind(RELATIONSHIP_TYPES[f.kind]) as number) : undefined,
      withinConditions(identities.uid, f.within, bind),
    ]);
  // list and count run statements prepared once per query shape (list-query.ts preparedLists).
  const lists = preparedLists(db, identities, identities.uid, "identities");

  return {
    async get(uid) {
      const row = getStmt.get({ uid });
      return row && identityRecordOf(row);
    },

    async create(identity, now) {
      return groupCommit(db, (tx) => {
        requireGroup(tx, identity.parentUid);
        const row: IdentityRow = {
          uid: newUidp(identity.parentUid),
          parentUid: identity.parentUid,
          name: identity.name,
          description: identity.description,
          email: "",
          emailUnverified: "",
          company: identity.company,
          metadata: "{}",
          ...relationshipColumns(identity.relationship),
          lastSeenTime: null,
          createTime: now,
          updateTime: now,
        };
        tx.insert(identities).values(row).run();
        return identityRecordOf(row);
      });
    },

    async update(uid, plan, now) {
      return groupCommit(db, (tx) => {
        const existing = tx.select().from(identities).where(eq(identities.uid, uid)).get();
        if (!existing) throw notFound("identity", uid);
        const { relationship, ...own } = plan(identityRecordOf(existing), grantView(tx));
        tx.update(identities)
          .set({ ...own, ...(relationship && relationshipColumns(relationship)), updateTime: now })
          .where(eq(identities.uid, uid))
          .run();
        return identityRecordOf(tx.select().from(identities).where(eq(identities.uid, uid)).get() as IdentityRow);
      });
    },

    async delete(uid, guard) {
      await groupCommit(db, (tx) => {
        const existing = tx.select().from(identities).where(eq(identities.uid, uid)).get();
        if (!existing) throw notFound("identity", uid);
        guard?.(grantView(tx), identityRecordOf(existing));
        const bindings = tx.select({ uid: roleBindings.uid }).from(roleBindings).where(eq(roleBindings.identityUid, uid)).all();
        requireOwnersRemain(
          tx,
          bindings.map((b) => b.uid),
        );
        tx.delete(roleBindings).where(eq(roleBindings.identityUid, uid)).run();
        tx.delete(identities).where(eq(identities.uid, uid)).run();
      });
    },

    async list(filter, page) {
      const rows = lists.page((bind) => where(filter, bind), identities[IDENTITY_ORDERS.fields[page.order]], page) as IdentityRow[];
      return rows.map(identityRecordOf);
    },

    async count(filter) {
      return lists.count((bind) => where(filter, bind));
    },

    async updateMetadata(uid, changes, now) {
      return groupCommit(db, (tx) => {
        const existing = tx.select().from(identities).where(eq(identities.uid, uid)).get();
        if (!existing) throw notFound("identity", uid);
        const metadata = { ...parseIdentityMetadata(existing.metadata), ...changes.metadata };
        const set = { metadata: JSON.stringify(metadata), ...(changes.company !== undefined && { company: changes.company }), updateTime: now };
        tx.update(identities).set(set).where(eq(identities.uid, uid)).run();
        return identityRecordOf({ ...existing, ...set });
      });
    },

    async findOrCreateUser(user, now) {
      return groupCommit(db, (tx) => {
        const uid = userIdentityUid(user.issuer, user.subject);
        const existing = tx.select().from(identities).where(eq(identities.uid, uid)).get();
        if (existing) {
          tx.update(identities).set({ lastSeenTime: now }).where(eq(identities.uid, uid)).run();
          return identityRecordOf({ ...existing, lastSeenTime: now });
        }
        const row: IdentityRow = newUserIdentityRow(user, now);
        tx.insert(identities).values(row).run();
        return identityRecordOf(row);
      });
    },

    async touchLastSeen(uid, now) {
      // Through group commit like every API write: it waits for the lock without blocking reads.
      return groupCommit(db, () => touchStmt.run({ uid, now }).changes > 0);
    },
  };
}
