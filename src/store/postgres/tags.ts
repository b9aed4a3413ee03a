/**
 * The tags repository on PostgreSQL: the TagsRepository contract (src/store/tags.ts), answer for
 * answer and error for error as SQLite's (src/store/sqlite/tags.ts), with writers on several
 * replicas at once. Locks (registry-locks.ts, top-down):
 * - upsert locks the repo FOR SHARE (no tag under a repo being deleted: the repo delete locks
 *   it FOR UPDATE), then finds the tag FOR UPDATE or inserts it (findOrInsert): two replicas
 *   moving one tag at once end with one tag, moved twice, each move in its history.
 * - one name per repo: replace (a rename) locks the repo FOR SHARE and the tag FOR UPDATE,
 *   checks the name, and turns a unique violation of (repo_uid, name), a name another replica
 *   took meanwhile, into the ALREADY_EXISTS SQLite gives.
 * - delete removes the tag in one statement (which locks it), its history and end-of-life
 *   facts by the foreign keys' cascade; an end-of-life writer holds the tag FOR SHARE.
 * Reads of several statements (history, summary) run in one REPEATABLE READ snapshot, so they
 * agree with each other as SQLite's reads in one turn of the event loop do.
 */
import { and, count, eq, max } from "drizzle-orm";
import { notFound } from "../../errors/api-error.js";
import { textEquals } from "../list-predicates.js";
import { tagHistoryQuery, tagListConditions, tagsSummaryQueries } from "../registry-filters.js";
import { includedClasses, type TagColumns, tagColumns, tagNameTaken, tagRecordOf, tagUnchanged } from "../registry-rows.js";
import type { UpsertOutcome } from "../repos.js";
import { GeneratedTag, TAG_ORDERS, type TagFields, type TagListFilter, type TagRecord, type TagsRepository } from "../tags.js";
import { newUidp } from "../uidp.js";
import { type CountedChildren, countedChildren } from "./child-counts.js";
import type { PgDb } from "./connection.js";
import { keysetLists } from "./list-query.js";
import { findOrInsert, lockRepo, requireRepo, type TagRow, uniqueViolationAs } from "./registry-locks.js";
import { repos, tagHistory, tags } from "./schema.js";
import { readSnapshot, type Tx, writeTransaction } from "./transaction.js";

/** The unique index that holds one name per repo. */
const NAME_INDEX = "tags_repo_name_idx";

/** The WHERE of a tag list over this engine's table (also the end-of-life list's). */
export function tagListWhere(f: TagListFilter) {
  return tagListConditions(tags, f);
}

/**
 * A tag list's counter (child-counts.ts): the repo's tags are counted per generated class
 * ("tags.<class>", as the triggers key them), so the list's `include` is the kinds it adds up.
 */
function countedTags(f: TagListFilter): CountedChildren | undefined {
  const { include, ...rest } = f;
  const counted = countedChildren("tags", rest);
  if (counted === undefined) return undefined;
  const classes = includedClasses(include) ?? Object.values(GeneratedTag);
  return { parent: counted.parent, kinds: classes.map((c) => `tags.${c}`) };
}

/** The repo's tag of that name (locked FOR UPDATE when `lock`), if any. */
async function findTagByName(tx: Tx, repoUid: string, name: string, lock?: "update"): Promise<TagRow | undefined> {
  const q = tx
    .select()
    .from(tags)
    .where(and(eq(tags.repoUid, repoUid), textEquals(tags.name, name)));
  const [row] = lock ? await q.for(lock) : await q;
  return row;
}

/** The uid of the repo's tag named `name`, if any (the importer's lookup). */
export async function findTagUid(tx: Tx, repoUid: string, name: string): Promise<string | undefined> {
  return (await findTagByName(tx, repoUid, name))?.uid;
}

/** "From `now` on, the tag points at `digest`": a new tag or a changed digest (see SQLite's recordTagMove). */
async function recordTagMove(tx: Tx, tagUid: string, digest: string, now: number): Promise<void> {
  await tx.insert(tagHistory).values({ tagUid, digest, moveTime: now });
}

/** Writes `columns` over an existing (locked) tag, or nothing when they change nothing. */
async function rewriteTag(tx: Tx, existing: TagRow, columns: TagColumns, now: number): Promise<{ row: TagRecord; outcome: UpsertOutcome }> {
  if (tagUnchanged(existing, columns)) return { row: tagRecordOf(existing), outcome: "unchanged" };
  const row: TagRow = { ...existing, ...columns, updateTime: now };
  await tx.update(tags).set(row).where(eq(tags.uid, existing.uid));
  if (existing.digest !== columns.digest) await recordTagMove(tx, row.uid, row.digest, now);
  return { row: tagRecordOf(row), outcome: "updated" };
}

/**
 * Points the repo's tag `fields.name` at the digest, creating it when missing, in the caller's
 * transaction. Unchanged values leave update_time alone. @throws NOT_FOUND (repo).
 */
export async function upsertTagInTx(tx: Tx, repoUid: string, fields: TagFields, now: number): Promise<{ row: TagRecord; outcome: UpsertOutcome }> {
  await lockRepo(tx, repoUid, "share");
  const columns = tagColumns(fields);
  const fresh: TagRow = { uid: newUidp(repoUid), repoUid, ...columns, updateTime: now };
  const existing = await findOrInsert(
    () => findTagByName(tx, repoUid, fields.name, "update"),
    async () => {
      const inserted = await tx
        .insert(tags)
        .values(fresh)
        .onConflictDoNothing({ target: [tags.repoUid, tags.name] })
        .returning({ uid: tags.uid });
      return inserted.length > 0;
    },
  );
  if (existing) return rewriteTag(tx, existing, columns, now);
  await recordTagMove(tx, fresh.uid, fresh.digest, now);
  return { row: tagRecordOf(fresh), outcome: "loaded" };
}

export function createPostgresTagsRepository(db: PgDb): TagsRepository {
  const readTag = async (tx: Tx | PgDb, uid: string) => {
    const [row] = await tx.select().from(tags).where(textEquals(tags.uid, uid));
    return row;
  };

  return {
    async get(uid) {
      const row = await readTag(db, uid);
      return row && tagRecordOf(row);
    },

    async upsert(repoUid, fields, now) {
      return writeTransaction(db, async (tx) => (await upsertTagInTx(tx, repoUid, fields, now)).row);
    },

    async delete(uid) {
      await writeTransaction(db, async (tx) => {
        const deleted = await tx.delete(tags).where(eq(tags.uid, uid)).returning({ uid: tags.uid });
        if (deleted.length === 0) throw notFound("tag", uid);
      });
    },

    ...keysetLists(db, { table: tags, orders: TAG_ORDERS, where: tagListWhere, counted: countedTags, toRecord: tagRecordOf }),

    async replace(uid, fields, now) {
      try {
        return await writeTransaction(db, async (tx) => {
          // The repo before the tag, the order every writer here takes.
          const peek = await readTag(tx, uid);
          if (!peek) throw notFound("tag", uid);
          // A repo gone meanwhile took the tag along: the look below finds nothing.
          await tx.select({ uid: repos.uid }).from(repos).where(eq(repos.uid, peek.repoUid)).for("share");
          const [existing] = await tx.select().from(tags).where(eq(tags.uid, uid)).for("update");
          if (!existing) throw notFound("tag", uid);
          if (fields.name !== existing.name && (await findTagByName(tx, existing.repoUid, fields.name))) throw tagNameTaken(fields.name);
          return (await rewriteTag(tx, existing, tagColumns(fields), now)).row;
        });
      } catch (err) {
        throw uniqueViolationAs(err, NAME_INDEX, () => tagNameTaken(fields.name));
      }
    },

    async history(uid, range, limit) {
      return readSnapshot(db, async (tx) => {
        if (!(await readTag(tx, uid))) throw notFound("tag", uid);
        const q = tagHistoryQuery(tagHistory, uid, range);
        return tx
          .select({ digest: tagHistory.digest, moveTime: tagHistory.moveTime })
          .from(tagHistory)
          .where(q.where)
          .orderBy(...q.newestFirst)
          .limit(limit + 1);
      });
    },

    async summary(repoUid, include) {
      return readSnapshot(db, async (tx) => {
        await requireRepo(tx, repoUid);
        const q = tagsSummaryQueries(tags, repoUid, include);
        const [totals] = await tx
          .select({ n: count(), last: max(tags.updateTime) })
          .from(tags)
          .where(q.matching);
        const n = totals?.n ?? 0;
        if (n === 0) return { tagCount: 0, latestVersion: "" };
        const [named] = await tx.select().from(tags).where(q.namedLatest);
        const latest =
          named ??
          (
            await tx
              .select()
              .from(tags)
              .where(q.matching)
              .orderBy(...q.newestFirst)
              .limit(1)
          )[0];
        if (!latest) return { tagCount: n, lastUpdated: totals?.last ?? undefined, latestVersion: "" };
        const [version] = await tx
          .select({ name: tags.name })
          .from(tags)
          .where(q.versionsOf(latest))
          .orderBy(...q.longestFirst)
          .limit(1);
        return { tagCount: n, lastUpdated: totals?.last ?? undefined, latestTag: tagRecordOf(latest), latestVersion: version?.name ?? "" };
      });
    },
  };
}
