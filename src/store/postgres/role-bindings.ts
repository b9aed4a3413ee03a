/**
 * The role-bindings repository on PostgreSQL: the RoleBindingsRepository contract
 * (src/store/role-bindings.ts), answer for answer and error for error as SQLite's
 * (src/store/sqlite/role-bindings.ts, whose header lists the checks), with writers on several
 * replicas at once. What SQLite gets from its single writer, this gets from locks, taken
 * top-down (group, then identity and role, then the binding):
 * - the group is locked FOR SHARE (iam-locks.ts): no binding at a group being deleted;
 * - the identity and the role a binding refers to are read FOR SHARE: their delete (FOR UPDATE)
 *   waits for the binding and then sees it, or the binding waits and then finds them gone
 *   (INVALID_ARGUMENT naming the field, never a foreign-key error);
 * - one binding per (group, identity, role): a transaction-level advisory lock on that triple
 *   (iam-locks.ts `lockBindingTriples`, shared with invite redemption) is taken before looking
 *   for an existing one, so two replicas creating the same binding at once give one success
 *   and one ALREADY_EXISTS naming the first, not a unique-index error;
 * - the last owner of an organization stays (iam-locks.ts `requireOwnersRemain`);
 * - update and delete lock the binding FOR UPDATE, so the guard judges the row they change;
 *   an owner binding's organization's owner bindings are locked before it (iam-locks.ts
 *   `lockOwnerBindings`), the one order in which owner bindings are locked.
 * grantsOf is a plain read per call, as on SQLite (batched with the other calls' of the same
 * event-loop turn, point-reads.ts, which reads after each call arrived): a binding deleted on
 * any replica stops granting on the next call on every replica.
 */
import { and, eq, ne, sql } from "drizzle-orm";
import { alreadyExists, type FieldViolation, invalidArgument, notFound } from "../../errors/api-error.js";
import { isAssignableRole } from "../assignable-roles.js";
import type { GrantView } from "../grant-view.js";
import { allOf, textEquals, uidpConditions, withinConditions } from "../list-predicates.js";
import { type NewRoleBinding, ROLE_BINDING_ORDERS, type RoleBindingListFilter, type RoleBindingRecord, type RoleBindingsRepository } from "../role-bindings.js";
import { isAncestorOrSelf, newUidp } from "../uidp.js";
import { countedChildren } from "./child-counts.js";
import type { PgDb } from "./connection.js";
import { keysetPages } from "./list-query.js";
import { runGuard } from "./grant-view.js";
import { createPointReads } from "./point-reads.js";
import { lockBindingTriples, lockOwnerBindings, lockParentGroup, requireOwnersRemain } from "./iam-locks.js";
import { groups, identities, roleBindings, roles } from "./schema.js";
import { type Tx, writeTransaction } from "./transaction.js";

/** The hydrated read: the binding joined with its identity, group and role. */
const READ_COLUMNS = {
  uid: roleBindings.uid,
  groupUid: roleBindings.groupUid,
  identityUid: roleBindings.identityUid,
  roleUid: roleBindings.roleUid,
  createTime: roleBindings.createTime,
  identity: {
    uid: identities.uid,
    name: identities.name,
    description: identities.description,
    subject: sql<string>`coalesce(${identities.claimSubject}, '')`,
    issuer: sql<string>`coalesce(${identities.claimIssuer}, '')`,
    email: identities.email,
  },
  group: { uid: groups.uid, name: groups.name, description: groups.description },
  role: { uid: roles.uid, name: roles.name, description: roles.description },
};

const read = (tx: Tx | PgDb) =>
  tx
    .select(READ_COLUMNS)
    .from(roleBindings)
    .innerJoin(identities, eq(identities.uid, roleBindings.identityUid))
    .innerJoin(groups, eq(groups.uid, roleBindings.groupUid))
    .innerJoin(roles, eq(roles.uid, roleBindings.roleUid));

async function readOne(tx: Tx | PgDb, uid: string): Promise<RoleBindingRecord | undefined> {
  const [row] = await read(tx).where(eq(roleBindings.uid, uid));
  return row;
}

/** The binding row, locked FOR UPDATE for the rest of `tx`, or undefined. */
async function lockBinding(tx: Tx, uid: string) {
  const [row] = await tx.select().from(roleBindings).where(eq(roleBindings.uid, uid)).for("update");
  return row;
}

export function createPostgresRoleBindingsRepository(db: PgDb): RoleBindingsRepository {
  const where = (f: RoleBindingListFilter) =>
    allOf([
      ...uidpConditions(roleBindings.uid, roleBindings.groupUid, f.uidp),
      withinConditions(roleBindings.uid, f.within),
      f.identityUid !== undefined ? textEquals(roleBindings.identityUid, f.identityUid) : undefined,
      f.groupUid !== undefined ? textEquals(roleBindings.groupUid, f.groupUid) : undefined,
      f.roleUid !== undefined ? textEquals(roleBindings.roleUid, f.roleUid) : undefined,
    ]);

  const lists = keysetPages(db, { table: roleBindings, orders: ROLE_BINDING_ORDERS, where, select: read, counted: (f) => countedChildren("role_bindings", f) });

  /**
   * The caller's bindings, read by authorization on every call of a user's token: the reads
   * of one event-loop turn go as one prepared query for all their identities (point-reads.ts).
   */
  const grantsOfMany = db
    .select({ identityUid: roleBindings.identityUid, groupUid: roleBindings.groupUid, capabilities: roles.capabilities })
    .from(roleBindings)
    .innerJoin(roles, eq(roles.uid, roleBindings.roleUid))
    .where(sql`${roleBindings.identityUid} = ANY(${sql.placeholder("identityUids")}::text[])`)
    .prepare("trellis_role_bindings_grants_of_many");
  const readGrants = createPointReads({ read: (identityUids) => grantsOfMany.execute({ identityUids }), keyOf: (r) => r.identityUid });

  return {
    async get(uid) {
      return readOne(db, uid);
    },

    async create(groupUid, bindings, now, guard) {
      return writeTransaction(db, async (tx) => {
        await lockParentGroup(tx, groupUid);
        const violations: FieldViolation[] = [];
        for (const b of bindings) violations.push(...(await referenceViolations(tx, groupUid, b)));
        if (violations.length > 0) throw invalidArgument(violations);
        if (guard) {
          await runGuard(tx, (view: GrantView) => {
            for (const b of bindings) guard(view, undefined, { groupUid, identityUid: b.identityUid, roleUid: b.roleUid });
          });
        }
        await lockBindingTriples(tx, groupUid, bindings);
        const created: RoleBindingRecord[] = [];
        for (const b of bindings) {
          await requireUnbound(tx, groupUid, b, undefined);
          const uid = newUidp(groupUid);
          await tx.insert(roleBindings).values({ uid, groupUid, identityUid: b.identityUid, roleUid: b.roleUid, createTime: now });
          created.push((await readOne(tx, uid)) as RoleBindingRecord);
        }
        return created;
      });
    },

    async update(uid, changes, fields, guard) {
      return writeTransaction(db, async (tx) => {
        // The group is locked before the binding, the order every writer here takes.
        const [peek] = await tx.select({ groupUid: roleBindings.groupUid }).from(roleBindings).where(eq(roleBindings.uid, uid));
        if (!peek) throw notFound("role binding", uid);
        await lockParentGroup(tx, peek.groupUid);
        await lockOwnerBindings(tx, [uid]);
        const existing = await lockBinding(tx, uid);
        if (!existing) throw notFound("role binding", uid);
        const next = {
          identityUid: changes.identityUid ?? existing.identityUid,
          roleUid: changes.roleUid ?? existing.roleUid,
          fields,
        };
        const violations = await referenceViolations(tx, existing.groupUid, next);
        if (violations.length > 0) throw invalidArgument(violations);
        if (next.identityUid !== existing.identityUid || next.roleUid !== existing.roleUid) {
          // Re-targeting takes the role from one identity (or the identity from one role) and
          // grants another: judged as a removal plus a grant.
          if (guard) await runGuard(tx, guard, existing, { groupUid: existing.groupUid, identityUid: next.identityUid, roleUid: next.roleUid });
          await requireOwnersRemain(tx, [uid]);
        }
        await lockBindingTriples(tx, existing.groupUid, [next]);
        await requireUnbound(tx, existing.groupUid, next, uid);
        await tx.update(roleBindings).set({ identityUid: next.identityUid, roleUid: next.roleUid }).where(eq(roleBindings.uid, uid));
        return (await readOne(tx, uid)) as RoleBindingRecord;
      });
    },

    async delete(uid, guard) {
      await writeTransaction(db, async (tx) => {
        await lockOwnerBindings(tx, [uid]);
        const existing = await lockBinding(tx, uid);
        if (!existing) return;
        if (guard) await runGuard(tx, guard, existing, undefined);
        await requireOwnersRemain(tx, [uid]);
        await tx.delete(roleBindings).where(eq(roleBindings.uid, uid));
      });
    },

    list: (filter, page) => lists.page(filter, page),
    count: lists.count,

    async grantsOf(identityUid) {
      // As groups.get: no identity uid holds a NUL, and it must not fail the shared query.
      if (identityUid.includes("\0")) return [];
      const rows = await readGrants(identityUid);
      return rows.map((r) => ({ groupUid: r.groupUid, capabilities: JSON.parse(r.capabilities) as number[] }));
    },
  };
}

/**
 * What is wrong with a binding's identity and role references at `groupUid`, in SQLite's words;
 * the rows found are locked FOR SHARE (see the header).
 */
async function referenceViolations(tx: Tx, groupUid: string, b: NewRoleBinding): Promise<FieldViolation[]> {
  const out: FieldViolation[] = [];
  const [identity] = await tx.select({ parentUid: identities.parentUid }).from(identities).where(eq(identities.uid, b.identityUid)).for("share");
  if (!identity || (identity.parentUid !== null && !isAncestorOrSelf(identity.parentUid, groupUid))) {
    out.push({
      field: b.fields.identityUid,
      description: `identity ${JSON.stringify(b.identityUid)} does not exist or is not visible from group ${JSON.stringify(groupUid)}: it must be a user identity or an identity of the group or one of its ancestors`,
    });
  }
  const [role] = await tx.select({ parentUid: roles.parentUid, builtIn: roles.builtIn }).from(roles).where(eq(roles.uid, b.roleUid)).for("share");
  if (!isAssignableRole(role, groupUid)) {
    out.push({
      field: b.fields.roleUid,
      description: `role ${JSON.stringify(b.roleUid)} does not exist or cannot be granted in group ${JSON.stringify(groupUid)}: it must be a built-in role or a custom role of the group or one of its ancestors`,
    });
  }
  return out;
}

/** ALREADY_EXISTS when the group already binds the identity to the role (other than binding `self`). */
async function requireUnbound(tx: Tx, groupUid: string, b: NewRoleBinding, self: string | undefined): Promise<void> {
  const [existing] = await tx
    .select({ uid: roleBindings.uid })
    .from(roleBindings)
    .where(
      allOf([
        and(eq(roleBindings.groupUid, groupUid), eq(roleBindings.identityUid, b.identityUid), eq(roleBindings.roleUid, b.roleUid)),
        self === undefined ? undefined : ne(roleBindings.uid, self),
      ]),
    )
    .limit(1);
  if (existing) {
    throw alreadyExists(
      "role binding",
      existing.uid,
      `${b.fields.request ? `${b.fields.request}: ` : ""}the group already binds identity ${JSON.stringify(b.identityUid)} to role ${JSON.stringify(b.roleUid)}`,
    );
  }
}
