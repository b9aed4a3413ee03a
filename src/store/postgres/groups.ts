/**
 * The groups repository on PostgreSQL: the GroupsRepository contract (src/store/groups.ts),
 * answer for answer, with writers on several replicas at once.
 *
 * SQLite gets its invariants from BEGIN IMMEDIATE: one writer at a time, so a check and the
 * write after it cannot be overtaken. Here writers run side by side (READ COMMITTED), and each
 * invariant locks the rows it depends on, always top-down (root, then parent, then the group),
 * so two writers never wait for each other in opposite orders:
 * - no child without its parent: create locks the parent row (and the root, whose kind the
 *   child inherits) FOR SHARE before inserting. Creates under one parent share that lock and
 *   run in parallel; a delete of the parent needs it exclusively, so it waits for them (and
 *   then finds the children), or they wait for it (and then find no parent: NOT_FOUND, never
 *   a foreign-key failure leaking out).
 * - delete only if empty: delete locks the group FOR UPDATE, and only then looks for
 *   children: every create under it has either committed (and is seen, because each statement
 *   of a READ COMMITTED transaction reads what was committed before it) or waits.
 * - kind follows the root: update locks the group FOR UPDATE before re-labelling its
 *   descendants, so a create under it waits and then reads the new kind.
 * Row locks rather than SERIALIZABLE: they make the writers that touch one group wait for each
 * other and leave all others alone, where SERIALIZABLE would abort and retry unrelated writers
 * whose reads merely overlapped. Deadlocks cannot arise from these orders, but any abort
 * PostgreSQL reports as retryable is run again (transaction.ts).
 *
 * Group names are not unique under a parent (on SQLite neither): only repos have that rule.
 *
 * `get` locks nothing and runs outside any transaction: the gets of one event-loop turn share
 * one query (point-reads.ts). The writers here read their rows through their transaction
 * (lockGroup), never through `get`.
 */
import { and, asc, count, eq, isNull, or, type SQL, sql } from "drizzle-orm";
import type { PgColumn, PgTable } from "drizzle-orm/pg-core";
import { failedPrecondition, notFound, permissionDenied } from "../../errors/api-error.js";
import { builtInRoleUid } from "../builtin-roles.js";
import { GROUP_CHILD_KINDS, type GroupListFilter, type GroupOrder, type GroupRecord, type GroupsRepository } from "../groups.js";
import { allOf, keysetClauses, textEquals, uidpConditions, withinConditions } from "../list-predicates.js";
import { newUidp, rootOf } from "../uidp.js";
import { childCountReader, countedChildren } from "./child-counts.js";
import type { PgDb } from "./connection.js";
import { runGuard } from "./grant-view.js";
import { createPointReads } from "./point-reads.js";
import { accountAssociations, advisories, groupInvites, groups, identities, identityProviders, repos, roleBindings, roles } from "./schema.js";
import { type Tx, writeTransaction } from "./transaction.js";

const ORDER_COLUMNS: Record<GroupOrder, PgColumn> = {
  uid: groups.uid,
  name: groups.name,
  create_time: groups.createTime,
  update_time: groups.updateTime,
};

/** GROUP_CHILD_KINDS over this engine's tables (what blocks a delete, in the order checked). */
const CHILD_TABLES = { groups, repos, advisories, identities, roles, identityProviders, groupInvites, accountAssociations };
const CHILD_KINDS: readonly { kind: string; table: PgTable; column: PgColumn }[] = GROUP_CHILD_KINDS.map((c) => ({
  kind: c.kind,
  table: CHILD_TABLES[c.table],
  column: (CHILD_TABLES[c.table] as unknown as Record<string, PgColumn>)[c.column] as PgColumn,
}));

/** The group row, locked for the rest of `tx` (`share`: against changes; else exclusively). */
async function lockGroup(tx: Tx, uid: string, mode: "share" | "update"): Promise<GroupRecord | undefined> {
  const [row] = await tx
    .select()
    .from(groups)
    .where(eq(groups.uid, uid))
    .for(mode === "share" ? "share" : "update");
  return row;
}

export function createPostgresGroupsRepository(db: PgDb): GroupsRepository {
  /** The filter's WHERE, or null when it can match nothing (an empty `within`). */
  const where = (f: GroupListFilter): SQL | undefined | null => {
    // An empty `within` matches nothing: no query at all.
    if (f.within !== undefined && f.within.length === 0) return null;
    return allOf([
      ...uidpConditions(groups.uid, groups.parentUid, f.uidp),
      f.name !== undefined ? textEquals(groups.name, f.name) : undefined,
      withinConditions(groups.uid, f.within),
    ]);
  };

  /**
   * GetGroup's read, the hottest query: the reads of one event-loop turn go as one query for
   * all their uids (point-reads.ts), built once and a named statement, so neither drizzle
   * (building the SQL) nor PostgreSQL (parsing and planning it, once per connection) repeats
   * that work per call (docs/performance.md, "On PostgreSQL").
   */
  const getManyByUid = db
    .select()
    .from(groups)
    .where(sql`${groups.uid} = ANY(${sql.placeholder("uids")}::text[])`)
    .prepare("trellis_groups_get_many");
  const readGroup = createPointReads<GroupRecord>({ read: (uids) => getManyByUid.execute({ uids }), keyOf: (g) => g.uid });

  return {
    async get(uid) {
      // PostgreSQL refuses a NUL in a text parameter, and no uid has one (SQLite finds no row
      // either): kept out of the shared query, where it would fail the other calls' reads.
      if (uid.includes("\0")) return undefined;
      const [row] = await readGroup(uid);
      return row;
    },

    async findVerifiedRoot(name) {
      const [row] = await db
        .select()
        .from(groups)
        .where(and(textEquals(groups.name, name), isNull(groups.parentUid), eq(groups.verified, true)))
        .orderBy(asc(groups.createTime), asc(groups.uid))
        .limit(1);
      return row;
    },

    async create(group, now, ownerIdentityUid) {
      return writeTransaction(db, async (tx) => {
        if (ownerIdentityUid !== undefined) {
          // Only a user identity (a root) founds an organization; locked so that it cannot be
          // deleted between this check and the owner binding below.
          const [owner] = await tx.select({ parentUid: identities.parentUid }).from(identities).where(eq(identities.uid, ownerIdentityUid)).for("share");
          if (!owner || owner.parentUid !== null) {
            throw permissionDenied("only a registered user identity may create an organization");
          }
        }
        let kind = group.kind;
        if (group.parentUid !== null) {
          // Root first, then the parent: the order every writer here takes locks in.
          const rootUid = rootOf(group.parentUid);
          const root = await lockGroup(tx, rootUid, "share");
          const parent = rootUid === group.parentUid ? root : root && (await lockGroup(tx, group.parentUid, "share"));
          if (!parent) throw notFound("group", group.parentUid);
          kind = root?.kind ?? 0;
        }
        const row: GroupRecord = {
          uid: newUidp(group.parentUid),
          parentUid: group.parentUid,
          name: group.name,
          description: group.description,
          verified: group.verified,
          kind,
          createTime: now,
          updateTime: now,
        };
        await tx.insert(groups).values(row);
        if (ownerIdentityUid !== undefined) {
          await tx
            .insert(roleBindings)
            .values({ uid: newUidp(row.uid), groupUid: row.uid, identityUid: ownerIdentityUid, roleUid: builtInRoleUid("owner"), createTime: now });
        }
        return row;
      });
    },

    async update(uid, changes, now, guard) {
      return writeTransaction(db, async (tx) => {
        const existing = await lockGroup(tx, uid, "update");
        if (!existing) throw notFound("group", uid);
        guard?.(existing);
        const { kind, ...own } = changes;
        await tx
          .update(groups)
          .set({ ...own, updateTime: now })
          .where(eq(groups.uid, uid));
        if (kind !== undefined && kind !== existing.kind) {
          // A new statement, so it sees every child committed before the lock was taken.
          await tx
            .update(groups)
            .set({ kind })
            .where(or(eq(groups.uid, uid), allOf(uidpConditions(groups.uid, groups.parentUid, { descendantsOf: uid }))));
        }
        const [row] = await tx.select().from(groups).where(eq(groups.uid, uid));
        return row as GroupRecord;
      });
    },

    async delete(uid, guard) {
      await writeTransaction(db, async (tx) => {
        const existing = await lockGroup(tx, uid, "update");
        if (!existing) throw notFound("group", uid);
        for (const child of CHILD_KINDS) {
          const found = await tx.select({ one: child.column }).from(child.table).where(eq(child.column, uid)).limit(1);
          if (found.length > 0) {
            throw failedPrecondition(
              { type: "RESOURCE_NOT_EMPTY", subject: uid, description: `cannot delete group with child ${child.kind}` },
              { metadata: { child_kind: child.kind } },
            );
          }
        }
        if (guard) {
          const bound = await tx.selectDistinct({ roleUid: roleBindings.roleUid }).from(roleBindings).where(eq(roleBindings.groupUid, uid));
          await runGuard(
            tx,
            guard,
            bound.map((b) => b.roleUid),
          );
        }
        await tx.delete(roleBindings).where(eq(roleBindings.groupUid, uid));
        await tx.delete(groups).where(eq(groups.uid, uid));
      });
    },

    async list(filter, page) {
      const condition = where(filter);
      if (condition === null) return [];
      const column = ORDER_COLUMNS[page.order];
      const ks = keysetClauses(column, groups.uid, page, column === groups.uid);
      return db
        .select()
        .from(groups)
        .where(allOf([condition, ks.where]))
        .orderBy(...ks.orderBy)
        .limit(page.limit)
        .offset(page.offset);
    },

    async count(filter) {
      const condition = where(filter);
      if (condition === null) return 0;
      const counted = countedChildren("groups", filter);
      if (counted !== undefined) return childCountReader(db)(counted);
      const [row] = await db.select({ n: count() }).from(groups).where(condition);
      return row?.n ?? 0;
    },

    async listAll(filter, max) {
      const condition = where(filter);
      if (condition === null) return [];
      return db
        .select()
        .from(groups)
        .where(condition)
        .orderBy(asc(groups.uid))
        .limit(max + 1);
    },
  };
}
