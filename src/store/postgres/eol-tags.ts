/**
 * End-of-life facts about tags on PostgreSQL: the EolTagsRepository contract
 * (src/store/eol-tags.ts), as SQLite's (src/store/sqlite/eol-tags.ts), and the importer's
 * writer of them. The writer locks the tag FOR SHARE (registry-locks.ts: no facts for a tag
 * being deleted, whose delete takes them along by cascade), then the facts' row FOR UPDATE, and
 * writes with INSERT … ON CONFLICT DO UPDATE: two writers of one tag's facts end with one row.
 */
import { and, asc, eq, gt } from "drizzle-orm";
import { notFound } from "../../errors/api-error.js";
import type { EolFields, EolTagsRepository } from "../eol-tags.js";
import { eolColumns, eolRecordOf, eolUnchanged } from "../registry-rows.js";
import type { UpsertOutcome } from "../repos.js";
import type { PgDb } from "./connection.js";
import { eolTags, tags } from "./schema.js";
import { tagListWhere } from "./tags.js";
import type { Tx } from "./transaction.js";

/**
 * Sets the tag's end-of-life facts, in the caller's transaction (the importer's). @throws
 * NOT_FOUND (tag; also one deleted by another writer since the importer looked it up).
 */
export async function upsertEolTagInTx(tx: Tx, tagUid: string, fields: EolFields, now: number): Promise<UpsertOutcome> {
  const [tag] = await tx.select({ uid: tags.uid }).from(tags).where(eq(tags.uid, tagUid)).for("share");
  if (!tag) throw notFound("tag", tagUid);
  const values = eolColumns(fields);
  const [existing] = await tx.select().from(eolTags).where(eq(eolTags.tagUid, tagUid)).for("update");
  if (eolUnchanged(existing, values)) return "unchanged";
  await tx
    .insert(eolTags)
    .values({ tagUid, ...values, updateTime: now })
    .onConflictDoUpdate({ target: eolTags.tagUid, set: { ...values, updateTime: now } });
  return existing ? "updated" : "loaded";
}

export function createPostgresEolTagsRepository(db: PgDb): EolTagsRepository {
  return {
    async list(filter, afterUid, limit) {
      const rows = await db
        .select({ eol: eolTags, tagName: tags.name })
        .from(eolTags)
        .innerJoin(tags, eq(tags.uid, eolTags.tagUid))
        .where(and(tagListWhere(filter), afterUid !== undefined ? gt(tags.uid, afterUid) : undefined))
        .orderBy(asc(tags.uid))
        .limit(limit);
      return rows.map(({ eol, tagName }) => eolRecordOf(eol, tagName));
    },
  };
}
