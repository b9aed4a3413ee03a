/**
 * The repos repository on PostgreSQL: the ReposRepository contract (src/store/repos.ts), answer
 * for answer and error for error as SQLite's (src/store/sqlite/repos.ts), with writers on
 * several replicas at once. Locks (registry-locks.ts, top-down):
 * - create and upsert lock the group FOR SHARE: no repo under a group being deleted (the
 *   group delete takes it FOR UPDATE and then looks for repos).
 * - one name per group: the unique index (parent_uid, name) decides between replicas. create
 *   inserts with ON CONFLICT DO NOTHING, so the one that lost a race gets the ALREADY_EXISTS
 *   SQLite gives, and a rename (update) that collides with a name committed meanwhile has its
 *   unique violation turned into that same answer.
 * - upsert (v1 CreateRepo, the importer) finds the repo FOR UPDATE or inserts it
 *   (findOrInsert): two replicas upserting one name end with one repo, the second an update.
 * - update and delete lock the repo FOR UPDATE, so tag, README and deployment writers (which
 *   hold it FOR SHARE) finish first or find it gone; the delete takes the repo's tags, READMEs,
 *   deployments, tag history and end-of-life facts along (tags explicitly, as SQLite does; the
 *   rest by the foreign keys' cascade).
 */
import { and, eq } from "drizzle-orm";
import { allOf, textEquals, uidpConditions, withinConditions } from "../list-predicates.js";
import { repoColumns, repoNameTaken, repoRecordOf, repoUnchanged } from "../registry-rows.js";
import { REPO_ORDERS, type RepoFields, type RepoListFilter, type RepoRecord, type ReposRepository, type UpsertOutcome } from "../repos.js";
import { newUidp } from "../uidp.js";
import { countedChildren } from "./child-counts.js";
import type { PgDb } from "./connection.js";
import { lockParentGroup } from "./iam-locks.js";
import { keysetLists } from "./list-query.js";
import { findOrInsert, lockRepo, type RepoRow, uniqueViolationAs } from "./registry-locks.js";
import { repos, tags } from "./schema.js";
import { type Tx, writeTransaction } from "./transaction.js";

/** The unique index that holds one name per group. */
const NAME_INDEX = "repos_parent_name_idx";

/** The group's repo of that name (locked FOR UPDATE when `lock`), if any. */
async function findRepoByName(tx: Tx | PgDb, parentUid: string, name: string, lock?: "update"): Promise<RepoRow | undefined> {
  const q = tx
    .select()
    .from(repos)
    .where(and(eq(repos.parentUid, parentUid), textEquals(repos.name, name)));
  const [row] = lock ? await q.for(lock) : await q;
  return row;
}

/** The uid of the group's repo named `name`, if any (the importer's lookup). */
export async function findRepoUid(tx: Tx, parentUid: string, name: string): Promise<string | undefined> {
  return (await findRepoByName(tx, parentUid, name))?.uid;
}

/** A new repo row with these fields. */
function newRepoRow(parentUid: string, fields: RepoFields, now: number): RepoRow {
  return { uid: newUidp(parentUid), parentUid, ...(repoColumns(fields) as Required<ReturnType<typeof repoColumns>>), createTime: now, updateTime: now };
}

/** Inserts `row` unless the group already has a repo of its name; true when it did. */
async function insertRepo(tx: Tx, row: RepoRow): Promise<boolean> {
  const inserted = await tx
    .insert(repos)
    .values(row)
    .onConflictDoNothing({ target: [repos.parentUid, repos.name] })
    .returning({ uid: repos.uid });
  return inserted.length > 0;
}

/**
 * Creates the group's repo named `fields.name`, or writes the fields over it (keeping uid and
 * create_time; no change leaves update_time alone), in the caller's transaction. `mayReplace`
 * judges an existing repo before it is overwritten. @throws NOT_FOUND (group).
 */
export async function upsertRepoInTx(
  tx: Tx,
  parentUid: string,
  fields: RepoFields,
  now: number,
  mayReplace?: (existingUid: string) => void,
): Promise<{ row: RepoRecord; outcome: UpsertOutcome }> {
  await lockParentGroup(tx, parentUid);
  const fresh = newRepoRow(parentUid, fields, now);
  const existing = await findOrInsert(
    () => findRepoByName(tx, parentUid, fields.name, "update"),
    () => insertRepo(tx, fresh),
  );
  if (!existing) return { row: repoRecordOf(fresh), outcome: "loaded" };
  mayReplace?.(existing.uid);
  const columns = repoColumns(fields);
  if (repoUnchanged(existing, columns)) return { row: repoRecordOf(existing), outcome: "unchanged" };
  const [row] = await tx
    .update(repos)
    .set({ ...columns, updateTime: now })
    .where(eq(repos.uid, existing.uid))
    .returning();
  return { row: repoRecordOf(row as RepoRow), outcome: "updated" };
}

export function createPostgresReposRepository(db: PgDb): ReposRepository {
  const where = (f: RepoListFilter) =>
    allOf([
      ...uidpConditions(repos.uid, repos.parentUid, f.uidp),
      f.name !== undefined ? textEquals(repos.name, f.name) : undefined,
      withinConditions(repos.uid, f.within),
    ]);

  return {
    async get(uid) {
      const [row] = await db.select().from(repos).where(textEquals(repos.uid, uid));
      return row && repoRecordOf(row);
    },

    async create(parentUid, fields, now) {
      return writeTransaction(db, async (tx) => {
        await lockParentGroup(tx, parentUid);
        if (await findRepoByName(tx, parentUid, fields.name)) throw repoNameTaken(fields.name);
        const row = newRepoRow(parentUid, fields, now);
        if (!(await insertRepo(tx, row))) throw repoNameTaken(fields.name); // another replica's, committed meanwhile
        return repoRecordOf(row);
      });
    },

    async upsert(parentUid, fields, now, mayReplace) {
      return writeTransaction(db, async (tx) => (await upsertRepoInTx(tx, parentUid, fields, now, mayReplace)).row);
    },

    async update(uid, changes, now) {
      try {
        return await writeTransaction(db, async (tx) => {
          const existing = await lockRepo(tx, uid, "update");
          if (changes.name !== undefined && changes.name !== existing.name) {
            if (await findRepoByName(tx, existing.parentUid, changes.name)) throw repoNameTaken(changes.name);
          }
          const [row] = await tx
            .update(repos)
            .set({ ...repoColumns(changes), updateTime: now })
            .where(eq(repos.uid, uid))
            .returning();
          return repoRecordOf(row as RepoRow);
        });
      } catch (err) {
        // Renamed onto a name another replica took after the check above.
        throw uniqueViolationAs(err, NAME_INDEX, () => repoNameTaken(changes.name ?? ""));
      }
    },

    async delete(uid) {
      await writeTransaction(db, async (tx) => {
        await lockRepo(tx, uid, "update");
        await tx.delete(tags).where(eq(tags.repoUid, uid));
        await tx.delete(repos).where(eq(repos.uid, uid));
      });
    },

    ...keysetLists(db, { table: repos, orders: REPO_ORDERS, where, counted: (f) => countedChildren("repos", f), toRecord: repoRecordOf }),
  };
}
