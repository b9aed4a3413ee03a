/**
 * The registry repositories, advisories and the importer's writer on PostgreSQL
 * (src/store/postgres/) against the real cluster:
 * - the same answers as SQLite's for the same rows: a SQLite store is filled through its
 *   repositories and importer, copied verbatim (`trellis db copy`), and every List (each
 *   filter, order and direction, followed page by page), count, summary, history and read is
 *   compared with SQLite's answer on the same data;
 * - the invariants with writers on two engines at once (two replicas on one database): one
 *   repo name per group and one tag name per repo, racing upserts ending in one row, no
 *   record left without its parent when the parent is deleted meanwhile;
 * - the importer's bounded lock wait (a row held elsewhere: StorageError "busy", not a hang)
 *   and a lost connection mid-batch (StorageError, the batch rolled back).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { alreadyExists, ApiError, GrpcCode, notFound } from "../../src/errors/api-error.js";
import { StorageError, storageFailureOf } from "../../src/errors/storage-error.js";
import { ADVISORY_ORDERS, type AdvisoryFields, type AdvisoryListFilter } from "../../src/store/advisories.js";
import type { StoreEngine } from "../../src/store/engine.js";
import { copySqliteToPostgres } from "../../src/store/postgres/copy.js";
import { openPostgresEngine, type PostgresEngine, postgresPoolOf } from "../../src/store/postgres/engine.js";
import { REPO_ORDERS, type RepoFields, type RepoListFilter } from "../../src/store/repos.js";
import { openSqliteEngine } from "../../src/store/sqlite/engine.js";
import { GeneratedTag, TAG_ORDERS, type TagListFilter } from "../../src/store/tags.js";
import { expectSamePages } from "../support/store-answers.js";
import { describePostgres, freshPostgresDatabase } from "../support/postgres.js";

const NOW = 1_700_000_000_000;

const repoFields = (name: string): RepoFields => ({
  name,
  description: `about ${name}`,
  catalogTier: name.length % 3,
  bundles: ["b"],
  aliases: [],
  activeTags: [],
});

/** Names whose bytewise order differs from a dictionary's, with case and punctuation ties. */
const NAMES = ["nginx", "Nginx", "_under", "a b", "a-b", "a.b", "0zero", "Zed"];
const TAG_NAMES = ["latest", "Latest", "1.2", "1.2.3", "1.2-r1", "1.2-20250101", "sha256-abc", "v_1"];

/** Pages of four, the first skipping a row: cursors and `skip` both at work. */
const PAGING = { limit: 4, firstOffset: 1 };

function advisory(i: number): AdvisoryFields {
  const pick = <T>(values: readonly T[]) => values[i % values.length] as T;
  return {
    advisoryId: `CGA-${i % 5}`,
    legacyAdvisoryId: i % 3 === 0 ? null : `LEG-${i % 3}`,
    author: "importer",
    artifactName: pick(["OpenSSL", "openssl", "zlib", "a%b", "a_b"]),
    artifactType: pick(["apk", "oci"]),
    artifactArchitecture: pick(["x86_64", "aarch64"]),
    componentName: pick(["libCrypto", "ÉCLAIR", "éclair", "100%"]),
    componentLocation: pick(["/usr/lib", "/bin"]),
    componentType: pick(["apk", "go-module"]),
    origin: i % 4 === 0 ? "origin-pkg" : undefined,
    aliases: [`CVE-2026-${i % 6}`, ...(i % 2 ? ["GHSA-x_y"] : [])],
    severities: [{ type: 1 + (i % 2), score: `${i}.0` }],
    deleteTime: i % 7 === 0 ? NOW + i : null,
    createTime: NOW + (i % 4),
    updateTime: NOW + 10 - (i % 5),
    events: [
      {
        author: pick(["ann", "bob"]),
        reviewer: "rev",
        reviewState: 1 + (i % 3),
        issue: i % 2 ? "ISSUE" : null,
        eventType: 1 + (i % 4),
        body: `{"n":${i}}`,
        findings: i % 3 ? null : new Uint8Array([i]),
      },
      ...(i % 2 ? [{ createTime: NOW + 20, author: "dee", reviewer: "rev-2", reviewState: 2, issue: null, eventType: 3, body: "{}", findings: null }] : []),
    ],
  };
}

/** Fills a store through its repositories and importer (uids are random: the copy carries them). */
async function seed(store: StoreEngine): Promise<void> {
  const r = store.repositories;
  const orgs: string[] = [];
  for (const name of ["org-a", "org-b"]) orgs.push((await r.groups.create({ parentUid: null, name, description: "", verified: false, kind: 0 }, NOW)).uid);
  await r.registrySettings.put(orgs[0]!, { uniqueTags: true, eolGracePeriod: false }, NOW);
  let t = 0;
  for (const org of orgs) {
    for (const [i, name] of NAMES.entries()) {
      const repo = await r.repos.create(org, repoFields(name), NOW + (i % 3));
      if (i % 2) await r.repos.update(repo.uid, { description: "changed" }, NOW + 5 + (i % 2));
      if (i % 3 === 0) await r.repoReadmes.put(repo.uid, `# ${name}`, NOW);
      if (i % 4 === 0) await r.repoDeployments.create(repo.uid, [{ repo: "charts", chart: name }], NOW);
      for (const [j, tag] of TAG_NAMES.entries()) {
        await r.tags.upsert(repo.uid, { name: tag, digest: `sha256:d${(i + j) % 3}`, deprecated: j === 2, bundles: [] }, NOW + (t++ % 7));
        if (j % 3 === 0) await r.tags.upsert(repo.uid, { name: tag, digest: "sha256:moved", deprecated: false, bundles: ["x"] }, NOW + 8);
      }
    }
  }
  await store.importer.transaction(async (tx) => {
    for (const org of orgs) {
      for (let i = 0; i < 20; i++) await tx.record((w) => w.upsertAdvisory(org, advisory(i), NOW));
      const repoUid = (await tx.record((w) => w.findRepoUid(org, "nginx"))) as string;
      for (const [j, tag] of ["latest", "1.2", "1.2-r1"].entries()) {
        const tagUid = (await tx.record((w) => w.findTagUid(repoUid, tag))) as string;
        await tx.record((w) =>
          w.upsertEolTag(
            tagUid,
            { mainPackageName: `pkg-${j}`, tagStatus: j, graceStatus: 1, gracePeriodExpiry: j ? NOW + j : undefined, mainPackageVersion: j ? undefined : "{}" },
            NOW,
          ),
        );
      }
    }
  });
}

async function rejection(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => {
      throw new Error("expected a rejection");
    },
    (e: unknown) => e,
  );
}

/**
 * Runs `write` while another writer's `insert` is in flight, not yet committed: invisible to
 * the write's own look-ups, so the write meets it only in a unique index, and waits; then the
 * other writer commits. Resolves to the write's error, or undefined when it succeeded.
 */
async function againstUncommitted(pool: pg.Pool, insert: string, params: unknown[], write: () => Promise<unknown>): Promise<unknown> {
  const holder = await pool.connect();
  try {
    await holder.query("BEGIN");
    await holder.query(insert, params);
    const outcome = write().then(
      () => undefined,
      (e: unknown) => e,
    );
    for (let waited = 0; ; waited += 10) {
      const { rows } = await holder.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'");
      if (rows[0].n >= 1) break;
      if (waited > 5000) throw new Error("the write never waited for the uncommitted row");
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await holder.query("COMMIT");
    return await outcome;
  } finally {
    await holder.query("ROLLBACK").catch(() => {});
    holder.release();
  }
}

describePostgres("the registry on PostgreSQL", () => {
  let dataDir: string;
  let lite: StoreEngine;
  let url: string;
  let a: PostgresEngine;
  let b: PostgresEngine;

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-pg-registry-"));
    lite = openSqliteEngine({ dataDir });
    await lite.ensureBuiltInRoles(NOW);
    await seed(lite);
    url = await freshPostgresDatabase("registry");
    await copySqliteToPostgres({ fromDir: dataDir, toUrl: url });
    [a, b] = await Promise.all([openPostgresEngine(url, { poolSize: 6, importLockTimeoutMs: 300 }), openPostgresEngine(url, { poolSize: 6 })]);
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    lite?.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it("lists, pages and counts repos and tags exactly as SQLite does for the same rows", async () => {
    const orgs = (await lite.repositories.groups.list({ uidp: { inRoot: true } }, { order: "uid", desc: false, offset: 0, limit: 10 })).map((g) => g.uid);
    const allRepos = await lite.repositories.repos.listAll({ uidp: {} }, 1000);
    const someRepo = allRepos[3]!.uid;
    const repoFilters: RepoListFilter[] = [
      { uidp: {} },
      { uidp: { childrenOf: orgs[0]! } },
      { uidp: { descendantsOf: orgs[1]! }, name: "Nginx" },
      { uidp: { ids: [someRepo, "f".repeat(40)] } },
      { uidp: {}, within: [orgs[1]!] },
      { uidp: {}, name: "a b" },
    ];
    for (const f of repoFilters) {
      await expectSamePages(lite.repositories.repos, a.repositories.repos, f, REPO_ORDERS, PAGING);
      expect(await a.repositories.repos.count(f)).toBe(await lite.repositories.repos.count(f));
      expect(await a.repositories.repos.listAll(f, 5)).toEqual(await lite.repositories.repos.listAll(f, 5));
    }
    const kinds = [GeneratedTag.Referrer, GeneratedTag.Dated, GeneratedTag.Epoch];
    const tagFilters: TagListFilter[] = [
      { uidp: {}, include: [] },
      { uidp: {}, include: kinds },
      { uidp: { childrenOf: someRepo }, include: [GeneratedTag.Epoch] },
      { uidp: { descendantsOf: orgs[0]! }, name: "Latest", include: [] },
      { uidp: {}, digest: "sha256:moved", updatedSince: NOW + 3, include: [GeneratedTag.Dated], within: [orgs[1]!] },
    ];
    for (const f of tagFilters) {
      await expectSamePages(lite.repositories.tags, a.repositories.tags, f, TAG_ORDERS, PAGING);
      expect(await a.repositories.tags.count(f)).toBe(await lite.repositories.tags.count(f));
      expect(await a.repositories.tags.listAll(f, 7)).toEqual(await lite.repositories.tags.listAll(f, 7));
      expect(await a.repositories.eolTags.list(f, undefined, 100)).toEqual(await lite.repositories.eolTags.list(f, undefined, 100));
    }
    // Per repo: the summary for each set of classes, every tag's history, the README, the deployment.
    for (const repo of allRepos) {
      for (const include of [[], [GeneratedTag.Epoch], kinds]) {
        expect(await a.repositories.tags.summary(repo.uid, include), repo.name).toEqual(await lite.repositories.tags.summary(repo.uid, include));
      }
      for (const tag of await lite.repositories.tags.listAll({ uidp: { childrenOf: repo.uid }, include: kinds }, 100)) {
        expect(await a.repositories.tags.history(tag.uid, { start: NOW + 1 }, 10)).toEqual(
          await lite.repositories.tags.history(tag.uid, { start: NOW + 1 }, 10),
        );
        expect(await a.repositories.tags.get(tag.uid)).toEqual(tag);
      }
      expect(await a.repositories.repoReadmes.get(repo.uid)).toBe(await lite.repositories.repoReadmes.get(repo.uid));
      const deployment = (s: StoreEngine) => s.repositories.repoDeployments.get(repo.uid).catch((e: unknown) => (e as ApiError).message);
      expect(await deployment(a)).toEqual(await deployment(lite));
    }
    const uids = allRepos.map((r) => r.uid);
    expect(await a.repositories.repoReadmes.many(uids)).toEqual(await lite.repositories.repoReadmes.many(uids));
    for (const org of orgs) expect(await a.repositories.registrySettings.get(org)).toEqual(await lite.repositories.registrySettings.get(org));
  });

  it("lists and counts advisories exactly as SQLite does, the free-text query's case and % _ included", async () => {
    const orgs = (await lite.repositories.groups.list({ uidp: { inRoot: true } }, { order: "uid", desc: false, offset: 0, limit: 10 })).map((g) => g.uid);
    const filters: AdvisoryListFilter[] = [
      { uidp: {} },
      { uidp: { childrenOf: orgs[1]! }, advisoryIds: ["CGA-1", "CGA-3"] },
      { uidp: {}, artifactNames: ["openssl"] },
      { uidp: {}, origin: "origin-pkg" },
      { uidp: {}, aliases: ["GHSA-x_y"], eventReviewStates: [2] },
      { uidp: {}, excludeEventAuthors: ["dee"], eventTypes: [1, 4] },
      { uidp: {}, latestEventType: 3, within: [orgs[0]!] },
      ...["openssl", "OPENSSL", "Crypto", "éclair", "ÉCLAIR", "%", "_", "a_b", "x_y", "100%", "cve-2026-3", "\u0000"].map((query) => ({ uidp: {}, query })),
    ];
    for (const f of filters) {
      await expectSamePages(lite.repositories.advisories, a.repositories.advisories, f, ADVISORY_ORDERS, PAGING);
      expect(await a.repositories.advisories.count(f), JSON.stringify(f)).toBe(await lite.repositories.advisories.count(f));
    }
    const one = (await lite.repositories.advisories.list({ uidp: {} }, { order: "uid", desc: false, offset: 3, limit: 1 }))[0]!;
    expect(await a.repositories.advisories.get(one.uid)).toEqual(one);
    // The re-import of the same records changes nothing on either engine.
    const outcomes = async (s: StoreEngine) =>
      s.importer.transaction(async (tx) => {
        const out: string[] = [];
        for (let i = 0; i < 20; i++) out.push(await tx.record((w) => w.upsertAdvisory(orgs[0]!, advisory(i), NOW + 100)));
        return out;
      });
    expect(await outcomes(a)).toEqual(await outcomes(lite));
  });

  it("creates one repo per name when replicas race, the losers ALREADY_EXISTS as on SQLite", async () => {
    const org = await a.repositories.groups.create({ parentUid: null, name: "race", description: "", verified: false, kind: 0 }, NOW);
    for (let round = 0; round < 6; round++) {
      const name = `same-${round}`;
      const outcomes = await Promise.allSettled(Array.from({ length: 6 }, (_, i) => (i % 2 ? a : b).repositories.repos.create(org.uid, repoFields(name), NOW)));
      expect(outcomes.filter((o) => o.status === "fulfilled")).toHaveLength(1);
      for (const o of outcomes) {
        if (o.status === "rejected") expect(o.reason).toEqual(alreadyExists("repo", name, `the group already has a repo named ${JSON.stringify(name)}`));
      }
    }
    // A rename racing a create onto one name: one of them wins, the other ALREADY_EXISTS.
    for (let round = 0; round < 6; round++) {
      const repo = await a.repositories.repos.create(org.uid, repoFields(`rename-${round}`), NOW);
      const target = `target-${round}`;
      const outcomes = await Promise.allSettled([
        b.repositories.repos.update(repo.uid, { name: target }, NOW),
        a.repositories.repos.create(org.uid, repoFields(target), NOW),
      ]);
      expect(outcomes.filter((o) => o.status === "fulfilled")).toHaveLength(1);
      const lost = outcomes.find((o) => o.status === "rejected") as PromiseRejectedResult;
      expect(lost.reason).toEqual(alreadyExists("repo", target, `the group already has a repo named ${JSON.stringify(target)}`));
    }
    const { rows } = await postgresPoolOf(a).query("SELECT name, count(*)::int AS n FROM repos WHERE parent_uid = $1 GROUP BY name HAVING count(*) > 1", [
      org.uid,
    ]);
    expect(rows).toEqual([]);
  });

  it("answers a rename onto a name another replica commits meanwhile with SQLite's ALREADY_EXISTS (repo and tag)", async () => {
    const org = await a.repositories.groups.create({ parentUid: null, name: "renames", description: "", verified: false, kind: 0 }, NOW);
    const repo = await a.repositories.repos.create(org.uid, repoFields("old"), NOW);
    const tag = await a.repositories.tags.upsert(repo.uid, { name: "old", digest: "sha256:1", deprecated: false, bundles: [] }, NOW);
    const repoErr = await againstUncommitted(
      postgresPoolOf(b),
      "INSERT INTO repos (uid, parent_uid, name, create_time, update_time) VALUES ($1, $2, 'taken', 0, 0)",
      [`${org.uid}/00000000000000aa`, org.uid],
      () => a.repositories.repos.update(repo.uid, { name: "taken" }, NOW + 1),
    );
    expect(repoErr).toEqual(alreadyExists("repo", "taken", 'the group already has a repo named "taken"'));
    const tagErr = await againstUncommitted(
      postgresPoolOf(b),
      "INSERT INTO tags (uid, repo_uid, name, digest, update_time) VALUES ($1, $2, 'taken', 'd', 0)",
      [`${repo.uid}/00000000000000bb`, repo.uid],
      () => a.repositories.tags.replace(tag.uid, { name: "taken", digest: "sha256:1", deprecated: false, bundles: [] }, NOW + 1),
    );
    expect(tagErr).toEqual(alreadyExists("tag", "taken", 'the repo already has a tag named "taken"'));
    expect((await a.repositories.repos.get(repo.uid))?.name).toBe("old");
    expect((await a.repositories.tags.get(tag.uid))?.name).toBe("old");
  });

  it("turns an upsert that lost its insert to another replica into an update of that replica's row", async () => {
    const org = await a.repositories.groups.create({ parentUid: null, name: "lost-inserts", description: "", verified: false, kind: 0 }, NOW);
    const repoUid = `${org.uid}/00000000000000cc`;
    let repo: unknown;
    expect(
      await againstUncommitted(
        postgresPoolOf(b),
        "INSERT INTO repos (uid, parent_uid, name, description, create_time, update_time) VALUES ($1, $2, 'shared', 'theirs', 5, 5)",
        [repoUid, org.uid],
        async () => {
          repo = await a.repositories.repos.upsert(org.uid, repoFields("shared"), NOW);
        },
      ),
    ).toBeUndefined();
    expect(repo).toEqual({ ...repoFields("shared"), uid: repoUid, parentUid: org.uid, createTime: 5, updateTime: NOW });
    const tagUid = `${repoUid}/00000000000000dd`;
    let outcome: unknown;
    expect(
      await againstUncommitted(
        postgresPoolOf(b),
        "INSERT INTO tags (uid, repo_uid, name, digest, update_time) VALUES ($1, $2, 'latest', 'sha256:theirs', 5)",
        [tagUid, repoUid],
        async () => {
          outcome = await a.importer.transaction((tx) =>
            tx.record((w) => w.upsertTag(repoUid, { name: "latest", digest: "sha256:ours", deprecated: false, bundles: [] }, NOW)),
          );
        },
      ),
    ).toBeUndefined();
    expect(outcome).toBe("updated");
    expect(await a.repositories.tags.get(tagUid)).toEqual({
      uid: tagUid,
      repoUid,
      name: "latest",
      digest: "sha256:ours",
      deprecated: false,
      bundles: [],
      updateTime: NOW,
    });
    expect(await a.repositories.tags.history(tagUid, {}, 10)).toEqual([{ digest: "sha256:ours", moveTime: NOW }]);
  });

  it("ends racing upserts of one repo, one tag and one advisory in one row each, every racer answered", async () => {
    const org = await b.repositories.groups.create({ parentUid: null, name: "upserts", description: "", verified: false, kind: 0 }, NOW);
    for (let round = 0; round < 5; round++) {
      const name = `up-${round}`;
      const repos = await Promise.all(Array.from({ length: 4 }, (_, i) => (i % 2 ? a : b).repositories.repos.upsert(org.uid, repoFields(name), NOW + i)));
      expect(new Set(repos.map((r) => r.uid)).size).toBe(1);
      const repoUid = repos[0]!.uid;
      const tags = await Promise.all(
        Array.from({ length: 4 }, (_, i) =>
          (i % 2 ? a : b).repositories.tags.upsert(repoUid, { name: "latest", digest: `sha256:${i}`, deprecated: false, bundles: [] }, NOW + i),
        ),
      );
      expect(new Set(tags.map((t) => t.uid)).size).toBe(1);
      // Each racer's write is one move (or none, when it wrote the digest already there).
      const history = await a.repositories.tags.history(tags[0]!.uid, {}, 100);
      expect(history.length).toBeGreaterThanOrEqual(1);
      expect(history.length).toBeLessThanOrEqual(4);
      await Promise.all(
        Array.from({ length: 4 }, (_, i) =>
          (i % 2 ? a : b).importer.transaction((tx) => tx.record((w) => w.upsertAdvisory(org.uid, advisory(round), NOW + i))),
        ),
      );
      const found = await a.repositories.advisories.list(
        { uidp: { childrenOf: org.uid }, advisoryIds: [advisory(round).advisoryId] },
        { order: "uid", desc: false, offset: 0, limit: 10 },
      );
      expect(found.filter((x) => x.artifactName === advisory(round).artifactName)).toHaveLength(1);
      expect(found[0]!.events).toHaveLength(advisory(round).events.length);
      await Promise.all(Array.from({ length: 4 }, (_, i) => (i % 2 ? a : b).repositories.repoReadmes.put(repoUid, `# ${i}`, NOW)));
      expect(["# 0", "# 1", "# 2", "# 3"]).toContain(await b.repositories.repoReadmes.get(repoUid));
    }
    const pool = postgresPoolOf(a);
    expect((await pool.query("SELECT 1 FROM tags GROUP BY repo_uid, name HAVING count(*) > 1")).rows).toEqual([]);
    expect((await pool.query("SELECT 1 FROM advisories GROUP BY parent_uid, advisory_id, artifact_name HAVING count(*) > 1")).rows).toEqual([]);
  });

  it("creates a deployment once when replicas race; the other gets SQLite's ALREADY_EXISTS", async () => {
    const org = await a.repositories.groups.create({ parentUid: null, name: "deploy", description: "", verified: false, kind: 0 }, NOW);
    const repo = await a.repositories.repos.create(org.uid, repoFields("d"), NOW);
    const outcomes = await Promise.allSettled(
      Array.from({ length: 4 }, (_, i) => (i % 2 ? a : b).repositories.repoDeployments.create(repo.uid, [{ repo: `r${i}` }], NOW)),
    );
    expect(outcomes.filter((o) => o.status === "fulfilled")).toHaveLength(1);
    for (const o of outcomes) {
      if (o.status === "rejected")
        expect(o.reason).toEqual(alreadyExists("deployment", repo.uid, "the repo already has a deployment; replace it with UpdateDeployment"));
    }
  });

  it("leaves no repo, tag, README or deployment without its parent when the parent is deleted meanwhile", async () => {
    let groupsDeleted = 0;
    let reposDeleted = 0;
    for (let round = 0; round < 8; round++) {
      const org = await a.repositories.groups.create({ parentUid: null, name: `orphans-${round}`, description: "", verified: false, kind: 0 }, NOW);
      const [del, ...creates] = await Promise.allSettled([
        b.repositories.groups.delete(org.uid),
        ...Array.from({ length: 3 }, (_, i) => (i % 2 ? a : b).repositories.repos.create(org.uid, repoFields(`r${i}`), NOW)),
        a.importer.transaction((tx) => tx.record((w) => w.upsertAdvisory(org.uid, advisory(round), NOW))),
        a.repositories.registrySettings.put(org.uid, { uniqueTags: true, eolGracePeriod: true }, NOW),
      ]);
      for (const o of [del!, ...creates]) if (o.status === "rejected") expect(o.reason, String(o.reason)).toBeInstanceOf(ApiError);
      if (del!.status === "fulfilled") {
        groupsDeleted += 1;
        for (const o of creates) expect((o as PromiseRejectedResult).reason).toEqual(notFound("group", org.uid));
      } else {
        expect((del as PromiseRejectedResult).reason.code).toBe(GrpcCode.FailedPrecondition);
      }

      const repo = await a.repositories.repos.create(org.uid, repoFields(`parent-${round}`), NOW).catch(() => undefined);
      if (!repo) continue;
      const [repoDel, ...children] = await Promise.allSettled([
        a.repositories.repos.delete(repo.uid),
        ...Array.from({ length: 3 }, (_, i) =>
          (i % 2 ? a : b).repositories.tags.upsert(repo.uid, { name: `t${i}`, digest: "sha256:1", deprecated: false, bundles: [] }, NOW),
        ),
        b.repositories.repoReadmes.put(repo.uid, "# r", NOW),
        b.repositories.repoDeployments.create(repo.uid, [], NOW),
        b.importer.transaction((tx) => tx.record((w) => w.upsertTag(repo.uid, { name: "imported", digest: "sha256:2", deprecated: false, bundles: [] }, NOW))),
      ]);
      expect(repoDel!.status).toBe("fulfilled");
      reposDeleted += 1;
      for (const o of children) if (o.status === "rejected") expect(o.reason).toEqual(notFound("repo", repo.uid));
    }
    expect(groupsDeleted).toBeGreaterThanOrEqual(0);
    expect(reposDeleted).toBeGreaterThan(0);
    const pool = postgresPoolOf(b);
    for (const [child, parent, column] of [
      ["repos", "groups", "parent_uid"],
      ["advisories", "groups", "parent_uid"],
      ["registry_settings", "groups", "group_uid"],
      ["tags", "repos", "repo_uid"],
      ["repo_readmes", "repos", "repo_uid"],
      ["repo_deployments", "repos", "repo_uid"],
      ["eol_tags", "tags", "tag_uid"],
      ["tag_history", "tags", "tag_uid"],
    ] as const) {
      const { rows } = await pool.query(`SELECT 1 FROM ${child} c WHERE NOT EXISTS (SELECT 1 FROM ${parent} p WHERE p.uid = c.${column})`);
      expect(rows, child).toEqual([]);
    }
  });

  it("stops an import with StorageError busy when a row it needs stays locked past its bound, and never hangs", async () => {
    const org = await a.repositories.groups.create({ parentUid: null, name: "busy", description: "", verified: false, kind: 0 }, NOW);
    const repo = await a.repositories.repos.create(org.uid, repoFields("held"), NOW);
    const holder = await postgresPoolOf(b).connect();
    try {
      await holder.query("BEGIN");
      await holder.query("SELECT 1 FROM repos WHERE uid = $1 FOR UPDATE", [repo.uid]);
      const started = Date.now();
      const err = await rejection(
        a.importer.transaction(async (tx) => {
          await tx.record((w) => w.upsertRepo(org.uid, repoFields("free"), NOW));
          await tx.record((w) => w.upsertTag(repo.uid, { name: "t", digest: "sha256:1", deprecated: false, bundles: [] }, NOW));
        }),
      );
      expect(err).toBeInstanceOf(StorageError);
      expect(storageFailureOf(err)).toBe("busy");
      expect(Date.now() - started).toBeLessThan(5000);
    } finally {
      await holder.query("ROLLBACK");
      holder.release();
    }
    // The whole batch was rolled back, its first record included; then the import works again.
    expect(await a.repositories.repos.listAll({ uidp: { childrenOf: org.uid }, name: "free" }, 10)).toEqual([]);
    await a.health.probe();
    expect(
      await a.importer.transaction((tx) => tx.record((w) => w.upsertTag(repo.uid, { name: "t", digest: "sha256:1", deprecated: false, bundles: [] }, NOW))),
    ).toBe("loaded");
  });

  it("turns a connection lost mid-batch into a StorageError, not a rejected record, and commits nothing of the batch", async () => {
    const org = await a.repositories.groups.create({ parentUid: null, name: "lost", description: "", verified: false, kind: 0 }, NOW);
    const err = await rejection(
      a.importer.transaction(async (tx) => {
        await tx.record((w) => w.upsertRepo(org.uid, repoFields("before"), NOW));
        return tx.record(async (w) => {
          // This transaction's own backend, ended from another connection.
          await postgresPoolOf(b).query(
            "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'relation' AND relation = 'repos'::regclass AND mode = 'RowExclusiveLock' AND pid <> pg_backend_pid()",
          );
          return w.upsertRepo(org.uid, repoFields("after"), NOW);
        });
      }),
    );
    expect(err).toBeInstanceOf(StorageError);
    expect(storageFailureOf(err)).toBe("unavailable");
    expect(await b.repositories.repos.listAll({ uidp: { childrenOf: org.uid } }, 10)).toEqual([]);
    await a.health.probe();
  });
});
