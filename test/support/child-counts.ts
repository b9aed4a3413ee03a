/**
 * What the PostgreSQL counters (child_counts, src/store/postgres/child-counts.ts) should say,
 * recounted from the rows: every (parent, kind) whose kept sum differs from count(*) of its
 * rows (a deleted parent's counters must add up to zero). The recount names each counted table and its parent column here, apart from the
 * migration's triggers, so a trigger that keys a row wrongly shows up as a difference.
 */
import type pg from "pg";

/** Each counted table: its parent column and the kind it is kept under (SQL over a row `r`). */
const COUNTED: readonly { table: string; parent: string; kind: string }[] = [
  { table: "groups", parent: "parent_uid", kind: "'groups'" },
  { table: "identities", parent: "parent_uid", kind: "'identities'" },
  { table: "repos", parent: "parent_uid", kind: "'repos'" },
  { table: "tags", parent: "repo_uid", kind: "'tags.' || r.generated" },
  { table: "advisories", parent: "parent_uid", kind: "'advisories'" },
  { table: "role_bindings", parent: "group_uid", kind: "'role_bindings'" },
];

export interface CounterCheck {
  /** "parent kind: rows N, kept M" for each difference (none when the counters are right). */
  readonly mismatches: string[];
  /** How many (parent, kind) pairs have rows: a check over an empty database proves nothing. */
  readonly parents: number;
}

export async function checkChildCounts(db: pg.Pool | pg.Client): Promise<CounterCheck> {
  const actual = COUNTED.map((c) => `SELECT coalesce(r.${c.parent}, '') AS p, ${c.kind} AS k, count(*) AS n FROM ${c.table} r GROUP BY 1, 2`).join(
    " UNION ALL ",
  );
  const { rows } = await db.query<{ p: string; k: string; rows: string; kept: string }>(
    `WITH actual AS (${actual}), kept AS (SELECT parent_uid AS p, kind AS k, sum(n) AS n FROM child_counts GROUP BY 1, 2)
     SELECT coalesce(a.p, c.p) AS p, coalesce(a.k, c.k) AS k, coalesce(a.n, 0)::text AS rows, coalesce(c.n, 0)::text AS kept
     FROM actual a FULL JOIN kept c ON a.p = c.p AND a.k = c.k`,
  );
  const parents = rows.filter((r) => r.rows !== "0").length;
  const mismatches = rows.filter((r) => r.rows !== r.kept).map((r) => `${r.p || "(roots)"} ${r.k}: rows ${r.rows}, kept ${r.kept}`);
  return { mismatches, parents };
}
