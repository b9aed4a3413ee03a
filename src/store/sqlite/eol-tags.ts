/**
 * End-of-life facts about tags (v1 ListEolTags), in `eol_tags`: what `trellis import` loaded
 * about a tag's main package. Trellis has no package feed, so a tag without imported facts is
 * simply not listed. No proto types here.
 */
import { and, asc, eq, gt } from "drizzle-orm";
import { notFound } from "../../errors/api-error.js";
import type { Db } from "./db.js";
import type { UpsertOutcome } from "../repos.js";
import { eolTags, tags } from "./schema.js";
import { tagListWhere } from "./tags.js";
import type { EolFields, EolTagsRepository } from "../eol-tags.js";
import { eolColumns, eolRecordOf, eolUnchanged } from "../registry-rows.js";

/** Sets the tag's end-of-life facts, in the caller's transaction (the importer's). @throws NOT_FOUND (tag). */
export function upsertEolTagInTx(tx: Db, tagUid: string, fields: EolFields, now: number): UpsertOutcome {
  // NOT_FOUND as on every engine, rather than the foreign key's failure.
  if (!tx.select({ uid: tags.uid }).from(tags).where(eq(tags.uid, tagUid)).get()) throw notFound("tag", tagUid);
  const values = eolColumns(fields);
  const existing = tx.select().from(eolTags).where(eq(eolTags.tagUid, tagUid)).get();
  if (eolUnchanged(existing, values)) return "unchanged";
  tx.insert(eolTags)
    .values({ tagUid, ...values, updateTime: now })
    .onConflictDoUpdate({ target: eolTags.tagUid, set: { ...values, updateTime: now } })
    .run();
  return existing ? "updated" : "loaded";
}

export function createEolTagsRepository(db: Db): EolTagsRepository {
  return {
    async list(filter, afterUid, limit) {
      return db
        .select({ eol: eolTags, tagName: tags.name })
        .from(eolTags)
        .innerJoin(tags, eq(tags.uid, eolTags.tagUid))
        .where(and(tagListWhere(filter), afterUid !== undefined ? gt(tags.uid, afterUid) : undefined))
        .orderBy(asc(tags.uid))
        .limit(limit)
        .all()
        .map(({ eol, tagName }) => eolRecordOf(eol, tagName));
    },
  };
}
