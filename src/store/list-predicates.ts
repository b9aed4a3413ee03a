/**
 * The conditions of a List that read the same on every SQL engine: the hierarchy filter, the
 * authorization scope and the keyset cursor, built with drizzle's dialect-neutral operators
 * over any engine's columns. Each engine renders them in its own dialect; both compare text
 * bytewise (SQLite by default, PostgreSQL through COLLATE "C" on every text column), which the
 * key ranges below rely on.
 */
import { and, asc, type Column, desc, eq, gt, inArray, isNull, lt, or, type SQL, sql } from "drizzle-orm";
import { ancestorsOf } from "./uidp.js";
import type { UidpFilter } from "./lists.js";

/**
 * How a value enters a condition: inline (the default; drizzle binds it as a parameter of a
 * one-off statement) or as a named placeholder (`placeholders()`), so a statement prepared
 * once per query shape can be run again with new values.
 */
export type Bind = (value: string | number) => unknown;
export const inline: Bind = (v) => v;

/** SQL conditions for a UIDP filter over a table's uid and parent-uid columns. */
export function uidpConditions(uid: Column, parentUid: Column, f: UidpFilter, bind: Bind = inline): SQL[] {
  const out: SQL[] = [];
  if (f.descendantsOf) {
    // Key range: every uid that starts with "<p>/". '/' is 0x2F and '0' is 0x30.
    out.push(gt(uid, bind(`${f.descendantsOf}/`)), lt(uid, bind(`${f.descendantsOf}0`)));
  }
  if (f.childrenOf) out.push(eq(parentUid, bind(f.childrenOf)));
  if (f.ancestorsOf) out.push(inArray(uid, ancestorsOf(f.ancestorsOf).map(bind)));
  if (f.inRoot) out.push(isNull(parentUid));
  if (f.ids && f.ids.length > 0) out.push(inArray(uid, f.ids.map(bind)));
  return out;
}

/**
 * Authorization's restriction on a List: only rows whose uid is one of `within` or descends
 * from one. `undefined` means unrestricted; an empty list matches nothing. Each scope is an
 * equality plus one key range on the uid index, the same shape as `descendantsOf`.
 */
export function withinConditions(uid: Column, within: readonly string[] | undefined, bind: Bind = inline): SQL | undefined {
  if (within === undefined) return undefined;
  if (within.length === 0) return sql`false`;
  return or(...within.map((s) => or(eq(uid, bind(s)), and(gt(uid, bind(`${s}/`)), lt(uid, bind(`${s}0`))))));
}

/** WHERE part that starts after the cursor, and the ORDER BY for (col, uid). */
export function keysetClauses(
  col: Column,
  uid: Column,
  q: { readonly desc: boolean; readonly after?: { readonly value: string | number; readonly uid: string } },
  sameColumn: boolean,
  bind: Bind = inline,
): { where: SQL | undefined; orderBy: SQL[] } {
  const dir = q.desc ? desc : asc;
  if (sameColumn) {
    const where = q.after ? (q.desc ? lt(uid, bind(q.after.uid)) : gt(uid, bind(q.after.uid))) : undefined;
    return { where, orderBy: [dir(uid)] };
  }
  const where = q.after
    ? q.desc
      ? sql`(${col}, ${uid}) < (${bind(q.after.value)}, ${bind(q.after.uid)})`
      : sql`(${col}, ${uid}) > (${bind(q.after.value)}, ${bind(q.after.uid)})`
    : undefined;
  return { where, orderBy: [dir(col), dir(uid)] };
}

/** AND of the given conditions, ignoring undefined ones. */
export function allOf(conditions: readonly (SQL | undefined)[]): SQL | undefined {
  const present = conditions.filter((c): c is SQL => c !== undefined);
  return present.length === 0 ? undefined : and(...present);
}

/**
 * A filter's text value that no stored text can equal: writes refuse NUL (U+0000) on every
 * engine, and PostgreSQL cannot even take it as a parameter (SQLSTATE 22021 fails the whole
 * statement), so a condition on such a value is rendered as the nothing it matches.
 */
function holdsNul(value: string): boolean {
  return value.includes("\u0000");
}

/** `col = value` for a caller's text value (nothing when it holds a NUL, see holdsNul). */
export function textEquals(col: Column, value: string, bind: Bind = inline): SQL {
  return holdsNul(value) ? sql`false` : eq(col, bind(value));
}

/** `col IN (values)` for a caller's text values, the ones holding a NUL left out (they match nothing). */
export function textIn(col: Column, values: readonly string[], bind: Bind = inline): SQL {
  const kept = values.filter((v) => !holdsNul(v));
  return kept.length === 0 ? sql`false` : inArray(col, kept.map(bind));
}

/**
 * Whether the ASCII-folded `col` contains `needle` as a plain substring, in an engine's own
 * words (SQLite `instr`, PostgreSQL `strpos`; both fold with lower(), ASCII only, and treat
 * `%` and `_` as themselves). `needle` arrives bound.
 */
export type ContainsText = (col: Column, needle: unknown) => SQL;

/** `contains` for a caller's text (nothing when it holds a NUL, see holdsNul). */
export function textContains(contains: ContainsText, col: Column, needle: string, bind: Bind = inline): SQL {
  return holdsNul(needle) ? sql`false` : contains(col, bind(needle));
}

/**
 * How an engine says "no '/' in `uid` from character `from` (1-based) on", or anywhere when
 * `from` is undefined (SQLite: instr/substr; PostgreSQL: strpos/substr).
 */
export type NoSlashFrom = (uid: Column, from: unknown) => SQL;

/**
 * The UIDP filter over a table whose uid is its group's uid and that has no parent column
 * (account associations): `children_of` and `in_root` test the uid's shape. A direct child of
 * P is a uid under "P/" with no further '/', a root has no '/'. The other filters are the
 * shared ones; the uid column stands in for the parent column they never read.
 */
export function uidShapeConditions(uid: Column, f: UidpFilter, noSlashFrom: NoSlashFrom, bind: Bind = inline): SQL[] {
  const { childrenOf, inRoot, ...rest } = f;
  const out = uidpConditions(uid, uid, rest, bind);
  if (childrenOf) {
    out.push(...uidpConditions(uid, uid, { descendantsOf: childrenOf }, bind));
    // A value like any other: a prepared statement serves every children_of parent.
    out.push(noSlashFrom(uid, bind(childrenOf.length + 2)));
  }
  if (inRoot) out.push(noSlashFrom(uid, undefined));
  return out;
}
