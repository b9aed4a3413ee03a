/**
 * A repository's List, count and listAll on PostgreSQL, written once: every repository pages
 * its table the same way and differs only in its table, its orders, its filter's WHERE and how
 * a row becomes a record. Keyset paging as on SQLite (list-predicates.ts keysetClauses: order
 * by (order column, uid), continue after the previous page's last row with a row-value
 * comparison; `offset` only serves `skip`). Unlike SQLite's list-query.ts nothing is cached
 * here: the server plans each statement, and a count cached by one replica would be stale on
 * the others. A List of "the children of P" reads its count from the counters the database
 * keeps with the rows instead (child-counts.ts), when its source says how.
 */
import { asc, count, getTableColumns, type SQL } from "drizzle-orm";
import type { PgColumn, PgTable } from "drizzle-orm/pg-core";
import { allOf, keysetClauses } from "../list-predicates.js";
import type { KeysetQuery } from "../lists.js";
import { type CountedChildren, childCountReader } from "./child-counts.js";
import type { PgDb } from "./connection.js";
import type { Tx } from "./transaction.js";

/** A connection or a transaction: a page read inside a snapshot (advisories) runs on the latter. */
type Conn = PgDb | Tx;

/** What a page needs of a drizzle select (the builder's own methods, with or without joins). */
export interface PageableSelect<Row> {
  where(where: SQL | undefined): {
    orderBy(...columns: SQL[]): {
      limit(limit: number): Promise<Row[]> & { offset(offset: number): Promise<Row[]> };
    };
  };
}

/** Where a repository's List reads from and how its filter becomes a WHERE. */
export interface KeysetSource<T extends PgTable, F, O extends string, Row> {
  readonly table: T;
  /** The orders the List takes; each field names a column of `table` (checked once, here). */
  readonly orders: { readonly fields: Readonly<Record<O, string>> };
  readonly where: (filter: F) => SQL | undefined;
  /** The select a page reads, when not `table`'s own columns (a read with joins). */
  readonly select?: (conn: Conn) => PageableSelect<Row>;
  /** The counter that is `filter`'s exact count, when there is one (child-counts.ts); else count(*). */
  readonly counted?: (filter: F) => CountedChildren | undefined;
}

/**
 * The raw pages of `source` (rows as its select gives them), for a List that finishes its
 * records itself, and its count. @throws at start-up when an order names no column of the table.
 */
export function keysetPages<T extends PgTable, F, O extends string, Row = T["$inferSelect"]>(db: PgDb, source: KeysetSource<T, F, O, Row>) {
  const { table, where } = source;
  const columns = getTableColumns(table) as Record<string, PgColumn>;
  const uid = columns.uid;
  if (uid === undefined) throw new Error("keysetPages: the table has no uid column");
  const orderColumns = new Map<string, PgColumn>();
  for (const [order, field] of Object.entries<string>(source.orders.fields)) {
    const column = columns[field];
    if (column === undefined) throw new Error(`keysetPages: order ${order} names no column (${field})`);
    orderColumns.set(order, column);
  }
  const select = source.select ?? ((conn: Conn) => conn.select().from(table as PgTable) as unknown as PageableSelect<Row>);
  const readChildCount = childCountReader(db);

  return {
    /** One keyset page of rows matching `filter`, on `conn` (the pool unless a transaction is given). */
    page(filter: F, page: KeysetQuery<O>, conn: Conn = db): Promise<Row[]> {
      const column = orderColumns.get(page.order) as PgColumn;
      const ks = keysetClauses(column, uid, page, column === uid);
      return select(conn)
        .where(allOf([where(filter), ks.where]))
        .orderBy(...ks.orderBy)
        .limit(page.limit)
        .offset(page.offset);
    },

    /** How many rows `filter` matches: the counter, or count(*) over the table alone (a page's joins never drop a row). */
    async count(filter: F): Promise<number> {
      const counted = source.counted?.(filter);
      if (counted !== undefined) return readChildCount(counted);
      const [row] = await db
        .select({ n: count() })
        .from(table as PgTable)
        .where(where(filter));
      return row?.n ?? 0;
    },

    /** Every row `filter` matches in uid order, up to `max` + 1 (so a caller can tell "more than max"). */
    all(filter: F, max: number): Promise<Row[]> {
      return select(db)
        .where(where(filter))
        .orderBy(asc(uid))
        .limit(max + 1);
    },
  };
}

/**
 * A repository's `list`, `count` and `listAll` over `source`, each row made a record by
 * `toRecord`: spread into the repository object.
 */
export function keysetLists<T extends PgTable, F, O extends string, R, Row = T["$inferSelect"]>(
  db: PgDb,
  source: KeysetSource<T, F, O, Row> & { readonly toRecord: (row: Row) => R },
) {
  const pages = keysetPages(db, source);
  const { toRecord } = source;
  return {
    async list(filter: F, page: KeysetQuery<O>): Promise<R[]> {
      return (await pages.page(filter, page)).map(toRecord);
    },
    count: pages.count,
    async listAll(filter: F, max: number): Promise<R[]> {
      return (await pages.all(filter, max)).map(toRecord);
    },
  };
}
