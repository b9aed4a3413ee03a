/**
 * The identities repository on PostgreSQL: the IdentitiesRepository contract
 * (src/store/identities.ts), answer for answer as SQLite's (src/store/sqlite/identities.ts),
 * with writers on several replicas at once. Row locks (iam-locks.ts), top-down:
 * - create locks the parent group FOR SHARE: no identity under a group being deleted;
 * - update, updateMetadata and delete lock the identity FOR UPDATE before reading it, so a
 *   change is planned (and its guard judges) on the row it will overwrite; the role-binding
 *   writers lock the identity FOR SHARE, so a binding is never created for an identity whose
 *   delete is under way, and delete's removal of the bindings sees every binding committed
 *   before it got the lock;
 * - findOrCreateUser inserts with ON CONFLICT DO NOTHING: two replicas signing the same person
 *   in for the first time both end with the one identity, never a unique-violation error.
 */
import { count, eq } from "drizzle-orm";
import { notFound } from "../../errors/api-error.js";
import type { GrantView } from "../grant-view.js";
import {
  IDENTITY_ORDERS,
  type IdentitiesRepository,
  type IdentityChanges,
  type IdentityListFilter,
  RELATIONSHIP_TYPES,
  userIdentityUid,
} from "../identities.js";
import { allOf, keysetClauses, textEquals, uidpConditions, withinConditions } from "../list-predicates.js";
import { identityRecordOf, newUserIdentityRow, parseIdentityMetadata, relationshipColumns } from "../identity-rows.js";
import { newUidp } from "../uidp.js";
import { childCountReader, countedChildren } from "./child-counts.js";
import type { PgDb } from "./connection.js";
import { runGuard } from "./grant-view.js";
import { lockParentGroup, requireOwnersRemain } from "./iam-locks.js";
import { identities, roleBindings } from "./schema.js";

type IdentityRow = typeof identities.$inferSelect;
import { type Tx, writeTransaction } from "./transaction.js";

/** The identity row, locked FOR UPDATE for the rest of `tx`. @throws NOT_FOUND. */
async function lockIdentity(tx: Tx, uid: string): Promise<IdentityRow> {
  const [row] = await tx.select().from(identities).where(eq(identities.uid, uid)).for("update");
  if (!row) throw notFound("identity", uid);
  return row;
}

export function createPostgresIdentitiesRepository(db: PgDb): IdentitiesRepository {
  const where = (f: IdentityListFilter) =>
    allOf([
      ...uidpConditions(identities.uid, identities.parentUid, f.uidp),
      f.name !== undefined ? textEquals(identities.name, f.name) : undefined,
      f.kind !== undefined ? eq(identities.relationshipType, RELATIONSHIP_TYPES[f.kind]) : undefined,
      withinConditions(identities.uid, f.within),
    ]);

  const readChildCount = childCountReader(db);

  return {
    async get(uid) {
      const [row] = await db.select().from(identities).where(eq(identities.uid, uid));
      return row && identityRecordOf(row);
    },

    async create(identity, now) {
      return writeTransaction(db, async (tx) => {
        await lockParentGroup(tx, identity.parentUid);
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
        await tx.insert(identities).values(row);
        return identityRecordOf(row);
      });
    },

    async update(uid, plan, now) {
      return writeTransaction(db, async (tx) => {
        const existing = identityRecordOf(await lockIdentity(tx, uid));
        // The plan may read the grant view (its guard): run it until it has read what it needs.
        let changes: IdentityChanges = {};
        await runGuard(tx, (view: GrantView) => {
          changes = plan(existing, view);
        });
        const { relationship, ...own } = changes;
        await tx
          .update(identities)
          .set({ ...own, ...(relationship && relationshipColumns(relationship)), updateTime: now })
          .where(eq(identities.uid, uid));
        const [row] = await tx.select().from(identities).where(eq(identities.uid, uid));
        return identityRecordOf(row as IdentityRow);
      });
    },

    async delete(uid, guard) {
      await writeTransaction(db, async (tx) => {
        const existing = identityRecordOf(await lockIdentity(tx, uid));
        if (guard) await runGuard(tx, guard, existing);
        const bindings = await tx.select({ uid: roleBindings.uid }).from(roleBindings).where(eq(roleBindings.identityUid, uid));
        await requireOwnersRemain(
          tx,
          bindings.map((b) => b.uid),
        );
        await tx.delete(roleBindings).where(eq(roleBindings.identityUid, uid));
        await tx.delete(identities).where(eq(identities.uid, uid));
      });
    },

    async list(filter, page) {
      const column = identities[IDENTITY_ORDERS.fields[page.order]];
      const ks = keysetClauses(column, identities.uid, page, column === identities.uid);
      const rows = await db
        .select()
        .from(identities)
        .where(allOf([where(filter), ks.where]))
        .orderBy(...ks.orderBy)
        .limit(page.limit)
        .offset(page.offset);
      return rows.map(identityRecordOf);
    },

    async count(filter) {
      const counted = countedChildren("identities", filter);
      if (counted !== undefined) return readChildCount(counted);
      const [row] = await db.select({ n: count() }).from(identities).where(where(filter));
      return row?.n ?? 0;
    },

    async updateMetadata(uid, changes, now) {
      return writeTransaction(db, async (tx) => {
        const existing = await lockIdentity(tx, uid);
        const metadata = { ...parseIdentityMetadata(existing.metadata), ...changes.metadata };
        const set = { metadata: JSON.stringify(metadata), ...(changes.company !== undefined && { company: changes.company }), updateTime: now };
        await tx.update(identities).set(set).where(eq(identities.uid, uid));
        return identityRecordOf({ ...existing, ...set });
      });
    },

    async findOrCreateUser(user, now) {
      return writeTransaction(db, async (tx) => {
        const uid = userIdentityUid(user.issuer, user.subject);
        const row: IdentityRow = newUserIdentityRow(user, now);
        const inserted = await tx.insert(identities).values(row).onConflictDoNothing({ target: identities.uid }).returning({ uid: identities.uid });
        if (inserted.length > 0) return identityRecordOf(row);
        // Known already (or created by another replica a moment ago): only the last sighting moves.
        const [existing] = await tx.update(identities).set({ lastSeenTime: now }).where(eq(identities.uid, uid)).returning();
        if (!existing) throw notFound("identity", uid); // deleted between the two statements
        return identityRecordOf(existing);
      });
    },

    async touchLastSeen(uid, now) {
      const touched = await writeTransaction(db, (tx) =>
        tx.update(identities).set({ lastSeenTime: now }).where(eq(identities.uid, uid)).returning({ uid: identities.uid }),
      );
      return touched.length > 0;
    },
  };
}
