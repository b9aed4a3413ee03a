/**
 * The total_count of "the children of P" on PostgreSQL without counting them: read from
 * `child_counts` (schema.ts), which triggers on the counted tables keep equal to the rows
 * (migration 0001_child_counts). A first page of a List of a million children would otherwise
 * run count(*) over a million index entries on every call (~100 ms of PostgreSQL's CPU,
 * docs/performance.md "On PostgreSQL"); this is one index range of at most STRIPES rows.
 *
 * Exact, never stale: the triggers write in the same transaction as the rows, so a reader's
 * snapshot sees a row and its count together or neither, on every replica, whoever wrote them.
 *
 * What it locks: each INSERT or DELETE on a counted table upserts one counter row per parent
 * it touched, on the writing connection's stripe (pg_backend_pid() % 32), and holds that row
 * lock to commit. Two writers under one parent wait for each other only when their
 * connections share a stripe; rows are upserted in key order, so two writers never take two
 * counter rows in opposite orders within one statement (a deadlock across statements is
 * detected by PostgreSQL and retried like any other, transaction.ts). Readers take no lock.
 *
 * Only a filter that means exactly "the rows whose parent column is P" (or "the roots", whose
 * parent is null, kept under '') reads the counter; anything else that narrows the rows (a
 * name, a class, an ancestor or id filter, an authorization scope that restricts) keeps
 * count(*). An authorization restriction (`within`: the rows at or under any of these groups)
 * restricts nothing for the children of P when one of its scopes is P or an ancestor of P:
 * every row with parent P has a uid "P/…" (each writer makes it with newUidp(P)), which that
 * scope covers, and the scopes are OR-ed.
 */
import { and, eq, sql } from "drizzle-orm";
import type { UidpFilter } from "../lists.js";
import { isAncestorOrSelf } from "../uidp.js";
import type { PgDb } from "./connection.js";
import { childCounts } from "./schema.js";

/** What to read for one List's count: the parent key and the kinds to add up. */
export interface CountedChildren {
  /** The parent's uid, or '' for the roots. */
  readonly parent: string;
  /** child_counts kinds whose sum is the count (the table's name; tags one per generated class). */
  readonly kinds: readonly string[];
}

/**
 * The parent whose counter is the exact count of the rows `uidp` and `within` select, when
 * nothing else narrows them (the caller checks its own filters first); undefined otherwise.
 */
export function countedParent(uidp: UidpFilter, within: readonly string[] | undefined): string | undefined {
  if (uidp.ancestorsOf || uidp.descendantsOf || (uidp.ids && uidp.ids.length > 0)) return undefined;
  const parent = uidp.childrenOf;
  if (parent) {
    if (uidp.inRoot) return undefined; // a parent and none: matches nothing, let count(*) say so
    if (within !== undefined && !within.some((scope) => isAncestorOrSelf(scope, parent))) return undefined;
    return parent;
  }
  // A root's uid is under no scope but itself: any restriction restricts the roots.
  if (uidp.inRoot && within === undefined) return "";
  return undefined;
}

/**
 * True when every one of `others` (a List filter's fields besides its hierarchy and scope)
 * narrows nothing: absent, or an empty list. Anything else, even an empty string, counts as a
 * filter: a field added to a List later turns the counter off for it until someone says why
 * it may not.
 */
export function narrowsNothing(others: object): boolean {
  for (const value of Object.values(others)) {
    if (value === undefined) continue;
    if (Array.isArray(value) && value.length === 0) continue;
    return false;
  }
  return true;
}

/**
 * The counter of a List over the table `kind` whose filter is `filter`, when it is exactly
 * "the children of P" (or "the roots"): its hierarchy filter says so and none of its other
 * fields narrows it.
 */
export function countedChildren(
  kind: string,
  filter: { readonly uidp: UidpFilter; readonly within?: readonly string[] | undefined },
): CountedChildren | undefined {
  const { uidp, within, ...others } = filter;
  if (!narrowsNothing(others)) return undefined;
  const parent = countedParent(uidp, within);
  return parent === undefined ? undefined : { parent, kinds: [kind] };
}

const readers = new WeakMap<PgDb, (counted: CountedChildren) => Promise<number>>();

/**
 * The sum of a parent's counter rows of the given kinds, through one named prepared statement
 * per database (parsed and planned once per connection).
 */
export function childCountReader(db: PgDb): (counted: CountedChildren) => Promise<number> {
  let reader = readers.get(db);
  if (reader === undefined) {
    const statement = db
      .select({ n: sql<string>`coalesce(sum(${childCounts.n}), 0)::text` })
      .from(childCounts)
      .where(and(eq(childCounts.parentUid, sql.placeholder("parent")), sql`${childCounts.kind} = ANY(${sql.placeholder("kinds")}::text[])`))
      .prepare("trellis_child_count");
    reader = async (counted) => {
      const [row] = await statement.execute({ parent: counted.parent, kinds: [...counted.kinds] });
      return Number(row?.n ?? 0);
    };
    readers.set(db, reader);
  }
  return reader;
}
