/**
 * The roles repository on PostgreSQL: the RolesRepository contract (src/store/roles.ts), answer
 * for answer as SQLite's (src/store/sqlite/roles.ts), and the built-in roles' start-up write.
 * Row locks (iam-locks.ts), top-down:
 * - create locks the parent group FOR SHARE: no role under a group being deleted;
 * - update and delete lock the role FOR UPDATE before reading it. The role-binding writers lock
 *   the role they grant FOR SHARE, so a delete either waits for a new binding and then finds it
 *   (RESOURCE_IN_USE), or the binding waits and then finds no role (INVALID_ARGUMENT); and a
 *   capability change and a guard judging a grant of that role never interleave. Group
 *   invites, identity providers and SCIM changes lock the role they grant FOR SHARE likewise
 *   (iam-locks.ts `lockAssignableRole`).
 */
import { count, eq, or, sql } from "drizzle-orm";
import type { PgColumn, PgTable } from "drizzle-orm/pg-core";
import { failedPrecondition, notFound } from "../../errors/api-error.js";
import { BUILT_IN_ROLES, builtInRoleUid } from "../builtin-roles.js";
import type { GrantView } from "../grant-view.js";
import { allOf, keysetClauses, uidpConditions, withinConditions } from "../list-predicates.js";
import { ROLE_ORDERS, type RoleListFilter, type RoleRecord, type RolesRepository } from "../roles.js";
import { newUidp } from "../uidp.js";
import type { PgDb } from "./connection.js";
import { runGuard } from "./grant-view.js";
import { lockParentGroup } from "./iam-locks.js";
import { groupInvites, identityProviders, roleBindings, roles } from "./schema.js";

type RoleRow = typeof roles.$inferSelect;
import { type Tx, writeTransaction } from "./transaction.js";

/** What keeps a role from being deleted, checked in SQLite's order (the first found names the error). */
const USES: readonly { table: PgTable; column: PgColumn; description: string }[] = [
  { table: roleBindings, column: roleBindings.roleUid, description: "cannot delete role with role bindings" },
  { table: groupInvites, column: groupInvites.roleUid, description: "cannot delete role with group invites" },
  {
    table: identityProviders,
    column: identityProviders.defaultRole,
    description: "cannot delete role that is the default role of an identity provider",
  },
];

/** The role as a mutation sees it, locked FOR UPDATE. @throws NOT_FOUND; FAILED_PRECONDITION for a built-in role. */
async function lockCustomRole(tx: Tx, uid: string, verb: string): Promise<RoleRow> {
  const [existing] = await tx.select().from(roles).where(eq(roles.uid, uid)).for("update");
  if (!existing) throw notFound("role", uid);
  if (existing.builtIn) {
    throw failedPrecondition({ type: "BUILT_IN_ROLE", subject: uid, description: `cannot ${verb} a built-in role` });
  }
  return existing;
}

export function createPostgresRolesRepository(db: PgDb): RolesRepository {
  const where = (f: RoleListFilter) =>
    allOf([
      ...uidpConditions(roles.uid, roles.parentUid, f.uidp),
      f.name !== undefined ? eq(roles.name, f.name) : undefined,
      f.within === undefined ? undefined : or(eq(roles.builtIn, true), withinConditions(roles.uid, f.within)),
    ]);

  return {
    async get(uid) {
      const [row] = await db.select().from(roles).where(eq(roles.uid, uid));
      return row && toRecord(row);
    },

    async create(role, now, guard) {
      return writeTransaction(db, async (tx) => {
        await lockParentGroup(tx, role.parentUid);
        if (guard) await runGuard(tx, guard);
        const row: RoleRow = {
          uid: newUidp(role.parentUid),
          parentUid: role.parentUid,
          name: role.name,
          description: role.description,
          capabilities: JSON.stringify(role.capabilities),
          builtIn: false,
          createTime: now,
          updateTime: now,
        };
        await tx.insert(roles).values(row);
        return toRecord(row);
      });
    },

    async update(uid, changes, now, guard) {
      return writeTransaction(db, async (tx) => {
        const current = await lockCustomRole(tx, uid, "update");
        if (guard) await runGuard(tx, (view: GrantView) => guard(view, toRecord(current)));
        const { capabilities, ...own } = changes;
        await tx
          .update(roles)
          .set({ ...own, ...(capabilities && { capabilities: JSON.stringify(capabilities) }), updateTime: now })
          .where(eq(roles.uid, uid));
        const [row] = await tx.select().from(roles).where(eq(roles.uid, uid));
        return toRecord(row as RoleRow);
      });
    },

    async delete(uid) {
      await writeTransaction(db, async (tx) => {
        await lockCustomRole(tx, uid, "delete");
        for (const use of USES) {
          const found = await tx.select({ one: sql`1` }).from(use.table).where(eq(use.column, uid)).limit(1);
          if (found.length > 0) throw failedPrecondition({ type: "RESOURCE_IN_USE", subject: uid, description: use.description });
        }
        await tx.delete(roles).where(eq(roles.uid, uid));
      });
    },

    async list(filter, page) {
      const column = roles[ROLE_ORDERS.fields[page.order]];
      const ks = keysetClauses(column, roles.uid, page, column === roles.uid);
      const rows = await db
        .select()
        .from(roles)
        .where(allOf([where(filter), ks.where]))
        .orderBy(...ks.orderBy)
        .limit(page.limit)
        .offset(page.offset);
      return rows.map(toRecord);
    },

    async count(filter) {
      const [row] = await db.select({ n: count() }).from(roles).where(where(filter));
      return row?.n ?? 0;
    },
  };
}

/**
 * Creates or refreshes the built-in roles, as SQLite's `ensureBuiltInRoles` does (a missing one
 * inserted, a differing one rewritten with update_time = now, an up-to-date one left alone), in
 * one transaction. Several replicas start at once: each role is inserted with ON CONFLICT DO
 * NOTHING and then locked FOR UPDATE (in the definitions' fixed order), so they never collide
 * on the primary key and the second one finds the first one's rows up to date.
 */
export async function ensureBuiltInRolesPostgres(db: PgDb, now: number): Promise<void> {
  await writeTransaction(db, async (tx) => {
    for (const def of BUILT_IN_ROLES) {
      const uid = builtInRoleUid(def.name);
      const wanted = { name: def.name, description: def.description, capabilities: JSON.stringify(def.capabilities), builtIn: true };
      const inserted = await tx
        .insert(roles)
        .values({ uid, parentUid: null, ...wanted, createTime: now, updateTime: now })
        .onConflictDoNothing({ target: roles.uid })
        .returning({ uid: roles.uid });
      if (inserted.length > 0) continue;
      const [existing] = await tx.select().from(roles).where(eq(roles.uid, uid)).for("update");
      if (
        existing &&
        (existing.name !== wanted.name ||
          existing.description !== wanted.description ||
          existing.capabilities !== wanted.capabilities ||
          !existing.builtIn ||
          existing.parentUid !== null)
      ) {
        await tx
          .update(roles)
          .set({ ...wanted, parentUid: null, updateTime: now })
          .where(eq(roles.uid, uid));
      }
    }
  });
}

function toRecord(row: RoleRow): RoleRecord {
  return { ...row, capabilities: JSON.parse(row.capabilities) as number[] };
}
