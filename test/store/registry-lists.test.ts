/**
 * Repos' and tags' list and count run statements prepared once per query shape: every filter
 * shape, asked again with other values, must answer for those values. Each answer is compared
 * with the same filter applied in JS to all rows, so a value left over from an earlier call
 * (or a shape key that misses a condition) shows up as a wrong row set or count. On every
 * engine through StoreEngine; SQLite's array-row mapper (rowMapper) on SQLite alone.
 */
import { getTableColumns, getTableName, is } from "drizzle-orm";
import { SQLiteTable } from "drizzle-orm/sqlite-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { StoreEngine } from "../../src/store/engine.js";
import type { RepoListFilter, RepoRecord, ReposRepository } from "../../src/store/repos.js";
import { sqliteConnectionOf } from "../../src/store/sqlite/engine.js";
import { rowMapper } from "../../src/store/sqlite/list-query.js";
import * as schema from "../../src/store/sqlite/schema.js";
import { GeneratedTag, generatedKind, type TagListFilter, type TagRecord, type TagsRepository } from "../../src/store/tags.js";
import { ENGINES, type OpenedEngine } from "../support/engines.js";

const NOW = 1_800_000_000_000;

/** Two orgs of three repos of five tags each, made through the repositories. */
async function seed(engine: StoreEngine): Promise<{ orgs: string[]; allRepos: RepoRecord[]; allTags: TagRecord[] }> {
  const { groups, repos, tags } = engine.repositories;
  const orgs: string[] = [];
  const allRepos: RepoRecord[] = [];
  const allTags: TagRecord[] = [];
  for (const name of ["org-a", "org-b"]) {
    orgs.push((await groups.create({ parentUid: null, name, description: "", verified: false, kind: 0 }, NOW)).uid);
  }
  let t = 0;
  for (const org of orgs) {
    for (const name of ["nginx", "redis", "python"]) {
      const repo = await repos.create(org, { name, description: "", catalogTier: 0, bundles: [], aliases: [], activeTags: [] }, NOW);
      allRepos.push(repo);
      for (const tagName of ["latest", "1.2", "1.2-r3", "1.2-20260101", "sha256-abc"]) {
        const digest = `sha256:${tagName === "latest" || tagName === "1.2" ? "d1" : "d2"}`;
        allTags.push(await tags.upsert(repo.uid, { name: tagName, digest, deprecated: false, bundles: [] }, NOW + t++));
      }
    }
  }
  return { orgs, allRepos, allTags };
}

const page = { order: "uid" as const, desc: false, offset: 0, limit: 1000 };
const uids = (rows: readonly { uid: string }[]) => rows.map((r) => r.uid).sort();
const under = (uid: string, scope: string) => uid === scope || uid.startsWith(`${scope}/`);

/** What the filter fields repos and tags share select, for one row. */
function sharedMatch(uid: string, parentUid: string, name: string, f: RepoListFilter | TagListFilter): boolean {
  return (
    (f.uidp.childrenOf === undefined || parentUid === f.uidp.childrenOf) &&
    (f.uidp.descendantsOf === undefined || uid.startsWith(`${f.uidp.descendantsOf}/`)) &&
    (f.name === undefined || name === f.name) &&
    (f.within === undefined || f.within.some((s) => under(uid, s)))
  );
}

function repoExpected(allRepos: readonly RepoRecord[], f: RepoListFilter): string[] {
  return uids(allRepos.filter((r) => sharedMatch(r.uid, r.parentUid, r.name, f)));
}

function tagExpected(allTags: readonly TagRecord[], f: TagListFilter): string[] {
  return uids(
    allTags.filter(
      (x) =>
        sharedMatch(x.uid, x.repoUid, x.name, f) &&
        (f.digest === undefined || x.digest === f.digest) &&
        (f.updatedSince === undefined || x.updateTime >= f.updatedSince) &&
        (f.include.length >= 3 || [GeneratedTag.None, ...f.include].includes(generatedKind(x.name))),
    ),
  );
}

/** Every filter, in order: the listed uids and the count are those `expected` computes. */
async function expectAnswers<F>(
  repo: { list(f: F, p: typeof page): Promise<{ uid: string }[]>; count(f: F): Promise<number> },
  filters: readonly F[],
  expected: (f: F) => string[],
) {
  for (const f of filters) {
    const want = expected(f);
    expect(uids(await repo.list(f, page)), JSON.stringify(f)).toEqual(want);
    expect(await repo.count(f), JSON.stringify(f)).toBe(want.length);
  }
}

describe.each(ENGINES)("registry lists on $name", (engineUnderTest) => {
  let opened: OpenedEngine;
  let orgs: string[];
  let allRepos: RepoRecord[];
  let allTags: TagRecord[];
  let repos: ReposRepository;
  let tags: TagsRepository;

  beforeAll(async () => {
    opened = await engineUnderTest.open(NOW);
    ({ repos, tags } = opened.engine.repositories);
    ({ orgs, allRepos, allTags } = await seed(opened.engine));
  });
  afterAll(async () => {
    await opened.close();
  });

  describe("repos and tags list/count with cached prepared statements", () => {
    it("repos: each shape, asked twice with other values, answers for those values", async () => {
      const [a, b] = orgs as [string, string];
      const filters: RepoListFilter[] = [];
      for (const org of [a, b, a]) {
        filters.push(
          { uidp: { childrenOf: org } },
          { uidp: { childrenOf: org }, name: "nginx" },
          { uidp: { descendantsOf: org }, name: "redis" },
          { uidp: {}, within: [org] },
        );
      }
      filters.push({ uidp: {}, name: "python", within: [a, b] }, { uidp: {}, within: [] }, { uidp: {}, name: "nope" });
      await expectAnswers(repos, filters, (f) => repoExpected(allRepos, f));
    });

    it("tags: names, digests, update times, generated classes and scopes, each shape with other values", async () => {
      const repoA = allRepos[0]?.uid as string;
      const repoB = allRepos[4]?.uid as string;
      const filters: TagListFilter[] = [];
      for (const repo of [repoA, repoB, repoA]) {
        filters.push(
          { uidp: { childrenOf: repo }, include: [] },
          { uidp: { childrenOf: repo }, include: [GeneratedTag.Epoch] },
          { uidp: { childrenOf: repo }, include: [GeneratedTag.Dated, GeneratedTag.Referrer] },
          { uidp: { childrenOf: repo }, include: [GeneratedTag.Referrer, GeneratedTag.Dated, GeneratedTag.Epoch] },
          { uidp: { descendantsOf: repo }, name: "latest", include: [] },
          { uidp: { descendantsOf: repo }, digest: "sha256:d2", include: [GeneratedTag.Epoch] },
        );
      }
      for (const since of [NOW + 3, NOW + 20, NOW]) filters.push({ uidp: {}, updatedSince: since, include: [GeneratedTag.Dated], within: [orgs[1] as string] });
      filters.push({ uidp: {}, name: "1.2", digest: "sha256:d1", include: [], within: [] });
      await expectAnswers(tags, filters, (f) => tagExpected(allTags, f));
    });

    it("tags: limit, offset and the keyset cursor are values, not part of the statement", async () => {
      const repo = allRepos[1]?.uid as string;
      const f: TagListFilter = { uidp: { childrenOf: repo }, include: [GeneratedTag.Referrer, GeneratedTag.Dated, GeneratedTag.Epoch] };
      const all = uids(await tags.list(f, page));
      expect(all).toHaveLength(5);
      expect(uids(await tags.list(f, { ...page, limit: 2 }))).toEqual(all.slice(0, 2));
      expect(uids(await tags.list(f, { ...page, limit: 2, offset: 1 }))).toEqual(all.slice(1, 3));
      const after = { value: all[2] as string, uid: all[2] as string };
      expect(uids(await tags.list(f, { ...page, after }))).toEqual(all.slice(3));
      const byTime = await tags.list(f, { ...page, order: "update_time" as never, desc: true, limit: 2 });
      expect(byTime.map((x) => x.updateTime)).toEqual([...byTime.map((x) => x.updateTime)].sort((p, q) => q - p));
    });
  });
});

// rowMapper turns the array rows of SQLite's prepared statements into records; it is part of
// the SQLite engine, and drizzle's SQLite all() is what it must agree with.
describe.each(ENGINES.filter((e) => e.name === "sqlite"))("rowMapper, SQLite only", (engineUnderTest) => {
  let opened: OpenedEngine;
  beforeAll(async () => {
    opened = await engineUnderTest.open(NOW);
    await seed(opened.engine);
  });
  afterAll(async () => {
    await opened.close();
  });

  it("maps array rows of every table exactly as drizzle's all() maps them", () => {
    const db = sqliteConnectionOf(opened.engine);
    let rows = 0;
    for (const table of (Object.values(schema) as unknown[]).filter((t): t is SQLiteTable => is(t, SQLiteTable))) {
      const columns = getTableColumns(table);
      const ours = db.select(columns).from(table).values().map(rowMapper(columns));
      const drizzles = db.select().from(table).all();
      expect(ours, getTableName(table)).toEqual(drizzles);
      rows += ours.length;
    }
    // groups, repos and tags hold rows here (text, integer, boolean and JSON-list columns).
    expect(rows).toBeGreaterThan(30);
  });
});
