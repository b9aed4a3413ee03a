/**
 * RoleBindings repository: every read and write of the `role_bindings` table.
 *
 * A binding grants a role to an identity at a group (uid = group uid + "/" + 16 hex). Every
 * read joins the identity, the group and the role, so responses are hydrated from current
 * data (a renamed role shows its new name). Creating or changing a binding checks, in the
 * same BEGIN IMMEDIATE transaction as the write:
 * - the group exists (NOT_FOUND);
 * - the identity exists and is visible from the group: a user identity (a root), or one whose
 *   group is the binding's group or an ancestor of it;
 * - the role exists and may be granted in the group: a built-in role, or a custom role whose
 *   group is the binding's group or an ancestor of it;
 * - the caller's anti-escalation guard (src/auth/grant-guard.ts, given by the service) passes;
 * - re-targeting or deleting never removes an organization's last owner binding
 *   (grant-view.ts `requireOwnersRemain`, FAILED_PRECONDITION LAST_OWNER);
 * - no binding of the same identity and role at the group exists (ALREADY_EXISTS).
 * A bad reference is INVALID_ARGUMENT naming the caller's field; a missing and a foreign
 * (cross-organization) reference get the same answer, so the error is no existence oracle.
 * Errors are ApiErrors; no proto types enter here.
 */
import { and, eq, ne, sql } from "drizzle-orm";
import { alreadyExists, type FieldViolation, invalidArgument, notFound } from "../../errors/api-error.js";
import type { Db } from "./db.js";
import { grantView, requireOwnersRemain } from "./grant-view.js";
import { groupCommit } from "./group-commit.js";
import { requireGroup } from "./references.js";
import { allOf, type Bind, type JoinedSelect, preparedLists, uidpConditions, withinConditions } from "./list-query.js";
import { groups, identities, roleBindings, roles } from "./schema.js";
import { isAncestorOrSelf, newUidp } from "../uidp.js";
import { ROLE_BINDING_ORDERS, type RoleBindingRecord, type NewRoleBinding, type RoleBindingListFilter, type RoleBindingsRepository } from "../role-bindings.js";

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

export function createRoleBindingsRepository(db: Db): RoleBindingsRepository {
  const read = (tx: Db) =>
    tx
      .select(READ_COLUMNS)
      .from(roleBindings)
      .innerJoin(identities, eq(identities.uid, roleBindings.identityUid))
      .innerJoin(groups, eq(groups.uid, roleBindings.groupUid))
      .innerJoin(roles, eq(roles.uid, roleBindings.roleUid));
  const getStmt = read(db)
    .where(eq(roleBindings.uid, sql.placeholder("uid")))
    .prepare();
  const readOne = (tx: Db, uid: string) => read(tx).where(eq(roleBindings.uid, uid)).get() as RoleBindingRecord;

  const grantsStmt = db
    .select({ groupUid: roleBindings.groupUid, capabilities: roles.capabilities })
    .from(roleBindings)
    .innerJoin(roles, eq(roles.uid, roleBindings.roleUid))
    .where(eq(roleBindings.identityUid, sql.placeholder("identityUid")))
    .prepare();

  const where = (f: RoleBindingListFilter, bind: Bind) =>
    allOf([
      ...uidpConditions(roleBindings.uid, roleBindings.groupUid, f.uidp, bind),
      withinConditions(roleBindings.uid, f.within, bind),
      f.identityUid !== undefined ? eq(roleBindings.identityUid, bind(f.identityUid) as string) : undefined,
      f.groupUid !== undefined ? eq(roleBindings.groupUid, bind(f.groupUid) as string) : undefined,
      f.roleUid !== undefined ? eq(roleBindings.roleUid, bind(f.roleUid) as string) : undefined,
    ]);
  // list and count run statements prepared once per query shape (list-query.ts preparedLists).
  const lists = preparedLists(db, roleBindings, roleBindings.uid, "role_bindings");

  return {
    async get(uid) {
      return getStmt.get({ uid });
    },

    async create(groupUid, bindings, now, guard) {
      return groupCommit(db, (tx) => {
        requireGroup(tx, groupUid);
        const violations = bindings.flatMap((b) => referenceViolations(tx, groupUid, b));
        if (violations.length > 0) throw invalidArgument(violations);
        if (guard) {
          const view = grantView(tx);
          for (const b of bindings) guard(view, undefined, { groupUid, identityUid: b.identityUid, roleUid: b.roleUid });
        }
        return bindings.map((b) => {
          requireUnbound(tx, groupUid, b, undefined);
          const uid = newUidp(groupUid);
          tx.insert(roleBindings).values({ uid, groupUid, identityUid: b.identityUid, roleUid: b.roleUid, createTime: now }).run();
          return readOne(tx, uid);
        });
      });
    },

    async update(uid, changes, fields, guard) {
      return groupCommit(db, (tx) => {
        const existing = tx.select().from(roleBindings).where(eq(roleBindings.uid, uid)).get();
        if (!existing) throw notFound("role binding", uid);
        const next = {
          identityUid: changes.identityUid ?? existing.identityUid,
          roleUid: changes.roleUid ?? existing.roleUid,
          fields,
        };
        const violations = referenceViolations(tx, existing.groupUid, next);
        if (violations.length > 0) throw invalidArgument(violations);
        if (next.identityUid !== existing.identityUid || next.roleUid !== existing.roleUid) {
          // Re-targeting takes the role from one identity (or the identity from one role) and
          // grants another: judged as a removal plus a grant.
          guard?.(grantView(tx), existing, { groupUid: existing.groupUid, identityUid: next.identityUid, roleUid: next.roleUid });
          requireOwnersRemain(tx, [uid]);
        }
        requireUnbound(tx, existing.groupUid, next, uid);
        tx.update(roleBindings).set({ identityUid: next.identityUid, roleUid: next.roleUid }).where(eq(roleBindings.uid, uid)).run();
        return readOne(tx, uid);
      });
    },

    async delete(uid, guard) {
      await groupCommit(db, (tx) => {
        const existing = tx.select().from(roleBindings).where(eq(roleBindings.uid, uid)).get();
        if (!existing) return;
        guard?.(grantView(tx), existing, undefined);
        requireOwnersRemain(tx, [uid]);
        tx.delete(roleBindings).where(eq(roleBindings.uid, uid)).run();
      });
    },

    async list(filter, page) {
      const col = roleBindings[ROLE_BINDING_ORDERS.fields[page.order]];
      return lists.joinedPage(
        (bind) => where(filter, bind),
        col,
        page,
        () => read(db) as unknown as JoinedSelect,
      ) as RoleBindingRecord[];
    },

    async count(filter) {
      return lists.count((bind) => where(filter, bind));
    },

    async grantsOf(identityUid) {
      return grantsStmt.all({ identityUid }).map((r) => ({ groupUid: r.groupUid, capabilities: JSON.parse(r.capabilities) as number[] }));
    },
  };
}

/** What is wrong with a binding's identity and role references at `groupUid` (module comment). */
function referenceViolations(tx: Db, groupUid: string, b: NewRoleBinding): FieldViolation[] {
  const out: FieldViolation[] = [];
  const identity = tx.select({ parentUid: identities.parentUid }).from(identities).where(eq(identities.uid, b.identityUid)).get();
  if (!identity || (identity.parentUid !== null && !isAncestorOrSelf(identity.parentUid, groupUid))) {
    out.push({
      field: b.fields.identityUid,
      description: `identity ${JSON.stringify(b.identityUid)} does not exist or is not visible from group ${JSON.stringify(groupUid)}: it must be a user identity or an identity of the group or one of its ancestors`,
    });
  }
  const role = tx.select({ parentUid: roles.parentUid, builtIn: roles.builtIn }).from(roles).where(eq(roles.uid, b.roleUid)).get();
  if (!role || (role.parentUid === null ? !role.builtIn : !isAncestorOrSelf(role.parentUid, groupUid))) {
    out.push({
      field: b.fields.roleUid,
      description: `role ${JSON.stringify(b.roleUid)} does not exist or cannot be granted in group ${JSON.stringify(groupUid)}: it must be a built-in role or a custom role of the group or one of its ancestors`,
    });
  }
  return out;
}

/** ALREADY_EXISTS when the group already binds the identity to the role (other than binding `self`). */
function requireUnbound(tx: Db, groupUid: string, b: NewRoleBinding, self: string | undefined): void {
  const existing = tx
    .select({ uid: roleBindings.uid })
    .from(roleBindings)
    .where(
      allOf([
        and(eq(roleBindings.groupUid, groupUid), eq(roleBindings.identityUid, b.identityUid), eq(roleBindings.roleUid, b.roleUid)),
        self === undefined ? undefined : ne(roleBindings.uid, self),
      ]),
    )
    .get();
  if (existing) {
    throw alreadyExists(
      "role binding",
      existing.uid,
      `${b.fields.request ? `${b.fields.request}: ` : ""}the group already binds identity ${JSON.stringify(b.identityUid)} to role ${JSON.stringify(b.roleUid)}`,
    );
  }
}
