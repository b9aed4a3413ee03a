/**
 * Repos repository: every read and write of the `repos` table (and the cascade to `tags`).
 *
 * A repo lives under a group and its name is unique there. Writes run in one BEGIN IMMEDIATE
 * transaction; `upsertRepoInTx` is the synchronous form the importer and v1 CreateRepo use
 * inside their own transaction. No proto types enter here.
 */
import { and, eq, sql } from "drizzle-orm";
import { notFound } from "../../errors/api-error.js";
import type { Db } from "./db.js";
import { groupCommit } from "./group-commit.js";
import { allOf, type Bind, preparedLists, uidpConditions, withinConditions } from "./list-query.js";
import { requireGroup } from "./references.js";
import { type RepoRow, repos, tags } from "./schema.js";
import { newUidp } from "../uidp.js";
import { REPO_ORDERS, type RepoRecord, type RepoFields, type RepoListFilter, type UpsertOutcome, type ReposRepository } from "../repos.js";
import { repoColumns, repoNameTaken, repoRecordOf, repoUnchanged } from "../registry-rows.js";

/** The group's repo of that name, if any. Runs in the caller's transaction. */
export function findRepoByName(tx: Db, parentUid: string, name: string): RepoRow | undefined {
  return tx
    .select()
    .from(repos)
    .where(and(eq(repos.parentUid, parentUid), eq(repos.name, name)))
    .get();
}

/** NOT_FOUND unless the repo exists; returns it. Runs in the caller's transaction. */
export function requireRepo(tx: Db, uid: string): RepoRow {
  const row = tx.select().from(repos).where(eq(repos.uid, uid)).get();
  if (!row) throw notFound("repo", uid);
  return row;
}

/**
 * Inserts the group's repo named `fields.name`, or updates it in place (keeping uid and
 * create_time) when it exists. An update that changes nothing leaves update_time alone.
 */
export function upsertRepoInTx(tx: Db, parentUid: string, fields: RepoFields, now: number): { row: RepoRecord; outcome: UpsertOutcome } {
  requireGroup(tx, parentUid);
  const existing = findRepoByName(tx, parentUid, fields.name);
  const cols = repoColumns(fields);
  if (!existing) {
    const row = { uid: newUidp(parentUid), parentUid, ...cols, createTime: now, updateTime: now } as RepoRow;
    tx.insert(repos).values(row).run();
    return { row: repoRecordOf(tx.select().from(repos).where(eq(repos.uid, row.uid)).get() as RepoRow), outcome: "loaded" };
  }
  if (repoUnchanged(existing, cols)) return { row: repoRecordOf(existing), outcome: "unchanged" };
  tx.update(repos)
    .set({ ...cols, updateTime: now })
    .where(eq(repos.uid, existing.uid))
    .run();
  return { row: repoRecordOf(requireRepo(tx, existing.uid)), outcome: "updated" };
}

export function createReposRepository(db: Db): ReposRepository {
  const getStmt = db
    .select()
    .from(repos)
    .where(eq(repos.uid, sql.placeholder("uid")))
    .prepare();
  const where = (f: RepoListFilter, bind?: Bind) =>
    allOf([
      ...uidpConditions(repos.uid, repos.parentUid, f.uidp, bind),
      f.name !== undefined ? eq(repos.name, (bind ? bind(f.name) : f.name) as string) : undefined,
      withinConditions(repos.uid, f.within, bind),
    ]);
  // list and count run statements prepared once per query shape (list-query.ts preparedLists).
  const lists = preparedLists(db, repos, repos.uid, "repos");

  return {
    async get(uid) {
      const row = getStmt.get({ uid });
      return row ? repoRecordOf(row) : undefined;
    },

    async create(parentUid, fields, now) {
      return groupCommit(db, (tx) => {
        requireGroup(tx, parentUid);
        if (findRepoByName(tx, parentUid, fields.name)) throw repoNameTaken(fields.name);
        return upsertRepoInTx(tx, parentUid, fields, now).row;
      });
    },

    async upsert(parentUid, fields, now, mayReplace) {
      return groupCommit(db, (tx) => {
        const existing = findRepoByName(tx, parentUid, fields.name);
        if (existing) mayReplace?.(existing.uid);
        return upsertRepoInTx(tx, parentUid, fields, now).row;
      });
    },

    async update(uid, changes, now) {
      return groupCommit(db, (tx) => {
        const existing = requireRepo(tx, uid);
        if (changes.name !== undefined && changes.name !== existing.name) {
          if (findRepoByName(tx, existing.parentUid, changes.name)) throw repoNameTaken(changes.name);
        }
        tx.update(repos)
          .set({ ...repoColumns(changes), updateTime: now })
          .where(eq(repos.uid, uid))
          .run();
        return repoRecordOf(requireRepo(tx, uid));
      });
    },

    async delete(uid) {
      await groupCommit(db, (tx) => {
        requireRepo(tx, uid);
        tx.delete(tags).where(eq(tags.repoUid, uid)).run();
        tx.delete(repos).where(eq(repos.uid, uid)).run();
      });
    },

    async list(filter, page) {
      const rows = lists.page((bind) => where(filter, bind), repos[REPO_ORDERS.fields[page.order]], page) as RepoRow[];
      return rows.map(repoRecordOf);
    },

    async count(filter) {
      return lists.count((bind) => where(filter, bind));
    },

    async listAll(filter, max) {
      return db
        .select()
        .from(repos)
        .where(where(filter))
        .orderBy(repos.uid)
        .limit(max + 1)
        .all()
        .map(repoRecordOf);
    },
  };
}
