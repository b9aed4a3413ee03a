/**
 * Roles repository: every read and write of the `roles` table, and the built-in roles.
 *
 * Built-in roles are roots (no parent, `built_in` set) with deterministic uids, written by
 * `ensureBuiltInRoles` at start-up and never changed through the API. Custom roles live under
 * a group (uid = group uid + "/" + 16 hex). Capabilities are a JSON array of Capability
 * numbers. Every check-then-write runs in one BEGIN IMMEDIATE transaction; errors are
 * ApiErrors; no proto types enter here.
 */
import { eq, or, sql } from "drizzle-orm";
import type { SQLiteColumn, SQLiteTable } from "drizzle-orm/sqlite-core";
import { failedPrecondition, notFound } from "../../errors/api-error.js";
import { BUILT_IN_ROLES, builtInRoleUid } from "../builtin-roles.js";
import { type Db, writeTransaction } from "./db.js";
import { grantView } from "./grant-view.js";
import { groupCommit } from "./group-commit.js";
import { requireGroup } from "./references.js";
import { allOf, type Bind, preparedLists, uidpConditions, withinConditions } from "./list-query.js";
import { groupInvites, identityProviders, type RoleRow, roleBindings, roles } from "./schema.js";
import { newUidp } from "../uidp.js";
import { ROLE_ORDERS, type RoleRecord, type RoleListFilter, type RolesRepository } from "../roles.js";

/**
 * What keeps a role from being deleted, checked in this order. Bindings and invites hold a
 * foreign key on the role; an identity provider's default role does not, but deleting it
 * would leave the provider granting a role that no longer exists.
 */
const USES: readonly { table: SQLiteTable; column: SQLiteColumn; description: string }[] = [
  { table: roleBindings, column: roleBindings.roleUid, description: "cannot delete role with role bindings" },
  { table: groupInvites, column: groupInvites.roleUid, description: "cannot delete role with group invites" },
  {
    table: identityProviders,
    column: identityProviders.defaultRole,
    description: "cannot delete role that is the default role of an identity provider",
  },
];

export function createRolesRepository(db: Db): RolesRepository {
  const getStmt = db
    .select()
    .from(roles)
    .where(eq(roles.uid, sql.placeholder("uid")))
    .prepare();

  const where = (f: RoleListFilter, bind: Bind) =>
    allOf([
      ...uidpConditions(roles.uid, roles.parentUid, f.uidp, bind),
      f.name !== undefined ? eq(roles.name, bind(f.name) as string) : undefined,
      f.within === undefined ? undefined : or(eq(roles.builtIn, true), withinConditions(roles.uid, f.within, bind)),
    ]);
  // list and count run statements prepared once per query shape (list-query.ts preparedLists).
  const lists = preparedLists(db, roles, roles.uid, "roles");

  /** The role as a mutation sees it. @throws NOT_FOUND; FAILED_PRECONDITION for a built-in role. */
  const requireCustomRole = (tx: Db, uid: string, verb: string): RoleRow => {
    const existing = tx.select().from(roles).where(eq(roles.uid, uid)).get();
    if (!existing) throw notFound("role", uid);
    if (existing.builtIn) {
      throw failedPrecondition({ type: "BUILT_IN_ROLE", subject: uid, description: `cannot ${verb} a built-in role` });
    }
    return existing;
  };

  return {
    async get(uid) {
      const row = getStmt.get({ uid });
      return row && toRecord(row);
    },

    async create(role, now, guard) {
      return groupCommit(db, (tx) => {
        requireGroup(tx, role.parentUid);
        guard?.(grantView(tx));
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
        tx.insert(roles).values(row).run();
        return toRecord(row);
      });
    },

    async update(uid, changes, now, guard) {
      return groupCommit(db, (tx) => {
        const current = requireCustomRole(tx, uid, "update");
        guard?.(grantView(tx), toRecord(current));
        const { capabilities, ...own } = changes;
        tx.update(roles)
          .set({ ...own, ...(capabilities && { capabilities: JSON.stringify(capabilities) }), updateTime: now })
          .where(eq(roles.uid, uid))
          .run();
        return toRecord(tx.select().from(roles).where(eq(roles.uid, uid)).get() as RoleRow);
      });
    },

    async delete(uid) {
      await groupCommit(db, (tx) => {
        requireCustomRole(tx, uid, "delete");
        for (const use of USES) {
          if (tx.select({ one: sql`1` }).from(use.table).where(eq(use.column, uid)).limit(1).get()) {
            throw failedPrecondition({ type: "RESOURCE_IN_USE", subject: uid, description: use.description });
          }
        }
        tx.delete(roles).where(eq(roles.uid, uid)).run();
      });
    },

    async list(filter, page) {
      const rows = lists.page((bind) => where(filter, bind), roles[ROLE_ORDERS.fields[page.order]], page) as RoleRow[];
      return rows.map(toRecord);
    },

    async count(filter) {
      return lists.count((bind) => where(filter, bind));
    },
  };
}

/**
 * Creates or refreshes the built-in roles (root-level, deterministic uids, see
 * builtin-roles.ts) so they exist in every database from the first start. In one transaction:
 * a missing role is inserted; one whose name, description, capabilities or built-in mark
 * differ from the definition is rewritten (update_time = now); an up-to-date one is left
 * alone, so running it again changes nothing. A built-in role that a later release drops from
 * the list is left in place (bindings may still use it).
 */
export async function ensureBuiltInRoles(db: Db, now: number): Promise<void> {
  writeTransaction(db, (tx) => {
    for (const def of BUILT_IN_ROLES) {
      const uid = builtInRoleUid(def.name);
      const wanted = { name: def.name, description: def.description, capabilities: JSON.stringify(def.capabilities), builtIn: true };
      const existing = tx.select().from(roles).where(eq(roles.uid, uid)).get();
      if (!existing) {
        tx.insert(roles)
          .values({ uid, parentUid: null, ...wanted, createTime: now, updateTime: now })
          .run();
      } else if (
        existing.name !== wanted.name ||
        existing.description !== wanted.description ||
        existing.capabilities !== wanted.capabilities ||
        !existing.builtIn ||
        existing.parentUid !== null
      ) {
        tx.update(roles)
          .set({ ...wanted, parentUid: null, updateTime: now })
          .where(eq(roles.uid, uid))
          .run();
      }
    }
  });
}

function toRecord(row: RoleRow): RoleRecord {
  return { ...row, capabilities: JSON.parse(row.capabilities) as number[] };
}
