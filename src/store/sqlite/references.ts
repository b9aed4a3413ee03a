/**
 * Reference checks shared by the repositories: does the group a record goes under exist, may a
 * role be granted there. Each runs inside the caller's write transaction (`tx`), so the check
 * and the write that depends on it see the same data.
 */
import { eq, sql } from "drizzle-orm";
import { notFound } from "../../errors/api-error.js";
import { requireAssignable } from "../assignable-roles.js";
import type { Db } from "./db.js";
import { groups, roles } from "./schema.js";

/**
 * NOT_FOUND unless the group exists. Used by every repository that creates records
 * under a group given by the caller.
 */
export function requireGroup(tx: Db, uid: string): void {
  const found = statementsOf(tx).group.get({ uid });
  if (!found) throw notFound("group", uid);
}

/**
 * The two checks' reads, prepared once per connection object rather than built by drizzle and
 * prepared by SQLite on every write (that was a third of a write's CPU for CreateGroup,
 * docs/performance.md). groupCommit hands every write the database object itself, so they are
 * prepared once; a one-off transaction object gets its own.
 */
function statementsOf(tx: Db): Checks {
  let s = prepared.get(tx);
  if (s === undefined) {
    s = prepareChecks(tx);
    prepared.set(tx, s);
  }
  return s;
}

function prepareChecks(tx: Db) {
  return {
    group: tx
      .select({ uid: groups.uid })
      .from(groups)
      .where(eq(groups.uid, sql.placeholder("uid")))
      .prepare(),
    role: tx
      .select({ parentUid: roles.parentUid, builtIn: roles.builtIn })
      .from(roles)
      .where(eq(roles.uid, sql.placeholder("uid")))
      .prepare(),
  };
}

type Checks = ReturnType<typeof prepareChecks>;
const prepared = new WeakMap<Db, Checks>();

/**
 * INVALID_ARGUMENT on `field` unless `roleUid` is a role that may be granted in `groupUid`
 * (assignable-roles.ts says which).
 */
export function requireAssignableRole(tx: Db, roleUid: string, groupUid: string, field: string): void {
  requireAssignable(statementsOf(tx).role.get({ uid: roleUid }), groupUid, field);
}
