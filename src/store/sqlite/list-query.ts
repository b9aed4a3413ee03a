/**
 * Building blocks shared by every repository's List: the UIDP filter and keyset paging, and
 * the hot-path statements (`preparedLists`, `preparedSelect`): SQL that drizzle builds once
 * per query shape, prepared on the connection and run without drizzle's per-call work.
 *
 * Keyset paging orders by (order column, uid) and continues after the last row of the
 * previous page with a row-value comparison `(col, uid) > (?, ?)`, which SQLite plans as one
 * index range with no sort (spelled out as `col > ? OR (col = ? AND uid > ?)`, SQLite
 * may fall back to a scan and a temporary sort). `offset` only serves `skip`.
 */
import { Column, count, getTableColumns, getTableName, is, Name, Param, Placeholder, SQL, sql, StringChunk, Table } from "drizzle-orm";
import type { SQLiteColumn, SQLiteTable } from "drizzle-orm/sqlite-core";
import { countCacheFor } from "./count-cache.js";
import type { Db } from "./db.js";
import type { KeysetQuery } from "../lists.js";

import { allOf, type Bind, inline, keysetClauses } from "../list-predicates.js";

export { allOf, type Bind, uidpConditions, withinConditions } from "../list-predicates.js";

/** A Bind that turns values into placeholders p0, p1, … and collects their values. */
export function placeholders(): { readonly bind: Bind; readonly values: Record<string, string | number> } {
  const values: Record<string, string | number> = {};
  let n = 0;
  return {
    values,
    bind(v) {
      const name = `p${n++}`;
      values[name] = v;
      return sql.placeholder(name);
    },
  };
}

/**
 * The statement-cache key of a built condition: a walk over the same SQL tree the statement
 * is rendered from, writing what the rendered text depends on (SQL text, column and table
 * names, where each placeholder stands) and the values drizzle would bake into the statement
 * (any value that is not a placeholder). Two conditions with the same key render the same
 * SQL with the same fixed values, so a cached statement can never run with the wrong SQL:
 * the key comes from the query itself, not from a description kept beside it by hand.
 * Cheaper than rendering (no escaping, no parameter list), and it refuses a node it does not
 * know rather than guess.
 */
export function sqlShape(node: unknown): string {
  if (node instanceof StringChunk) return node.value.join("");
  if (node === undefined) return ""; // drizzle renders a missing chunk as nothing
  if (node instanceof SQL) {
    let out = "";
    for (const c of node.queryChunks) out += sqlShape(c);
    return out;
  }
  if (node instanceof Placeholder) return "?";
  if (node instanceof Param) return node.value instanceof Placeholder ? "?" : `=${JSON.stringify(node.value)};`;
  if (node instanceof Column) return `"${getTableName(node.table)}"."${node.name}"`;
  if (node instanceof Table) return `"${getTableName(node)}"`;
  if (node instanceof Name) return `"${node.value}"`;
  if (Array.isArray(node)) {
    let out = "(";
    for (let i = 0; i < node.length; i++) out += (i > 0 ? "," : "") + sqlShape(node[i]);
    return `${out})`;
  }
  // A value drizzle binds as a fixed parameter of the statement.
  if (node === null || typeof node === "string" || typeof node === "number" || typeof node === "boolean") return `=${JSON.stringify(node)};`;
  // A subquery (a select builder), rendered in parentheses.
  if (typeof (node as { getSQL?: unknown } | undefined)?.getSQL === "function") return `(${sqlShape((node as { getSQL(): SQL }).getSQL())})`;
  throw new Error(`sqlShape: a SQL node it does not know (${Object.prototype.toString.call(node)}); teach it before caching such a statement`);
}

/**
 * Prepared statements by query shape (a key that fixes the SQL text, values apart). Drizzle
 * builds and SQLite prepares a query on every call otherwise, a large share of a REST List
 * page (docs/performance.md). Bounded: shapes vary with list lengths (ids, scopes), so the
 * cache is dropped whole when it reaches `max` entries.
 */
export function statementCache<S>(max = 256): (key: string, prepare: () => S) => S {
  const cache = new Map<string, S>();
  return (key, prepare) => {
    let s = cache.get(key);
    if (s === undefined) {
      if (cache.size >= max) cache.clear();
      s = prepare();
      cache.set(key, s);
    }
    return s;
  };
}

/**
 * A repository's List and count over `table`, run through statements prepared once per query
 * shape. The repository supplies its filter as a function of a Bind (so every value becomes a
 * placeholder); the statement's cache key is read off the built WHERE and ORDER BY
 * (`sqlShape`), so it cannot disagree with the SQL it names. Counts also go through the
 * connection's count cache (count-cache.ts), keyed by that shape and the values.
 */
export function preparedLists(db: Db, table: SQLiteTable, uid: SQLiteColumn, name: string) {
  const listStmts = statementCache<RowsStatement>();
  const joinedStmts = statementCache<{ all(values: Record<string, unknown>): unknown[] }>();
  const columns = getTableColumns(table);
  const toRow = rowMapper(columns);
  const countStmts = statementCache<{ get(values: Record<string, unknown>): { n: number } | undefined }>();
  const counts = countCacheFor(db);
  return {
    /** One keyset page (see keysetClauses); rows as drizzle maps them for `table`. */
    page(where: (bind: Bind) => SQL | undefined, col: SQLiteColumn, page: KeysetQuery<string>): unknown[] {
      if (fresh) {
        const ks = keysetClauses(col, uid, page, col === uid);
        const q = db
          .select(columns)
          .from(table)
          .where(allOf([where(inline), ks.where]))
          .orderBy(...ks.orderBy);
        return q.limit(page.limit).offset(page.offset).all();
      }
      const p = placeholders();
      const ks = keysetClauses(col, uid, page, col === uid, p.bind);
      const pageWhere = allOf([where(p.bind), ks.where]);
      const stmt = listStmts(pageKey(pageWhere, ks.orderBy), () =>
        rowsStatement(
          db,
          db
            .select(columns)
            .from(table)
            .where(pageWhere)
            .orderBy(...ks.orderBy)
            .limit(sql.placeholder("limit"))
            .offset(sql.placeholder("offset"))
            .toSQL(),
        ),
      );
      return stmt.rows({ ...p.values, limit: page.limit, offset: page.offset }).map(toRow);
    },
    /**
     * One keyset page of a joined read whose rows drizzle maps (nested objects): `select`
     * gives the select with its joins, finished here with the page's WHERE, ORDER BY, LIMIT
     * and OFFSET and prepared once per shape like `page`. The key does not name the select:
     * each repository's cache serves one joined read, always the same `select`.
     */
    joinedPage(where: (bind: Bind) => SQL | undefined, col: SQLiteColumn, page: KeysetQuery<string>, select: () => JoinedSelect): unknown[] {
      if (fresh) {
        const ks = keysetClauses(col, uid, page, col === uid);
        const q = select()
          .where(allOf([where(inline), ks.where]))
          .orderBy(...ks.orderBy) as unknown as {
          limit(n: number): { offset(n: number): { all(): unknown[] } };
        };
        return q.limit(page.limit).offset(page.offset).all();
      }
      const p = placeholders();
      const ks = keysetClauses(col, uid, page, col === uid, p.bind);
      const pageWhere = allOf([where(p.bind), ks.where]);
      const stmt = joinedStmts(pageKey(pageWhere, ks.orderBy), () =>
        select()
          .where(pageWhere)
          .orderBy(...ks.orderBy)
          .limit(sql.placeholder("limit"))
          .offset(sql.placeholder("offset"))
          .prepare(),
      );
      return stmt.all({ ...p.values, limit: page.limit, offset: page.offset });
    },
    /** count(*) of the rows the filter matches, remembered until the database changes. */
    count(where: (bind: Bind) => SQL | undefined): number {
      if (fresh) return db.select({ n: count() }).from(table).where(where(inline)).get()?.n ?? 0;
      const p = placeholders();
      const filterSql = where(p.bind);
      const shape = filterSql === undefined ? "" : sqlShape(filterSql);
      const stmt = countStmts(shape, () => db.select({ n: count() }).from(table).where(filterSql).prepare());
      // The shape fixes the SQL text and the values complete it: together they name the query.
      return counts.count(`${name}|${shape}|${JSON.stringify(p.values)}`, () => stmt.get(p.values)?.n ?? 0);
    },
  };
}

/** Set while `withFreshStatements` runs (tests). */
let fresh = false;

/**
 * Tests only: runs `call` with every List and count built anew by drizzle with inline values
 * and run unprepared, bypassing the statement and count caches, so a test can hold the
 * cached path to the rows a freshly built statement returns. `call` must reach the store
 * synchronously (repository methods do: their queries run before their first await).
 */
export function withFreshStatements<T>(call: () => T): T {
  fresh = true;
  try {
    return call();
  } finally {
    fresh = false;
  }
}

/** The cache key of one page's statement: its WHERE (values as placeholders) and ORDER BY. */
function pageKey(where: SQL | undefined, orderBy: readonly SQL[]): string {
  return `${where === undefined ? "" : sqlShape(where)}|${sqlShape(orderBy)}`;
}

/** What joinedPage needs of a drizzle select with joins (the builder's own methods). */
export interface JoinedSelect {
  where(where: SQL | undefined): {
    orderBy(...columns: SQL[]): {
      limit(limit: Placeholder): { offset(offset: Placeholder): { prepare(): { all(values: Record<string, unknown>): unknown[] } } };
    };
  };
}

/** A select prepared once, run with named values, answering array rows (see rowMapper). */
interface RowsStatement {
  rows(values: Record<string, unknown>): unknown[][];
  first(values: Record<string, unknown>): unknown[] | undefined;
}

/**
 * The SQL drizzle built for a query, prepared on the connection itself in raw (array) mode.
 * Drizzle's own prepared query fills its parameters with `is()` prototype walks on every run;
 * here each parameter's source (a named placeholder, one wrapped with its column's encoder,
 * or a fixed value) is resolved once, when the statement is prepared.
 */
function rowsStatement(db: Db, query: { readonly sql: string; readonly params: readonly unknown[] }): RowsStatement {
  const stmt = db.$client.prepare(query.sql).raw(true);
  const named = (name: string, values: Record<string, unknown>): unknown => {
    if (!(name in values)) throw new Error(`No value for placeholder "${name}" was provided`);
    return values[name];
  };
  const fill = query.params.map((p): ((values: Record<string, unknown>) => unknown) => {
    if (is(p, Placeholder)) return (values) => named(p.name, values);
    if (is(p, Param) && is(p.value, Placeholder)) {
      const { encoder, value } = p as Param & { value: Placeholder };
      return (values) => encoder.mapToDriverValue(named(value.name, values));
    }
    return () => p;
  });
  const args = (values: Record<string, unknown>): unknown[] => {
    const out = new Array<unknown>(fill.length);
    for (let i = 0; i < fill.length; i++) out[i] = (fill[i] as (v: Record<string, unknown>) => unknown)(values);
    return out;
  };
  return {
    rows(values) {
      const a = args(values);
      observer?.(query.sql, a);
      return stmt.all(...a) as unknown[][];
    },
    first: (values) => stmt.get(...args(values)) as unknown[] | undefined,
  };
}

/** Set while `observeListStatements` runs (tests). */
let observer: ((sql: string, args: readonly unknown[]) => void) | undefined;

/**
 * Tests only: runs `call` and hands `onRun` the SQL text and arguments of every List page
 * statement it runs, exactly as prepared and bound on the connection, so a test can EXPLAIN
 * what production runs. `call` must reach the store synchronously, as in withFreshStatements.
 */
export function observeListStatements<T>(onRun: (sql: string, args: readonly unknown[]) => void, call: () => T): T {
  observer = onRun;
  try {
    return call();
  } finally {
    observer = undefined;
  }
}

/**
 * A select of `columns` (built by drizzle once, from `query`) prepared on the connection, its
 * rows mapped as drizzle maps them (rowMapper): for hot single-row reads such as GetGroup,
 * where drizzle's per-call parameter filling and per-cell mapping are a third of the read.
 */
export function preparedSelect<R>(
  db: Db,
  columns: Record<string, Column>,
  query: { readonly sql: string; readonly params: readonly unknown[] },
): { get(values: Record<string, unknown>): R | undefined } {
  const stmt = rowsStatement(db, query);
  const toRow = rowMapper(columns);
  return {
    get(values) {
      const row = stmt.first(values);
      return row === undefined ? undefined : (toRow(row) as R);
    },
  };
}

/**
 * Array rows of a select of `columns` (SQLite returns them in the order of the object's keys,
 * as drizzle writes the select list) → objects as drizzle's own `all()` maps them. Drizzle
 * decides per cell, with several `is()` prototype walks, which decoder to run; that was ~15 %
 * of a REST List page (docs/performance.md). Here that is decided once per column: most
 * columns (text, plain integers) come back as SQLite gives them, the others (booleans, JSON,
 * blobs) through the column's own `mapFromDriverValue`, and NULL stays null, as in drizzle.
 */
export function rowMapper(columns: Record<string, Column>): (row: unknown[]) => Record<string, unknown> {
  const keys = Object.keys(columns);
  const decoders = keys.map((k) => {
    const column = columns[k] as Column;
    return column.mapFromDriverValue === Column.prototype.mapFromDriverValue ? undefined : (v: unknown) => column.mapFromDriverValue(v);
  });
  return (row) => {
    const out: Record<string, unknown> = {};
    for (let i = 0; i < keys.length; i++) {
      const v = row[i];
      const decode = decoders[i];
      out[keys[i] as string] = decode === undefined || v === null ? v : decode(v);
    }
    return out;
  };
}
