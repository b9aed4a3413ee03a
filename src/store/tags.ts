/**
 * Tags repository: every read and write of the `tags` table.
 *
 * A tag lives under a repo and is unique by name there; writing a tag that exists moves it
 * (CreateTag is an upsert, as published). Generated tags are classified on write
 * (`generatedKind`) so ListTags filters them with an indexed equality. No proto types here.
 */
import { and, eq, gte, inArray, sql } from "drizzle-orm";
import { notFound } from "../errors/api-error.js";
import type { Db } from "./db.js";
import { groupCommit } from "./group-commit.js";
import {
  allOf,
  type Bind,
  type KeysetQuery,
  parseStringList,
  preparedLists,
  type UidpFilter,
  uidpConditions,
  uidpShape,
  withinConditions,
  withinShape,
} from "./list-query.js";
import { requireRepo, type UpsertOutcome } from "./repos.js";
import { type TagRow, tags } from "./schema.js";
import { newUidp } from "./uidp.js";

/** Classes of build-system tags ListTags leaves out unless asked (tags.proto). */
export const GeneratedTag = { None: 0, Referrer: 1, Dated: 2, Epoch: 3 } as const;
export type GeneratedTag = (typeof GeneratedTag)[keyof typeof GeneratedTag];

/** Which class a tag name falls in: "sha256-*", "*-20yymmdd", "*-r<N>", or none. */
export function generatedKind(name: string): GeneratedTag {
  if (name.startsWith("sha256-")) return GeneratedTag.Referrer;
  if (/-20\d{6}$/.test(name)) return GeneratedTag.Dated;
  if (/-r\d+$/.test(name)) return GeneratedTag.Epoch;
  return GeneratedTag.None;
}

export interface TagRecord {
  readonly uid: string;
  readonly repoUid: string;
  readonly name: string;
  readonly digest: string;
  readonly deprecated: boolean;
  readonly bundles: readonly string[];
  readonly updateTime: number;
}

export interface TagFields {
  readonly name: string;
  readonly digest: string;
  readonly deprecated: boolean;
  readonly bundles: readonly string[];
}

export type TagOrder = "uid" | "name" | "update_time";

export interface TagListFilter {
  readonly uidp: UidpFilter;
  readonly name?: string;
  readonly digest?: string;
  /** Only tags with update_time at or after this (ms). */
  readonly updatedSince?: number;
  /** Generated classes to include besides ordinary tags. */
  readonly include: readonly GeneratedTag[];
  readonly within?: readonly string[];
}

const ORDER_COLUMNS = { uid: tags.uid, name: tags.name, update_time: tags.updateTime } as const;

function toTagRecord(row: TagRow): TagRecord {
  const { generated: _generated, ...rest } = row;
  return { ...rest, bundles: parseStringList(row.bundles) };
}

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
  const values = {
    name: fields.name,
    digest: fields.digest,
    deprecated: fields.deprecated,
    bundles: JSON.stringify(fields.bundles),
    generated: generatedKind(fields.name),
  };
  if (!existing) {
    const row: TagRow = { uid: newUidp(repoUid), repoUid, ...values, updateTime: now };
    tx.insert(tags).values(row).run();
    return { row: toTagRecord(row), outcome: "loaded" };
  }
  if (existing.digest === values.digest && existing.deprecated === values.deprecated && existing.bundles === values.bundles) {
    return { row: toTagRecord(existing), outcome: "unchanged" };
  }
  const row: TagRow = { ...existing, ...values, updateTime: now };
  tx.update(tags).set(row).where(eq(tags.uid, existing.uid)).run();
  return { row: toTagRecord(row), outcome: "updated" };
}

export interface TagsRepository {
  get(uid: string): Promise<TagRecord | undefined>;
  /** Create or move the tag (published upsert). @throws NOT_FOUND (repo). */
  upsert(repoUid: string, fields: TagFields, now: number): Promise<TagRecord>;
  /** @throws NOT_FOUND. */
  delete(uid: string): Promise<void>;
  list(filter: TagListFilter, page: KeysetQuery<TagOrder>): Promise<TagRecord[]>;
  count(filter: TagListFilter): Promise<number>;
  /** Every match in uid order, at most `max + 1` rows (the unpaged v1 list). */
  listAll(filter: TagListFilter, max: number): Promise<TagRecord[]>;
}

/** The WHERE of a tag list; exported for the query-plan test. */
export function tagListWhere(f: TagListFilter, bind: Bind = (v) => v) {
  const str = (v: string) => bind(v) as string;
  const num = (v: number) => bind(v) as number;
  return allOf([
    ...uidpConditions(tags.uid, tags.repoUid, f.uidp, bind),
    f.name !== undefined ? eq(tags.name, str(f.name)) : undefined,
    f.digest !== undefined ? eq(tags.digest, str(f.digest)) : undefined,
    f.updatedSince !== undefined ? gte(tags.updateTime, num(f.updatedSince)) : undefined,
    // Ordinary tags are always included; a full set of classes needs no condition at all.
    f.include.length >= 3 ? undefined : inArray(tags.generated, [GeneratedTag.None, ...f.include].map(num)),
    withinConditions(tags.uid, f.within, bind),
  ]);
}

/** Names the SQL text tagListWhere produces for `f` (list-query.ts preparedLists). */
function tagFilterShape(f: TagListFilter): string {
  const present = `${f.name !== undefined ? "n" : ""}${f.digest !== undefined ? "d" : ""}${f.updatedSince !== undefined ? "u" : ""}`;
  return `${uidpShape(f.uidp)}|${present}|g${f.include.length >= 3 ? "all" : f.include.length}|${withinShape(f.within)}`;
}

export function createTagsRepository(db: Db): TagsRepository {
  const getStmt = db.select().from(tags).where(eq(tags.uid, sql.placeholder("uid"))).prepare();
  const lists = preparedLists(db, tags, tags.uid, "tags");
  return {
    async get(uid) {
      const row = getStmt.get({ uid });
      return row ? toTagRecord(row) : undefined;
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
      const rows = lists.page(tagFilterShape(filter), (bind) => tagListWhere(filter, bind), ORDER_COLUMNS[page.order], page) as TagRow[];
      return rows.map(toTagRecord);
    },

    async count(filter) {
      return lists.count(tagFilterShape(filter), (bind) => tagListWhere(filter, bind));
    },

    async listAll(filter, max) {
      return db
        .select()
        .from(tags)
        .where(tagListWhere(filter))
        .orderBy(tags.uid)
        .limit(max + 1)
        .all()
        .map(toTagRecord);
    },
  };
}

export function tagOrderValue(row: TagRecord, order: TagOrder): string | number {
  switch (order) {
    case "uid":
      return row.uid;
    case "name":
      return row.name;
    case "update_time":
      return row.updateTime;
  }
}
