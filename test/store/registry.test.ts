/**
 * The registry repositories (repos, tags, READMEs, deployments, registry settings, end-of-life
 * tags), the advisories' free-text query and the importer's writer, on every engine through
 * StoreEngine: what each write stores and answers (upsert outcomes, update times, tag moves and
 * history, the tags summary), every error exactly as the error module makes it (code, message,
 * metadata, resource info), what a filter value holding NUL matches (nothing, never an error),
 * how the query folds case and treats `%` and `_`, and the import transaction's savepoint per
 * record. Expectations are written out here, so both engines are held to the same answers.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { alreadyExists, ApiError, notFound } from "../../src/errors/api-error.js";
import type { AdvisoryFields } from "../../src/store/advisories.js";
import type { StoreEngine, StoreRepositories } from "../../src/store/engine.js";
import type { RepoFields } from "../../src/store/repos.js";
import { GeneratedTag } from "../../src/store/tags.js";
import { ENGINES, type OpenedEngine } from "../support/engines.js";

const NOW = 1_800_000_000_000;
const MISSING = "f".repeat(40);
const NUL = "x\u0000y";

const repoFields = (name: string, more: Partial<RepoFields> = {}): RepoFields => ({
  name,
  description: "",
  catalogTier: 0,
  bundles: [],
  aliases: [],
  activeTags: [],
  ...more,
});

/** What a caller sees of an API error (every field the error module turns into details). */
function seen(err: unknown) {
  if (!(err instanceof ApiError)) throw new Error(`expected an ApiError, got ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`);
  return { code: err.code, message: err.message, reason: err.reason, metadata: err.metadata, resourceInfo: err.resourceInfo };
}

async function failure(p: Promise<unknown>) {
  return seen(
    await p.then(
      () => {
        throw new Error("expected a rejection");
      },
      (e: unknown) => e,
    ),
  );
}

function advisory(id: string, artifactName: string, componentName: string, aliases: readonly string[]): AdvisoryFields {
  return {
    advisoryId: id,
    legacyAdvisoryId: null,
    author: "importer",
    artifactName,
    artifactType: "apk",
    artifactArchitecture: "x86_64",
    componentName,
    componentLocation: "",
    componentType: "",
    aliases,
    severities: [{ type: 1, score: "7.5" }],
    deleteTime: null,
    events: [{ author: "ann", reviewer: "rev", reviewState: 2, issue: null, eventType: 3, body: '{"fixed":"1.2"}', findings: new Uint8Array([1, 2, 3]) }],
  };
}

describe.each(ENGINES)("registry repositories on $name", (engineUnderTest) => {
  let opened: OpenedEngine;
  let store: StoreEngine;
  let r: StoreRepositories;
  let org: string;

  beforeAll(async () => {
    opened = await engineUnderTest.open(NOW);
    store = opened.engine;
    r = store.repositories;
    org = (await r.groups.create({ parentUid: null, name: "org", description: "", verified: false, kind: 0 }, NOW)).uid;
  });
  afterAll(async () => {
    await opened.close();
  });

  describe("repos", () => {
    it("creates, refuses a taken name and a missing group, renames, and refuses a rename onto a taken name", async () => {
      const a = await r.repos.create(org, repoFields("a", { bundles: ["b1"], catalogTier: 2 }), NOW);
      expect(a).toEqual({ ...repoFields("a", { bundles: ["b1"], catalogTier: 2 }), uid: a.uid, parentUid: org, createTime: NOW, updateTime: NOW });
      expect(await r.repos.get(a.uid)).toEqual(a);
      expect(await failure(r.repos.create(org, repoFields("a"), NOW))).toEqual(seen(alreadyExists("repo", "a", 'the group already has a repo named "a"')));
      expect(await failure(r.repos.create(MISSING, repoFields("a"), NOW))).toEqual(seen(notFound("group", MISSING)));
      const b = await r.repos.create(org, repoFields("b"), NOW);
      expect(await failure(r.repos.update(b.uid, { name: "a" }, NOW + 1))).toEqual(seen(alreadyExists("repo", "a", 'the group already has a repo named "a"')));
      expect(await failure(r.repos.update(MISSING, { name: "z" }, NOW))).toEqual(seen(notFound("repo", MISSING)));
      const renamed = await r.repos.update(b.uid, { name: "b2", aliases: ["x"] }, NOW + 2);
      expect(renamed).toEqual({ ...b, name: "b2", aliases: ["x"], updateTime: NOW + 2 });
    });

    it("upserts in place (uid and create time kept; update time only when something changed) and lets the guard refuse", async () => {
      const first = await r.repos.upsert(org, repoFields("up", { description: "one" }), NOW);
      expect(await r.repos.upsert(org, repoFields("up", { description: "one" }), NOW + 5)).toEqual(first);
      const second = await r.repos.upsert(org, repoFields("up", { description: "two" }), NOW + 6);
      expect(second).toEqual({ ...first, description: "two", updateTime: NOW + 6 });
      const refusal = new ApiError(7, "no");
      const judged: string[] = [];
      const refused = r.repos.upsert(org, repoFields("up", { description: "three" }), NOW + 7, (uid) => {
        judged.push(uid);
        throw refusal;
      });
      await expect(refused).rejects.toBe(refusal);
      expect(judged).toEqual([first.uid]);
      expect(await r.repos.get(first.uid)).toEqual(second);
      expect(await failure(r.repos.upsert(MISSING, repoFields("up"), NOW))).toEqual(seen(notFound("group", MISSING)));
    });

    it("deletes a repo with its tags, README and deployment", async () => {
      const repo = await r.repos.create(org, repoFields("doomed"), NOW);
      const tag = await r.tags.upsert(repo.uid, { name: "latest", digest: "sha256:1", deprecated: false, bundles: [] }, NOW);
      await r.repoReadmes.put(repo.uid, "# hi", NOW);
      await r.repoDeployments.create(repo.uid, [{ repo: "charts" }], NOW);
      await r.repos.delete(repo.uid);
      expect(await r.repos.get(repo.uid)).toBeUndefined();
      expect(await r.tags.get(tag.uid)).toBeUndefined();
      expect(await r.repoReadmes.many([repo.uid])).toEqual(new Map());
      expect(await failure(r.repos.delete(repo.uid))).toEqual(seen(notFound("repo", repo.uid)));
      expect(await failure(r.repoReadmes.get(repo.uid))).toEqual(seen(notFound("repo", repo.uid)));
    });
  });

  describe("tags", () => {
    let repo: string;
    beforeAll(async () => {
      repo = (await r.repos.create(org, repoFields("tags"), NOW)).uid;
    });

    it("moves a tag in place, records each move in its history (newest first, in range), and not a relabel", async () => {
      const t1 = await r.tags.upsert(repo, { name: "1.0", digest: "sha256:a", deprecated: false, bundles: [] }, NOW + 10);
      expect(t1).toEqual({ uid: t1.uid, repoUid: repo, name: "1.0", digest: "sha256:a", deprecated: false, bundles: [], updateTime: NOW + 10 });
      expect(await r.tags.upsert(repo, { name: "1.0", digest: "sha256:a", deprecated: false, bundles: [] }, NOW + 11)).toEqual(t1);
      const moved = await r.tags.upsert(repo, { name: "1.0", digest: "sha256:b", deprecated: false, bundles: [] }, NOW + 12);
      expect(moved).toEqual({ ...t1, digest: "sha256:b", updateTime: NOW + 12 });
      await r.tags.upsert(repo, { name: "1.0", digest: "sha256:b", deprecated: true, bundles: ["x"] }, NOW + 13);
      await r.tags.upsert(repo, { name: "1.0", digest: "sha256:c", deprecated: true, bundles: ["x"] }, NOW + 13);
      expect(await r.tags.history(t1.uid, {}, 10)).toEqual([
        { digest: "sha256:c", moveTime: NOW + 13 },
        { digest: "sha256:b", moveTime: NOW + 12 },
        { digest: "sha256:a", moveTime: NOW + 10 },
      ]);
      expect(await r.tags.history(t1.uid, { start: NOW + 11, end: NOW + 13 }, 10)).toEqual([{ digest: "sha256:b", moveTime: NOW + 12 }]);
      expect(await r.tags.history(t1.uid, {}, 1)).toHaveLength(2); // max + 1
      expect(await failure(r.tags.history(MISSING, {}, 10))).toEqual(seen(notFound("tag", MISSING)));
      expect(await failure(r.tags.upsert(MISSING, { name: "x", digest: "d", deprecated: false, bundles: [] }, NOW))).toEqual(seen(notFound("repo", MISSING)));
    });

    it("replaces a tag, refusing a rename onto a taken name, and deletes it", async () => {
      const a = await r.tags.upsert(repo, { name: "ra", digest: "sha256:1", deprecated: false, bundles: [] }, NOW);
      const b = await r.tags.upsert(repo, { name: "rb", digest: "sha256:1", deprecated: false, bundles: [] }, NOW);
      expect(await failure(r.tags.replace(b.uid, { name: "ra", digest: "sha256:1", deprecated: false, bundles: [] }, NOW + 1))).toEqual(
        seen(alreadyExists("tag", "ra", 'the repo already has a tag named "ra"')),
      );
      const replaced = await r.tags.replace(b.uid, { name: "rc-r1", digest: "sha256:2", deprecated: true, bundles: ["q"] }, NOW + 2);
      expect(replaced).toEqual({ ...b, name: "rc-r1", digest: "sha256:2", deprecated: true, bundles: ["q"], updateTime: NOW + 2 });
      // Renamed into an epoch tag: the list now leaves it out unless asked.
      const names = async (include: GeneratedTag[]) => (await r.tags.listAll({ uidp: { childrenOf: repo }, name: "rc-r1", include }, 10)).map((t) => t.name);
      expect(await names([])).toEqual([]);
      expect(await names([GeneratedTag.Epoch])).toEqual(["rc-r1"]);
      expect(await failure(r.tags.replace(MISSING, { name: "x", digest: "d", deprecated: false, bundles: [] }, NOW))).toEqual(seen(notFound("tag", MISSING)));
      await r.tags.delete(a.uid);
      expect(await r.tags.get(a.uid)).toBeUndefined();
      expect(await failure(r.tags.delete(a.uid))).toEqual(seen(notFound("tag", a.uid)));
    });

    it("summarizes the included tags: count, last update, the latest tag and its longest other name", async () => {
      const sum = await r.repos.create(org, repoFields("summary"), NOW);
      expect(await r.tags.summary(sum.uid, [])).toEqual({ tagCount: 0, latestVersion: "" });
      await r.tags.upsert(sum.uid, { name: "1", digest: "sha256:d1", deprecated: false, bundles: [] }, NOW + 1);
      await r.tags.upsert(sum.uid, { name: "1.2.3", digest: "sha256:d1", deprecated: false, bundles: [] }, NOW + 2);
      await r.tags.upsert(sum.uid, { name: "1.2.4", digest: "sha256:d1", deprecated: false, bundles: [] }, NOW + 2);
      const newest = await r.tags.upsert(sum.uid, { name: "1.2.3-r1", digest: "sha256:d1", deprecated: false, bundles: [] }, NOW + 9);
      await r.tags.upsert(sum.uid, { name: "old", digest: "sha256:d2", deprecated: false, bundles: [] }, NOW);
      // Without epoch tags the newest is 1.2.4 (ties on time broken by uid, the larger first).
      const plain = await r.tags.summary(sum.uid, []);
      expect(plain.tagCount).toBe(4);
      expect(plain.lastUpdated).toBe(NOW + 2);
      expect(["1.2.3", "1.2.4"]).toContain(plain.latestTag?.name);
      expect(plain.latestVersion).toBe(plain.latestTag?.name === "1.2.3" ? "1.2.4" : "1.2.3");
      expect(await r.tags.summary(sum.uid, [GeneratedTag.Epoch])).toEqual({ tagCount: 5, lastUpdated: NOW + 9, latestTag: newest, latestVersion: "1.2.3" });
      const latest = await r.tags.upsert(sum.uid, { name: "latest", digest: "sha256:d2", deprecated: false, bundles: [] }, NOW + 3);
      expect(await r.tags.summary(sum.uid, [GeneratedTag.Epoch])).toEqual({ tagCount: 6, lastUpdated: NOW + 9, latestTag: latest, latestVersion: "old" });
      expect(await failure(r.tags.summary(MISSING, []))).toEqual(seen(notFound("repo", MISSING)));
    });
  });

  describe("READMEs, deployments and registry settings", () => {
    let repo: string;
    beforeAll(async () => {
      repo = (await r.repos.create(org, repoFields("docs"), NOW)).uid;
    });

    it("keeps one README per repo, '' removing it, and reads many at once", async () => {
      expect(await r.repoReadmes.get(repo)).toBe("");
      expect(await r.repoReadmes.put(repo, "# one", NOW)).toBe("# one");
      expect(await r.repoReadmes.put(repo, "# two", NOW + 1)).toBe("# two");
      expect(await r.repoReadmes.get(repo)).toBe("# two");
      const other = (await r.repos.create(org, repoFields("docs-2"), NOW)).uid;
      expect(await r.repoReadmes.many([repo, other, MISSING, NUL])).toEqual(new Map([[repo, "# two"]]));
      await r.repoReadmes.put(repo, "", NOW + 2);
      expect(await r.repoReadmes.get(repo)).toBe("");
      expect(await failure(r.repoReadmes.put(MISSING, "x", NOW))).toEqual(seen(notFound("repo", MISSING)));
      expect(await failure(r.repoReadmes.get(NUL))).toEqual(seen(notFound("repo", NUL)));
    });

    it("creates one deployment per repo and replaces it, with absent chart fields kept absent", async () => {
      expect(await failure(r.repoDeployments.get(repo))).toEqual(seen(notFound("deployment", repo)));
      expect(await failure(r.repoDeployments.replace(repo, [], NOW))).toEqual(seen(notFound("deployment", repo)));
      const charts = [
        { repo: "oci://charts", chart: "nginx" },
        { source: "https://src", repo: "r" },
      ];
      expect(await r.repoDeployments.create(repo, charts, NOW)).toEqual({ repoUid: repo, charts });
      expect(await r.repoDeployments.get(repo)).toEqual({ repoUid: repo, charts });
      expect(await failure(r.repoDeployments.create(repo, [], NOW))).toEqual(
        seen(alreadyExists("deployment", repo, "the repo already has a deployment; replace it with UpdateDeployment")),
      );
      await r.repoDeployments.replace(repo, [{ repo: "only" }], NOW + 1);
      expect(await r.repoDeployments.get(repo)).toEqual({ repoUid: repo, charts: [{ repo: "only" }] });
      expect(await failure(r.repoDeployments.create(MISSING, [], NOW))).toEqual(seen(notFound("repo", MISSING)));
      expect(await failure(r.repoDeployments.get(MISSING))).toEqual(seen(notFound("repo", MISSING)));
    });

    it("reads a group's defaults until put, then what was put", async () => {
      expect(await r.registrySettings.get(org)).toEqual({ uniqueTags: false, eolGracePeriod: false });
      expect(await r.registrySettings.put(org, { uniqueTags: true, eolGracePeriod: false }, NOW)).toEqual({ uniqueTags: true, eolGracePeriod: false });
      await r.registrySettings.put(org, { uniqueTags: true, eolGracePeriod: true }, NOW + 1);
      expect(await r.registrySettings.get(org)).toEqual({ uniqueTags: true, eolGracePeriod: true });
      expect(await failure(r.registrySettings.get(MISSING))).toEqual(seen(notFound("group", MISSING)));
      expect(await failure(r.registrySettings.get(NUL))).toEqual(seen(notFound("group", NUL)));
      expect(await failure(r.registrySettings.put(MISSING, { uniqueTags: true, eolGracePeriod: true }, NOW))).toEqual(seen(notFound("group", MISSING)));
    });
  });

  describe("the importer's writer", () => {
    it("writes each record behind its own savepoint: a failing record is undone alone, the rest commit", async () => {
      const results: unknown[] = [];
      await store.importer.transaction(async (tx) => {
        results.push(await tx.record((w) => w.upsertRepo(org, repoFields("imported"), NOW)));
        const repoUid = await tx.record(async (w) => (await w.findRepoUid(org, "imported")) as string);
        results.push(await tx.record((w) => w.upsertTag(repoUid, { name: "1.0", digest: "sha256:i", deprecated: false, bundles: [] }, NOW)));
        // A record that writes, then fails: its write must not survive.
        const failed = await tx
          .record(async (w) => {
            await w.upsertRepo(org, repoFields("half-done"), NOW);
            await w.upsertTag(MISSING, { name: "x", digest: "d", deprecated: false, bundles: [] }, NOW);
          })
          .then(
            () => undefined,
            (e: unknown) => e,
          );
        results.push(seen(failed));
        results.push(await tx.record((w) => w.putReadme(repoUid, "# imported", NOW)));
        const tagUid = await tx.record(async (w) => (await w.findTagUid(repoUid, "1.0")) as string);
        const eol = { mainPackageName: "pkg", tagStatus: 1, graceStatus: 2, gracePeriodExpiry: NOW + 1000, mainPackageVersion: '{"version":"1"}' };
        results.push(await tx.record((w) => w.upsertEolTag(tagUid, eol, NOW)));
        results.push(await tx.record((w) => w.upsertEolTag(tagUid, eol, NOW + 1)));
        results.push(await tx.record((w) => w.upsertEolTag(tagUid, { ...eol, gracePeriodExpiry: undefined }, NOW + 2)));
        results.push(await tx.record((w) => w.findTagUid(repoUid, NUL)));
        results.push(seen(await tx.record((w) => w.upsertEolTag(MISSING, eol, NOW)).catch((e: unknown) => e)));
      });
      expect(results).toEqual([
        "loaded",
        "loaded",
        seen(notFound("repo", MISSING)),
        "loaded",
        "loaded",
        "unchanged",
        "updated",
        undefined,
        seen(notFound("tag", MISSING)),
      ]);
      expect(await r.repos.listAll({ uidp: { childrenOf: org }, name: "half-done" }, 10)).toEqual([]);
      const [repo] = await r.repos.listAll({ uidp: { childrenOf: org }, name: "imported" }, 10);
      expect(await r.repoReadmes.get(repo!.uid)).toBe("# imported");
      const [tag] = await r.tags.listAll({ uidp: { childrenOf: repo!.uid }, include: [] }, 10);
      expect(await r.eolTags.list({ uidp: { childrenOf: repo!.uid }, include: [] }, undefined, 10)).toEqual([
        { tagUid: tag!.uid, tagName: "1.0", mainPackageName: "pkg", tagStatus: 1, graceStatus: 2, mainPackageVersion: '{"version":"1"}' },
      ]);
      expect(await r.eolTags.list({ uidp: { childrenOf: repo!.uid }, include: [] }, tag!.uid, 10)).toEqual([]);
      expect(await r.eolTags.list({ uidp: { childrenOf: repo!.uid }, name: NUL, include: [] }, undefined, 10)).toEqual([]);
    });

    it("rolls the whole transaction back when its work throws", async () => {
      const boom = new Error("stop");
      await expect(
        store.importer.transaction(async (tx) => {
          await tx.record((w) => w.upsertRepo(org, repoFields("rolled-back"), NOW));
          throw boom;
        }),
      ).rejects.toBe(boom);
      expect(await r.repos.listAll({ uidp: {}, name: "rolled-back" }, 10)).toEqual([]);
    });

    it("imports advisories in place: uids kept, 'unchanged' when nothing changed", async () => {
      const fields = advisory("CGA-upsert", "art", "comp", ["CVE-1", "CVE-1", "CVE-2"]);
      const outcomes: string[] = [];
      await store.importer.transaction(async (tx) => {
        outcomes.push(await tx.record((w) => w.upsertAdvisory(org, fields, NOW)));
        outcomes.push(await tx.record((w) => w.upsertAdvisory(org, fields, NOW + 1)));
        outcomes.push(await tx.record((w) => w.upsertAdvisory(org, { ...fields, componentName: "comp-2" }, NOW + 2)));
      });
      expect(outcomes).toEqual(["loaded", "unchanged", "updated"]);
      const [stored] = await r.advisories.list({ uidp: {}, advisoryIds: ["CGA-upsert"] }, { order: "uid", desc: false, offset: 0, limit: 10 });
      expect(stored).toMatchObject({ parentUid: org, componentName: "comp-2", createTime: NOW, updateTime: NOW + 2, aliases: ["CVE-1", "CVE-1", "CVE-2"] });
      expect(stored?.events).toEqual([
        {
          uid: expect.stringMatching(new RegExp(`^${stored?.uid}/`)),
          createTime: NOW,
          author: "ann",
          reviewer: "rev",
          reviewState: 2,
          issue: null,
          eventType: 3,
          body: '{"fixed":"1.2"}',
          findings: new Uint8Array([1, 2, 3]),
        },
      ]);
      expect(await r.advisories.get(stored!.uid)).toEqual(stored);
      expect(await r.advisories.get(NUL)).toBeUndefined();
      // A record's own failure leaves as the API error it is, not as a storage failure.
      expect(await failure(store.importer.transaction((tx) => tx.record((w) => w.upsertAdvisory(MISSING, fields, NOW))))).toEqual(
        seen(notFound("group", MISSING)),
      );
    });
  });

  describe("filters", () => {
    let group: string;
    beforeAll(async () => {
      group = (await r.groups.create({ parentUid: org, name: "filters", description: "", verified: false, kind: 0 }, NOW)).uid;
      await store.importer.transaction(async (tx) => {
        for (const [id, art, comp, aliases] of [
          ["F-1", "OpenSSL", "libcrypto", ["CVE-2026-100%"]],
          ["F-2", "zlib", "ÉCLAIR", ["GHSA-a_b"]],
          ["F-3", "busybox", "éclair", ["CVE-2026-1000"]],
          ["F-4", "curl", "a%b", ["GHSA-axb"]],
        ] as const) {
          await tx.record((w) => w.upsertAdvisory(group, advisory(id, art, comp, aliases), NOW));
        }
      });
    });

    const ids = async (f: Parameters<StoreRepositories["advisories"]["list"]>[0]) => {
      const rows = await r.advisories.list(f, { order: "advisory_id", desc: false, offset: 0, limit: 100 });
      expect(await r.advisories.count(f)).toBe(rows.length);
      return rows.map((a) => a.advisoryId);
    };

    it("query: ASCII case folded on both sides, other letters only as typed in the stored text, % and _ as themselves", async () => {
      const q = (query: string) => ids({ uidp: { childrenOf: group }, query });
      expect(await q("openssl")).toEqual(["F-1"]);
      expect(await q("OPENSSL")).toEqual(["F-1"]);
      expect(await q("cve-2026-100")).toEqual(["F-1", "F-3"]);
      expect(await q("100%")).toEqual(["F-1"]);
      expect(await q("%")).toEqual(["F-1", "F-4"]);
      expect(await q("a_b")).toEqual(["F-2"]);
      expect(await q("_")).toEqual(["F-2"]);
      // The query is folded fully ("É" → "é"), the stored text in ASCII only: "ÉCLAIR" stays.
      expect(await q("éclair")).toEqual(["F-3"]);
      expect(await q("ÉCLAIR")).toEqual(["F-3"]);
      expect(await q("Éclair")).toEqual(["F-3"]);
      expect(await q("x\u0000")).toEqual([]);
    });

    it("a filter value holding NUL matches nothing, beside values that match", async () => {
      const g = { uidp: { childrenOf: group } };
      expect(await ids({ ...g, advisoryIds: [NUL] })).toEqual([]);
      expect(await ids({ ...g, advisoryIds: [NUL, "F-2"] })).toEqual(["F-2"]);
      expect(await ids({ ...g, aliases: [NUL] })).toEqual([]);
      expect(await ids({ ...g, origin: NUL })).toEqual([]);
      expect(await ids({ ...g, eventAuthors: [NUL] })).toEqual([]);
      expect(await ids({ ...g, excludeEventAuthors: [NUL] })).toEqual(["F-1", "F-2", "F-3", "F-4"]);
      expect(await ids({ ...g, excludeEventAuthors: [NUL, "ann"] })).toEqual([]);
      expect(await r.repos.list({ uidp: {}, name: NUL }, { order: "name", desc: false, offset: 0, limit: 10 })).toEqual([]);
      expect(await r.repos.count({ uidp: {}, name: NUL })).toBe(0);
      expect(await r.repos.get(NUL)).toBeUndefined();
      expect(await r.tags.count({ uidp: {}, name: NUL, include: [] })).toBe(0);
      expect(await r.tags.listAll({ uidp: {}, digest: NUL, include: [] }, 10)).toEqual([]);
      expect(await r.tags.get(NUL)).toBeUndefined();
      expect(await failure(r.tags.history(NUL, {}, 10))).toEqual(seen(notFound("tag", NUL)));
      expect(await failure(r.tags.summary(NUL, []))).toEqual(seen(notFound("repo", NUL)));
      expect(await failure(r.repoDeployments.get(NUL))).toEqual(seen(notFound("repo", NUL)));
    });

    it("orders names bytewise (uppercase before lowercase, '_' between them)", async () => {
      for (const name of ["b", "B", "_x", "a", "Z"]) await r.repos.create(group, repoFields(name), NOW);
      const page = await r.repos.list({ uidp: { childrenOf: group } }, { order: "name", desc: false, offset: 0, limit: 10 });
      expect(page.map((x) => x.name)).toEqual(["B", "Z", "_x", "a", "b"]);
    });
  });
});
