/**
 * Building blocks shared by every repository's List: the UIDP filter and keyset paging.
 *
 * Keyset paging orders by (order column, uid) and continues after the last row of the
 * previous page with a row-value comparison `(col, uid) > (?, ?)`, which SQLite plans as one
 * index range with no sort (stack-notes gotcha G17). `offset` only serves `skip`.
 */
import { and, asc, desc, eq, gt, inArray, isNull, lt, or, type SQL, sql } from "drizzle-orm";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
import { ancestorsOf } from "./uidp.js";

/** The hierarchy filter (chainguard.platform.common.UIDPFilter) in store terms. */
export interface UidpFilter {
  readonly ancestorsOf?: string;
  readonly descendantsOf?: string;
  readonly childrenOf?: string;
  readonly inRoot?: boolean;
  readonly ids?: readonly string[];
}

/** Where the next page starts and how long it is. */
export interface KeysetQuery<K extends string> {
  readonly order: K;
  readonly desc: boolean;
  /** The last row of the previous page, or undefined for the first page. */
  readonly after?: { readonly value: string | number; readonly uid: string };
  /** Rows to skip after the cursor (the request's `skip`). */
  readonly offset: number;
  readonly limit: number;
}

/** SQL conditions for a UIDP filter over a table's uid and parent-uid columns. */
export function uidpConditions(uid: SQLiteColumn, parentUid: SQLiteColumn, f: UidpFilter): SQL[] {
  const out: SQL[] = [];
  if (f.descendantsOf) {
    // Key range: every uid that starts with "<p>/". '/' is 0x2F and '0' is 0x30.
    out.push(gt(uid, `${f.descendantsOf}/`), lt(uid, `${f.descendantsOf}0`));
  }
  if (f.childrenOf) out.push(eq(parentUid, f.childrenOf));
  if (f.ancestorsOf) out.push(inArray(uid, ancestorsOf(f.ancestorsOf)));
  if (f.inRoot) out.push(isNull(parentUid));
  if (f.ids && f.ids.length > 0) out.push(inArray(uid, [...f.ids]));
  return out;
}

/**
 * Authorization's restriction on a List: only rows whose uid is one of `within` or descends
 * from one. `undefined` means unrestricted; an empty list matches nothing. Each scope is an
 * equality plus one key range on the uid index, the same shape as `descendantsOf`.
 */
export function withinConditions(uid: SQLiteColumn, within: readonly string[] | undefined): SQL | undefined {
  if (within === undefined) return undefined;
  if (within.length === 0) return sql`0`;
  return or(...within.map((s) => or(eq(uid, s), and(gt(uid, `${s}/`), lt(uid, `${s}0`)))));
}

/** WHERE part that starts after the cursor, and the ORDER BY for (col, uid). */
export function keysetClauses(
  col: SQLiteColumn,
  uid: SQLiteColumn,
  q: { readonly desc: boolean; readonly after?: { readonly value: string | number; readonly uid: string } },
  sameColumn: boolean,
): { where: SQL | undefined; orderBy: SQL[] } {
  const dir = q.desc ? desc : asc;
  if (sameColumn) {
    const where = q.after ? (q.desc ? lt(uid, q.after.uid) : gt(uid, q.after.uid)) : undefined;
    return { where, orderBy: [dir(uid)] };
  }
  const where = q.after
    ? q.desc
      ? sql`(${col}, ${uid}) < (${q.after.value}, ${q.after.uid})`
      : sql`(${col}, ${uid}) > (${q.after.value}, ${q.after.uid})`
    : undefined;
  return { where, orderBy: [dir(col), dir(uid)] };
}

/** AND of the given conditions, ignoring undefined ones. */
export function allOf(conditions: readonly (SQL | undefined)[]): SQL | undefined {
  const present = conditions.filter((c): c is SQL => c !== undefined);
  return present.length === 0 ? undefined : and(...present);
}

/**
 * The WHERE/ORDER BY/LIMIT/OFFSET of one keyset page over `filter`, ordered by `col` then `uid`
 * (`col === uid` for the uid order). Repositories spread it into their select.
 */
export function keysetPage<K extends string>(
  filter: SQL | undefined,
  col: SQLiteColumn,
  uid: SQLiteColumn,
  page: KeysetQuery<K>,
): { where: SQL | undefined; orderBy: SQL[]; limit: number; offset: number } {
  const ks = keysetClauses(col, uid, page, col === uid);
  return { where: allOf([filter, ks.where]), orderBy: ks.orderBy, limit: page.limit, offset: page.offset };
}

/** JSON text of a string list column → the list (a damaged value reads as empty). */
export function parseStringList(text: string): string[] {
  try {
    const v: unknown = JSON.parse(text);
    return Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : [];
  } catch {
    return [];
  }
}
