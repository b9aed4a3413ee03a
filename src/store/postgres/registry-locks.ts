/**
 * The row locks the registry repositories on PostgreSQL share, in the order every writer here
 * takes them: the group, then the repo, then the tag, then the record below it (as groups.ts
 * and iam-locks.ts do for the IAM records), so that two writers never wait for each other in
 * opposite orders.
 *
 * - No record without its parent: a record is created under a parent locked FOR SHARE (the
 *   group for a repo, an advisory and registry settings; the repo for a tag, a README and a
 *   deployment; the tag for its end-of-life facts). Deleting the parent needs its row
 *   exclusively (the group delete takes it FOR UPDATE; a repo or tag delete locks it by
 *   deleting it), so the delete waits for the create and then finds the child (the group) or
 *   takes it along (the cascade of a repo or a tag), or the create waits for the delete and
 *   then finds no parent: NOT_FOUND, never a foreign-key failure.
 * - One row per natural key: an upsert looks for the row FOR UPDATE, and inserts with
 *   ON CONFLICT DO NOTHING when there is none (`findOrInsert`). Two replicas upserting the same
 *   key at once both miss it; one inserts, and the other's insert waits for that transaction,
 *   does nothing once it committed, and then finds (and updates) the row it made.
 */
import { eq } from "drizzle-orm";
import { notFound } from "../../errors/api-error.js";
import { textEquals } from "../list-predicates.js";
import type { PgDb } from "./connection.js";
import { PostgresStorageError } from "./errors.js";
import { repos, type tags } from "./schema.js";
import type { Tx } from "./transaction.js";

export type RepoRow = typeof repos.$inferSelect;
export type TagRow = typeof tags.$inferSelect;

/** The repo row, locked for the rest of `tx` (`share`: against its delete; else exclusively). @throws NOT_FOUND. */
export async function lockRepo(tx: Tx, uid: string, mode: "share" | "update"): Promise<RepoRow> {
  const [row] = await tx.select().from(repos).where(eq(repos.uid, uid)).for(mode);
  if (!row) throw notFound("repo", uid);
  return row;
}

/** NOT_FOUND unless the repo exists (a plain read, for the read paths). A uid no row can hold finds nothing. */
export async function requireRepo(db: Tx | PgDb, uid: string): Promise<void> {
  const [row] = await db.select({ uid: repos.uid }).from(repos).where(textEquals(repos.uid, uid));
  if (!row) throw notFound("repo", uid);
}

/** Attempts of findOrInsert: a row that keeps vanishing between the insert and the look is a conflict. */
const FIND_OR_INSERT_ATTEMPTS = 3;

/**
 * The row `find` returns (it locks it FOR UPDATE), or undefined once `insert` (an INSERT …
 * ON CONFLICT DO NOTHING, true when it inserted) made it. See the header: an insert that lost
 * to another replica's finds that replica's row on the next look, which is a new statement and
 * so sees what committed meanwhile.
 */
export async function findOrInsert<R>(find: () => Promise<R | undefined>, insert: () => Promise<boolean>): Promise<R | undefined> {
  for (let attempt = 0; attempt < FIND_OR_INSERT_ATTEMPTS; attempt++) {
    const existing = await find();
    if (existing !== undefined) return existing;
    if (await insert()) return undefined;
  }
  // Inserted and deleted again by others each time: run the whole transaction again.
  throw new PostgresStorageError("conflict", "a row was created and removed by other writers while this one upserted it", undefined, undefined);
}

/** `err` as `replacement` when it is a unique violation of `index` (a race lost to another replica), else as it is. */
export function uniqueViolationAs(err: unknown, index: string, replacement: () => Error): unknown {
  return err instanceof PostgresStorageError && err.kind === "unique" && err.constraint === index ? replacement() : err;
}
