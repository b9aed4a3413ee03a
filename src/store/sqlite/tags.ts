/**
 * Tags repository: every read and write of the `tags` table.
 *
 * A tag lives under a repo and is unique by name there; writing a tag that exists moves it
 * (CreateTag is an upsert, as published). Generated tags are classified on write
 * (`generatedKind`) so ListTags filters them with an indexed equality. Every writer records
 * the tag's moves in `tag_history` in the same transaction (`recordTagMove`). No proto types
 * here.
 */
import { and, count, desc, eq, gte, lt, max, sql } from "drizzle-orm";
import { notFound } from "../../errors/api-error.js";
import type { Db } from "./db.js";
import { groupCommit } from "./group-commit.js";
import type { Bind } from "../list-predicates.js";
import { tagListConditions, tagsSummaryQueries } from "../registry-filters.js";
import { preparedLists } from "./list-query.js";
import { type TagColumns, tagColumns, tagNameTaken, tagRecordOf, tagUnchanged } from "../registry-rows.js";
import { requireRepo } from "./repos.js";
import type { UpsertOutcome } from "../repos.js";
import { tagHistory, type TagRow, tags } from "./schema.js";
import { newUidp } from "../uidp.js";
import { TAG_ORDERS, type TagRecord, type TagFields, type TagListFilter, type TagsRepository } from "../tags.js";

/**
 * Points the repo's tag `fields.name` at the digest, creating it when missing. Unchanged
 * values leave update_time alone. Runs in the caller's transaction. @throws NOT_FOUND (repo).
 */
export function upsertTagInTx(tx: Db, repoUid: string, fields: TagFields, now: number): { row: TagRecord; outcome: UpsertOutcome } {
  requireRepo(tx, repoUid);
  const existing = tx
    .select()
    .from(tags)
    .where(and(eq(tags.repoUid, repoUid), eq(tags.name, fields.name)))
    .get();
  const values = tagColumns(fields);
  if (!existing) {
    const row: TagRow = { uid: newUidp(repoUid), repoUid, ...values, updateTime: now };
    tx.insert(tags).values(row).run();
    recordTagMove(tx, row.uid, row.digest, now);
    return { row: tagRecordOf(row), outcome: "loaded" };
  }
  return rewriteTag(tx, existing, values, now);
}

/** The uid of the repo's tag named `name`, if any. Runs in the caller's transaction. */
export function findTagUid(tx: Db, repoUid: string, name: string): string | undefined {
  return tx
    .select({ uid: tags.uid })
    .from(tags)
    .where(and(eq(tags.repoUid, repoUid), eq(tags.name, name)))
    .get()?.uid;
}

/** Writes `values` over an existing tag, or nothing when they change nothing. */
function rewriteTag(tx: Db, existing: TagRow, values: TagColumns, now: number) {
  if (tagUnchanged(existing, values)) {
    return { row: tagRecordOf(existing), outcome: "unchanged" as UpsertOutcome };
  }
  const row: TagRow = { ...existing, ...values, updateTime: now };
  tx.update(tags).set(row).where(eq(tags.uid, existing.uid)).run();
  if (existing.digest !== values.digest) recordTagMove(tx, row.uid, row.digest, now);
  return { row: tagRecordOf(row), outcome: "updated" as UpsertOutcome };
}

/**
 * Appends "from `now` on, the tag points at `digest`" to its history. Only a new tag or a
 * changed digest is a move (deprecating or relabelling a tag is not). Runs in the writer's
 * transaction, so a tag and its history never disagree.
 */
export function recordTagMove(tx: Db, tagUid: string, digest: string, now: number): void {
  tx.insert(tagHistory).values({ tagUid, digest, moveTime: now }).run();
}

/**
 * v1 UpdateTag: replaces every caller-set field of the tag `uid` (a PUT). Renaming onto a
 * name the repo already uses is ALREADY_EXISTS. @throws NOT_FOUND.
 */
export function replaceTagInTx(tx: Db, uid: string, fields: TagFields, now: number): TagRecord {
  const existing = tx.select().from(tags).where(eq(tags.uid, uid)).get();
  if (!existing) throw notFound("tag", uid);
  if (fields.name !== existing.name) {
    const clash = tx
      .select({ uid: tags.uid })
      .from(tags)
      .where(and(eq(tags.repoUid, existing.repoUid), eq(tags.name, fields.name)))
      .get();
    if (clash) throw tagNameTaken(fields.name);
  }
  const values = tagColumns(fields);
  return rewriteTag(tx, existing, values, now).row;
}

/** The WHERE of a tag list (registry-filters.ts) over this engine's table. */
export function tagListWhere(f: TagListFilter, bind?: Bind) {
  return tagListConditions(tags, f, bind);
}

export function createTagsRepository(db: Db): TagsRepository {
  const getStmt = db
    .select()
    .from(tags)
    .where(eq(tags.uid, sql.placeholder("uid")))
    .prepare();
  const lists = preparedLists(db, tags, tags.uid, "tags");
  return {
    async get(uid) {
      const row = getStmt.get({ uid });
      return row ? tagRecordOf(row) : undefined;
    },

    async upsert(repoUid, fields, now) {
      return groupCommit(db, (tx) => upsertTagInTx(tx, repoUid, fields, now).row);
    },

    async delete(uid) {
      await groupCommit(db, (tx) => {
        const found = tx.select({ uid: tags.uid }).from(tags).where(eq(tags.uid, uid)).get();
        if (!found) throw notFound("tag", uid);
        tx.delete(tags).where(eq(tags.uid, uid)).run();
      });
    },

    async list(filter, page) {
      const rows = lists.page((bind) => tagListWhere(filter, bind), tags[TAG_ORDERS.fields[page.order]], page) as TagRow[];
      return rows.map(tagRecordOf);
    },

    async count(filter) {
      return lists.count((bind) => tagListWhere(filter, bind));
    },

    async listAll(filter, max) {
      return db
        .select()
        .from(tags)
        .where(tagListWhere(filter))
        .orderBy(tags.uid)
        .limit(max + 1)
        .all()
        .map(tagRecordOf);
    },

    async replace(uid, fields, now) {
      return groupCommit(db, (tx) => replaceTagInTx(tx, uid, fields, now));
    },

    async history(uid, range, limit) {
      const found = getStmt.get({ uid });
      if (!found) throw notFound("tag", uid);
      return db
        .select({ digest: tagHistory.digest, moveTime: tagHistory.moveTime })
        .from(tagHistory)
        .where(
          and(
            eq(tagHistory.tagUid, uid),
            range.start !== undefined ? gte(tagHistory.moveTime, range.start) : undefined,
            range.end !== undefined ? lt(tagHistory.moveTime, range.end) : undefined,
          ),
        )
        .orderBy(desc(tagHistory.moveTime), desc(tagHistory.seq))
        .limit(limit + 1)
        .all();
    },

    async summary(repoUid, include) {
      // Synchronous reads, one after another in the same turn: no write of this server comes
      // between them, so the count, the latest tag and its versions agree.
      const tx = db;
      {
        requireRepo(tx, repoUid);
        const q = tagsSummaryQueries(tags, repoUid, include);
        const totals = tx
          .select({ n: count(), last: max(tags.updateTime) })
          .from(tags)
          .where(q.matching)
          .get();
        const n = totals?.n ?? 0;
        if (n === 0) return { tagCount: 0, latestVersion: "" };
        const latest =
          tx.select().from(tags).where(q.namedLatest).get() ??
          tx
            .select()
            .from(tags)
            .where(q.matching)
            .orderBy(...q.newestFirst)
            .limit(1)
            .get();
        if (!latest) return { tagCount: n, lastUpdated: totals?.last ?? undefined, latestVersion: "" };
        const version = tx
          .select({ name: tags.name })
          .from(tags)
          .where(q.versionsOf(latest))
          .orderBy(...q.longestFirst)
          .limit(1)
          .get();
        return { tagCount: n, lastUpdated: totals?.last ?? undefined, latestTag: tagRecordOf(latest), latestVersion: version?.name ?? "" };
      }
    },
  };
}
