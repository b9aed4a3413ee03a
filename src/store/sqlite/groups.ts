/**
 * Groups repository: every read and write of the `groups` table.
 *
 * Functions are async at the boundary (so a PostgreSQL engine can slot in) and run each
 * multi-row invariant in one BEGIN IMMEDIATE transaction. Errors are ApiErrors; no proto
 * types enter here.
 */
import { and, asc, eq, getTableColumns, isNull, or, sql } from "drizzle-orm";
import { failedPrecondition, notFound, permissionDenied } from "../../errors/api-error.js";
import { builtInRoleUid } from "../builtin-roles.js";
import type { Db } from "./db.js";
import { grantView } from "./grant-view.js";
import { groupCommit } from "./group-commit.js";
import { allOf, type Bind, preparedLists, preparedSelect, uidpConditions, withinConditions } from "./list-query.js";
import type { SQLiteColumn, SQLiteTable } from "drizzle-orm/sqlite-core";
import { accountAssociations, advisories, groupInvites, groups, identities, identityProviders, repos, roleBindings, roles } from "./schema.js";
import { newUidp, rootOf } from "../uidp.js";
import { GROUP_CHILD_KINDS, GROUP_ORDERS, type GroupRecord, type GroupListFilter, type GroupsRepository } from "../groups.js";

/** GROUP_CHILD_KINDS over this engine's tables (what blocks a delete, in the order checked). */
const CHILD_TABLES = { groups, repos, advisories, identities, roles, identityProviders, groupInvites, accountAssociations };
const CHILD_KINDS: readonly { kind: string; table: SQLiteTable; column: SQLiteColumn }[] = GROUP_CHILD_KINDS.map((c) => ({
  kind: c.kind,
  table: CHILD_TABLES[c.table],
  column: (CHILD_TABLES[c.table] as unknown as Record<string, SQLiteColumn>)[c.column] as SQLiteColumn,
}));

function hasChild(db: Db, child: (typeof CHILD_KINDS)[number], uid: string): boolean {
  return db.select({ one: sql`1` }).from(child.table).where(eq(child.column, uid)).limit(1).all().length > 0;
}

export function createGroupsRepository(db: Db): GroupsRepository {
  const columns = getTableColumns(groups);
  const getStmt = preparedSelect<GroupRecord>(
    db,
    columns,
    db
      .select(columns)
      .from(groups)
      .where(eq(groups.uid, sql.placeholder("uid")))
      .toSQL(),
  );

  const where = (f: GroupListFilter, bind?: Bind) =>
    allOf([
      ...uidpConditions(groups.uid, groups.parentUid, f.uidp, bind),
      f.name !== undefined ? eq(groups.name, (bind ? bind(f.name) : f.name) as string) : undefined,
      withinConditions(groups.uid, f.within, bind),
    ]);
  // list and count run statements prepared once per query shape (list-query.ts preparedLists).
  const lists = preparedLists(db, groups, groups.uid, "groups");

  // CreateGroup's reads and insert, prepared once (drizzle building and SQLite preparing them
  // per call were a third of a create's CPU, docs/performance.md). They run on `db`, the
  // connection groupCommit's transaction is open on.
  const kindStmt = preparedSelect<{ kind: number }>(
    db,
    { kind: groups.kind },
    db
      .select({ kind: groups.kind })
      .from(groups)
      .where(eq(groups.uid, sql.placeholder("uid")))
      .toSQL(),
  );
  const insertStmt = db
    .insert(groups)
    .values({
      uid: sql.placeholder("uid"),
      parentUid: sql.placeholder("parentUid"),
      name: sql.placeholder("name"),
      description: sql.placeholder("description"),
      verified: sql.placeholder("verified"),
      kind: sql.placeholder("kind"),
      createTime: sql.placeholder("createTime"),
      updateTime: sql.placeholder("updateTime"),
    })
    .prepare();

  const verifiedRootStmt = db
    .select()
    .from(groups)
    .where(and(eq(groups.name, sql.placeholder("name")), isNull(groups.parentUid), eq(groups.verified, true)))
    .orderBy(asc(groups.createTime), asc(groups.uid))
    .limit(1)
    .prepare();

  return {
    async get(uid) {
      return getStmt.get({ uid });
    },

    async findVerifiedRoot(name) {
      return verifiedRootStmt.get({ name });
    },

    async create(group, now, ownerIdentityUid) {
      return groupCommit(db, (tx) => {
        if (ownerIdentityUid !== undefined) {
          // Only a user identity (a root: a person) founds an organization; an assumable
          // identity belongs to its own group and may not be bound outside its tree.
          const owner = tx.select({ parentUid: identities.parentUid }).from(identities).where(eq(identities.uid, ownerIdentityUid)).get();
          if (!owner || owner.parentUid !== null) {
            throw permissionDenied("only a registered user identity may create an organization");
          }
        }
        let kind = group.kind;
        if (group.parentUid !== null) {
          const parent = kindStmt.get({ uid: group.parentUid });
          if (!parent) throw notFound("group", group.parentUid);
          const rootUid = rootOf(group.parentUid);
          kind = (rootUid === group.parentUid ? parent : kindStmt.get({ uid: rootUid }))?.kind ?? 0;
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
        insertStmt.run(row);
        if (ownerIdentityUid !== undefined) {
          tx.insert(roleBindings)
            .values({ uid: newUidp(row.uid), groupUid: row.uid, identityUid: ownerIdentityUid, roleUid: builtInRoleUid("owner"), createTime: now })
            .run();
        }
        return row;
      });
    },

    async update(uid, changes, now, guard) {
      return groupCommit(db, (tx) => {
        const existing = tx.select().from(groups).where(eq(groups.uid, uid)).get();
        if (!existing) throw notFound("group", uid);
        guard?.(existing);
        const { kind, ...own } = changes;
        tx.update(groups)
          .set({ ...own, updateTime: now })
          .where(eq(groups.uid, uid))
          .run();
        if (kind !== undefined && kind !== existing.kind) {
          // kind belongs to the organization: its folders report the root's value.
          tx.update(groups)
            .set({ kind })
            .where(or(eq(groups.uid, uid), allOf(uidpConditions(groups.uid, groups.parentUid, { descendantsOf: uid }))))
            .run();
        }
        return tx.select().from(groups).where(eq(groups.uid, uid)).get() as GroupRecord;
      });
    },

    async delete(uid, guard) {
      await groupCommit(db, (tx) => {
        const existing = tx.select({ uid: groups.uid }).from(groups).where(eq(groups.uid, uid)).get();
        if (!existing) throw notFound("group", uid);
        for (const child of CHILD_KINDS) {
          if (hasChild(tx, child, uid)) {
            throw failedPrecondition(
              { type: "RESOURCE_NOT_EMPTY", subject: uid, description: `cannot delete group with child ${child.kind}` },
              { metadata: { child_kind: child.kind } },
            );
          }
        }
        if (guard) {
          const bound = tx.selectDistinct({ roleUid: roleBindings.roleUid }).from(roleBindings).where(eq(roleBindings.groupUid, uid)).all();
          guard(
            grantView(tx),
            bound.map((b) => b.roleUid),
          );
        }
        tx.delete(roleBindings).where(eq(roleBindings.groupUid, uid)).run();
        tx.delete(groups).where(eq(groups.uid, uid)).run();
      });
    },

    async list(filter, page) {
      return lists.page((bind) => where(filter, bind), groups[GROUP_ORDERS.fields[page.order]], page) as GroupRecord[];
    },

    async count(filter) {
      return lists.count((bind) => where(filter, bind));
    },

    async listAll(filter, max) {
      return db
        .select()
        .from(groups)
        .where(where(filter))
        .orderBy(groups.uid)
        .limit(max + 1)
        .all();
    },
  };
}
