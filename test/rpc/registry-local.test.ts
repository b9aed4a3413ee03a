/**
 * The registry methods served from local state, on every door (gRPC, Connect JSON and proto,
 * gRPC-web, REST laid out by each method's HTTP rule): the v1 repo and tag writes, tag
 * history, tag summaries, the mirror count, registry settings, deployments, end-of-life tags
 * and the v2beta1 README. Every refused call asserts its code, ErrorInfo and field, and that
 * the database is unchanged.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { PassThrough } from "node:stream";
import type { DescMessage, DescMethodUnary, JsonObject, MessageInitShape } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Capability } from "../../gen/chainguard/capabilities/capabilities_pb.js";
import { type CatalogTier, Registry } from "../../gen/chainguard/platform/registry/registry_v1_pb.js";
import { ReposService } from "../../gen/chainguard/platform/registry/v2beta1/repos_pb.js";
import { TagsService } from "../../gen/chainguard/platform/registry/v2beta1/tags_pb.js";
import { runImport } from "../../src/import/run-import.js";
import { README_MAX_BYTES } from "../../src/services/registry/validate.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { createUserIdentity, identityToken } from "../support/auth.js";
import { callDoors, type CallOutcome } from "../support/call-method.js";
import { snapshotDb } from "../support/db.js";
import { rest } from "../support/rest.js";
import { storeArgs } from "../support/store-target.js";
import { closeGrpcClients, Code } from "../support/transports.js";

const R = Registry.method;
const DIGEST_A = `sha256:${"a".repeat(64)}`;
const DIGEST_B = `sha256:${"b".repeat(64)}`;
const DIGEST_C = `sha256:${"c".repeat(64)}`;

let t: TestApp;
let counter = 0;
const unique = (prefix: string) => `${prefix}-${(counter++).toString(36)}`;

beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  closeGrpcClients();
  await t.close();
});

async function op(method: string, urlPath: string, body?: unknown) {
  const r = await rest(t.url, method, urlPath, body);
  if (r.status !== 200) throw new Error(`${method} ${urlPath}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

/** Loads NDJSON records with `trellis import` into the running server's database. */
async function importRecords(records: unknown[]): Promise<string> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-import-"));
  const file = path.join(dir, "records.ndjson");
  fs.writeFileSync(file, records.map((r) => JSON.stringify(r)).join("\n"));
  const out: string[] = [];
  const err: string[] = [];
  const code = await runImport([...storeArgs(t.dataDir), "--quiet", file], {
    stdout: new PassThrough().on("data", (c) => out.push(String(c))),
    stderr: Object.assign(
      new PassThrough().on("data", (c) => err.push(String(c))),
      { isTTY: false },
    ),
    env: {},
  });
  fs.rmSync(dir, { recursive: true, force: true });
  if (code !== 0) throw new Error(`import failed (${code}): ${out.join("")} ${err.join("")}`);
  return out.join("");
}

describe.each(callDoors)("registry local state over $name", (door) => {
  let org: string;

  const call = <M extends DescMessage>(method: DescMethodUnary<M>, req: MessageInitShape<M>, token = t.token) => door.call(t.url, token, method, req);
  const ok = async <M extends DescMessage>(method: DescMethodUnary<M>, req: MessageInitShape<M>, token?: string): Promise<JsonObject> => {
    const o = await call(method, req, token);
    if (!o.ok) throw new Error(`${method.name}: ${o.code} ${o.message}`);
    return o.body;
  };
  /** Asserts the call is refused with `code` (and a violation of `field`) and changed nothing. */
  const refused = async <M extends DescMessage>(method: DescMethodUnary<M>, req: MessageInitShape<M>, code: Code, field?: string, token?: string) => {
    const before = await snapshotDb(t);
    const o: CallOutcome = await call(method, req, token);
    expect(o.ok, `${method.name} ${JSON.stringify(req, (_k, v) => (typeof v === "bigint" ? String(v) : v))}`).toBe(false);
    if (o.ok) return o;
    expect(o.code, o.message).toBe(code);
    expect(o.reason, "ErrorInfo").toBe(Code[code].replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase());
    if (field !== undefined) expect(o.message).toContain(`${field}: `);
    expect(await snapshotDb(t), "a refused call changed the database").toBe(before);
    return o;
  };
  const newRepo = async (name = unique("repo")) => (await op("POST", `/registry/v2beta1/repos/${org}`, { name })).uid as string;

  beforeAll(async () => {
    org = (await op("POST", "/iam/v2beta1/groups", { name: unique("local org") })).uid;
  });

  describe("v1 repo writes", () => {
    it("CreateRepo creates, then updates the repo of the same name unless prevent_existing", async () => {
      const made = await ok(R.createRepo, { parentId: org, repo: { name: "nginx", catalogTier: 5, bundles: ["base"], description: "web" } });
      expect(made).toMatchObject({ name: "nginx", catalogTier: "BASE", bundles: ["base"], description: "web" });
      expect(made.id).toMatch(new RegExp(`^${org}/[0-9a-f]{16}$`));
      // v2beta1 sees the same row, its tier in v2beta1 numbering.
      expect(await op("GET", `/registry/v2beta1/repos/${made.id}`)).toMatchObject({ name: "nginx", catalogTier: "CATALOG_TIER_BASE" });
      const again = await ok(R.createRepo, { parentId: org, repo: { name: "nginx", catalogTier: 4 } });
      expect(again).toMatchObject({ id: made.id, catalogTier: "APPLICATION" });
      expect(again.bundles ?? []).toEqual([]); // the whole repo is replaced
      await refused(R.createRepo, { parentId: org, repo: { name: "nginx" }, preventExisting: true }, Code.AlreadyExists);
    });

    it("UpdateRepo is a PUT: omitted fields are reset; a rename onto a taken name is ALREADY_EXISTS", async () => {
      const id = (await ok(R.createRepo, { parentId: org, repo: { name: "put-me", description: "d", bundles: ["fips"], aliases: ["x:1"] } })).id as string;
      const put = await ok(R.updateRepo, { id, name: "put-me-2", activeTags: ["1.0"] });
      expect(put).toMatchObject({ id, name: "put-me-2", activeTags: ["1.0"] });
      expect(put.description ?? "").toBe("");
      expect(put.bundles ?? []).toEqual([]);
      expect(put.aliases ?? []).toEqual([]);
      await newRepo("taken-name");
      await refused(R.updateRepo, { id, name: "taken-name" }, Code.AlreadyExists);
      await refused(R.updateRepo, { id: `${org}/0123456789abcdef`, name: "ghost" }, Code.NotFound);
    });

    it("DeleteRepo deletes the repo with its tags, README and deployment", async () => {
      const id = await newRepo();
      await ok(R.createTag, { repoId: id, tag: { name: "latest", digest: DIGEST_A } });
      await ok(R.createDeployment, { parentId: id, charts: [{ repo: "https://charts.example.test" }] });
      await ok(R.deleteRepo, { id });
      expect((await rest(t.url, "GET", `/registry/v2beta1/repos/${id}`)).status).toBe(404);
      await refused(R.getDeployment, { repoId: id }, Code.NotFound);
      await refused(R.deleteRepo, { id }, Code.NotFound);
    });

    it("refuses bad repos with field violations and writes nothing", async () => {
      const existing = await newRepo();
      const cases: [MessageInitShape<typeof Registry.method.createRepo.input>, string][] = [
        [{ parentId: org, repo: { name: "" } }, "repo.name"],
        [{ parentId: org, repo: { name: "UPPER" } }, "repo.name"],
        [{ parentId: org, repo: { name: "ok", catalogTier: 2 as CatalogTier } }, "repo.catalog_tier"], // retired tier
        [{ parentId: org, repo: { name: "ok", bundles: ["free-lunch"] } }, "repo.bundles[0]"],
        [{ parentId: org, repo: { name: "ok", syncConfig: { source: "cgr.dev/chainguard/nginx" } } }, "repo.sync_config"],
        [{ parentId: org, repo: { name: "ok", customOverlay: { environment: { A: "b" } } } }, "repo.custom_overlay"],
        [{ parentId: org, repo: { name: "ok", readme: "# sneaked in" } }, "repo.readme"],
        // REST binds the request body to `repo`, so a missing repo arrives as an empty one.
        [{ parentId: org }, door.name === "rest" ? "repo.name" : "repo"],
      ];
      for (const [req, field] of cases) await refused(R.createRepo, req, Code.InvalidArgument, field);
      await refused(R.createRepo, { parentId: "c".repeat(40), repo: { name: "ok" } }, Code.NotFound);
      await refused(R.updateRepo, { id: existing, name: "x", description: "line\nbreak" }, Code.InvalidArgument, "description");
      await refused(R.updateRepo, { id: existing, name: "" }, Code.InvalidArgument, "name");
    });
  });

  describe("v1 tag writes and history", () => {
    it("CreateTag upserts, UpdateTag replaces, DeleteTag deletes", async () => {
      const repo = await newRepo();
      const tag = await ok(R.createTag, { repoId: repo, tag: { name: "1.27", digest: DIGEST_A, bundles: ["base"] } });
      expect(tag).toMatchObject({ name: "1.27", digest: DIGEST_A, bundles: ["base"] });
      const id = tag.id as string;
      expect(id.startsWith(`${repo}/`)).toBe(true);
      const moved = await ok(R.createTag, { repoId: repo, tag: { name: "1.27", digest: DIGEST_B } });
      expect(moved).toMatchObject({ id, digest: DIGEST_B });
      const put = await ok(R.updateTag, { id, name: "1.27.1", digest: DIGEST_B, deprecated: true });
      expect(put).toMatchObject({ id, name: "1.27.1", digest: DIGEST_B, deprecated: true });
      expect(put.bundles ?? []).toEqual([]);
      await ok(R.createTag, { repoId: repo, tag: { name: "other", digest: DIGEST_A } });
      await refused(R.updateTag, { id, name: "other", digest: DIGEST_A }, Code.AlreadyExists);
      await refused(R.updateTag, { id, name: "1.27.1", digest: "sha256:short" }, Code.InvalidArgument, "digest");
      await refused(R.updateTag, { id, name: "-bad", digest: DIGEST_A }, Code.InvalidArgument, "name");
      await refused(R.createTag, { repoId: repo, tag: { name: "x", digest: "md5:00" } }, Code.InvalidArgument, "tag.digest");
      await refused(R.createTag, { repoId: repo }, Code.InvalidArgument, door.name === "rest" ? "tag.name" : "tag");
      await refused(R.createTag, { repoId: `${org}/0123456789abcdef`, tag: { name: "x", digest: DIGEST_A } }, Code.NotFound);
      await ok(R.deleteTag, { id });
      await refused(R.deleteTag, { id }, Code.NotFound);
      await refused(R.updateTag, { id, name: "1.27.1", digest: DIGEST_A }, Code.NotFound);
    });

    it("ListTagHistory lists every digest a tag pointed at, newest first, from every tag writer", async () => {
      const repo = await newRepo();
      const id = (await ok(R.createTag, { repoId: repo, tag: { name: "latest", digest: DIGEST_A } })).id as string;
      t.advanceClock(1000);
      await ok(TagsService.method.createTag, { parent: repo, tag: { name: "latest", digest: DIGEST_B } }); // v2beta1 upsert
      t.advanceClock(1000);
      await ok(R.updateTag, { id, name: "latest", digest: DIGEST_B, deprecated: true }); // not a move
      t.advanceClock(1000);
      await ok(R.updateTag, { id, name: "latest", digest: DIGEST_C });
      const all = await ok(R.listTagHistory, { parentId: id });
      const items = all.items as { digest: string; updateTimestamp: string }[];
      expect(items.map((i) => i.digest)).toEqual([DIGEST_C, DIGEST_B, DIGEST_A]);
      const times = items.map((i) => Date.parse(i.updateTimestamp));
      expect(times[0] - times[1]).toBeGreaterThanOrEqual(2000);
      expect(times[1] - times[2]).toBeGreaterThanOrEqual(1000);
      // start is inclusive, end exclusive.
      const window = await ok(R.listTagHistory, {
        parentId: id,
        start: { seconds: BigInt(Math.floor(times[1] / 1000)), nanos: (times[1] % 1000) * 1e6 },
        end: { seconds: BigInt(Math.floor(times[0] / 1000)), nanos: (times[0] % 1000) * 1e6 },
      });
      expect((window.items as { digest: string }[]).map((i) => i.digest)).toEqual([DIGEST_B]);
      await refused(R.listTagHistory, { parentId: id, start: { seconds: 20n }, end: { seconds: 10n } }, Code.InvalidArgument, "end");
      await ok(R.deleteTag, { id });
      await refused(R.listTagHistory, { parentId: id }, Code.NotFound);
    });

    it("GetRepoTagsSummary counts the tags, names the latest and its longest version", async () => {
      const repo = await newRepo();
      const empty = await ok(R.getRepoTagsSummary, { repoId: repo });
      expect(empty.id).toBe(repo);
      expect(Number(empty.tagCount ?? 0)).toBe(0);
      expect(empty.latestTag).toBeUndefined();
      expect(empty.lastUpdated).toBeUndefined();
      await ok(R.createTag, { repoId: repo, tag: { name: "1.27", digest: DIGEST_A } });
      await ok(R.createTag, { repoId: repo, tag: { name: "1.27.3", digest: DIGEST_A } });
      await ok(R.createTag, { repoId: repo, tag: { name: "latest-dev", digest: DIGEST_A } });
      await ok(R.createTag, { repoId: repo, tag: { name: "1.27.3-r1", digest: DIGEST_A } }); // epoch tag: longest
      t.advanceClock(1000);
      await ok(R.createTag, { repoId: repo, tag: { name: "1.26", digest: DIGEST_B } }); // newest, but not "latest"
      await ok(R.createTag, { repoId: repo, tag: { name: "latest", digest: DIGEST_A } });
      const s = await ok(R.getRepoTagsSummary, { repoId: repo });
      expect(Number(s.tagCount)).toBe(6);
      expect(s.latestTag).toMatchObject({ name: "latest", digest: DIGEST_A });
      expect(s.latestVersion).toBe("1.27.3-r1");
      const noEpochs = await ok(R.getRepoTagsSummary, { repoId: repo, excludeEpochs: true });
      expect(Number(noEpochs.tagCount)).toBe(5);
      expect(noEpochs.latestVersion).toBe("1.27.3");
      await refused(R.getRepoTagsSummary, { repoId: `${org}/0123456789abcdef` }, Code.NotFound);
      await refused(R.getRepoTagsSummary, { repoId: "NOT-A-UID" }, Code.InvalidArgument, "repo_id");
    });

    it("GetRepoCountBySource is 0 for a known repo (nothing mirrors here) and NOT_FOUND otherwise", async () => {
      const repo = await newRepo();
      const c = await ok(R.getRepoCountBySource, { id: repo });
      expect(Number(c.count ?? 0)).toBe(0);
      await refused(R.getRepoCountBySource, { id: `${org}/0123456789abcdef` }, Code.NotFound);
    });
  });

  describe("registry settings and deployments", () => {
    it("GetRegistrySettings / UpdateRegistrySettings store an organization's defaults", async () => {
      const before = await ok(R.getRegistrySettings, { registryId: org });
      expect(before.registryId).toBe(org);
      expect(before.uniqueTags ?? false).toBe(false);
      expect(before.eolGracePeriod ?? false).toBe(false);
      const put = await ok(R.updateRegistrySettings, { registryId: org, uniqueTags: true, eolGracePeriod: true });
      expect(put).toMatchObject({ registryId: org, uniqueTags: true, eolGracePeriod: true });
      expect(await ok(R.getRegistrySettings, { registryId: org })).toMatchObject({ uniqueTags: true, eolGracePeriod: true });
      // A PUT replaces: what is left out is false again.
      const reset = await ok(R.updateRegistrySettings, { registryId: org, eolGracePeriod: true });
      expect(reset.uniqueTags ?? false).toBe(false);
      const folder = (await op("POST", `/iam/v2beta1/groups/${org}`, { name: unique("folder") })).uid as string;
      await refused(R.updateRegistrySettings, { registryId: folder, uniqueTags: true }, Code.InvalidArgument, "registry_id");
      await refused(R.getRegistrySettings, { registryId: folder }, Code.InvalidArgument, "registry_id");
      await refused(R.updateRegistrySettings, { registryId: "d".repeat(40), uniqueTags: true }, Code.NotFound);
    });

    it("CreateDeployment / UpdateDeployment / GetDeployment keep a repo's charts", async () => {
      const repo = await newRepo();
      await refused(R.getDeployment, { repoId: repo }, Code.NotFound);
      await refused(R.updateDeployment, { repoId: repo, charts: [{ repo: "https://charts.example.test" }] }, Code.NotFound);
      const made = await ok(R.createDeployment, {
        parentId: repo,
        charts: [{ repo: "oci://cgr.dev/charts", chart: "nginx", source: "https://github.com/example/charts" }, { repo: "https://charts.example.test" }],
      });
      expect(made).toEqual({
        id: repo,
        charts: [{ repo: "oci://cgr.dev/charts", chart: "nginx", source: "https://github.com/example/charts" }, { repo: "https://charts.example.test" }],
      });
      expect(await ok(R.getDeployment, { repoId: repo })).toEqual(made);
      await refused(R.createDeployment, { parentId: repo, charts: [] }, Code.AlreadyExists);
      const replaced = await ok(R.updateDeployment, { repoId: repo, charts: [{ repo: "https://other.example.test", chart: "web" }] });
      expect(replaced).toEqual({ id: repo, charts: [{ repo: "https://other.example.test", chart: "web" }] });
      const bad: [MessageInitShape<typeof Registry.method.updateDeployment.input>, string][] = [
        [{ repoId: repo, charts: [{ repo: "" }] }, "charts[0].repo"],
        [{ repoId: repo, charts: [{ repo: "ftp://charts.example.test" }] }, "charts[0].repo"],
        [{ repoId: repo, charts: [{ repo: "https://ok.example.test", source: "javascript:alert(1)" }] }, "charts[0].source"],
        [{ repoId: repo, charts: [{ repo: "https://ok.example.test", chart: "two words" }] }, "charts[0].chart"],
        [{ repoId: repo, charts: Array.from({ length: 101 }, () => ({ repo: "https://ok.example.test" })) }, "charts"],
      ];
      for (const [req, field] of bad) await refused(R.updateDeployment, req, Code.InvalidArgument, field);
    });
  });

  describe("READMEs", () => {
    it("UpdateRepoReadme stores Markdown that GetRepoReadme and v1 ListRepos return", async () => {
      const repo = await newRepo();
      expect((await ok(ReposService.method.getRepoReadme, { uid: repo })).content ?? "").toBe("");
      const doc = "# nginx\n\n\tA web server — ünïcode ✓\r\n";
      const put = await ok(ReposService.method.updateRepoReadme, { repoReadme: { uid: repo, content: doc } });
      expect(put).toEqual({ uid: repo, content: doc });
      expect(await ok(ReposService.method.getRepoReadme, { uid: repo })).toEqual({ uid: repo, content: doc });
      const listed = (await ok(R.listRepos, { id: repo })).items as { readme?: string }[];
      expect(listed[0]?.readme).toBe(doc);
      // No mask and no content: nothing to change. An explicit mask clears it.
      expect((await ok(ReposService.method.updateRepoReadme, { repoReadme: { uid: repo } })).content).toBe(doc);
      const cleared = await ok(ReposService.method.updateRepoReadme, { repoReadme: { uid: repo, content: "" }, updateMask: { paths: ["content"] } });
      expect(cleared.content ?? "").toBe("");
      // At the limit is fine; one byte more is not.
      await ok(ReposService.method.updateRepoReadme, { repoReadme: { uid: repo, content: "x".repeat(README_MAX_BYTES) } });
      await refused(
        ReposService.method.updateRepoReadme,
        { repoReadme: { uid: repo, content: `${"é".repeat(README_MAX_BYTES / 2)}x` } },
        Code.InvalidArgument,
        "repo_readme.content",
      );
      await refused(ReposService.method.updateRepoReadme, { repoReadme: { uid: repo, content: "nul\u0000byte" } }, Code.InvalidArgument, "repo_readme.content");
      if (door.name === "rest" || door.name.includes("json")) {
        // JSON can carry an unpaired surrogate ("\ud800"), which is not text; the JSON doors
        // refuse it before the method runs (binary protobuf cannot carry one: the client's
        // encoder writes U+FFFD before the bytes leave it).
        await refused(ReposService.method.updateRepoReadme, { repoReadme: { uid: repo, content: "half a pair \ud800" } }, Code.InvalidArgument);
      }
      await refused(ReposService.method.updateRepoReadme, { repoReadme: { uid: repo, content: "x" }, updateMask: { paths: ["uid"] } }, Code.InvalidArgument);
      await refused(ReposService.method.updateRepoReadme, { repoReadme: { uid: `${org}/0123456789abcdef`, content: "x" } }, Code.NotFound);
      await refused(ReposService.method.getRepoReadme, { uid: `${org}/0123456789abcdef` }, Code.NotFound);
    });

    it("v1 writes keep the README: unchanged or empty is accepted, a different one is refused", async () => {
      const repo = await newRepo("readme-kept");
      await ok(ReposService.method.updateRepoReadme, { repoReadme: { uid: repo, content: "# kept" } });
      expect(await ok(R.updateRepo, { id: repo, name: "readme-kept", readme: "# kept", description: "v1" })).toMatchObject({
        readme: "# kept",
        description: "v1",
      });
      expect(await ok(R.updateRepo, { id: repo, name: "readme-kept" })).toMatchObject({ readme: "# kept" });
      expect(await ok(R.createRepo, { parentId: org, repo: { name: "readme-kept" } })).toMatchObject({ id: repo, readme: "# kept" });
      await refused(R.updateRepo, { id: repo, name: "readme-kept", readme: "# replaced" }, Code.InvalidArgument, "readme");
      await refused(R.createRepo, { parentId: org, repo: { name: "readme-kept", readme: "# replaced" } }, Code.InvalidArgument, "repo.readme");
    });

    it("a caller with repo.update but not repo.internal.admin cannot write a README by either API", async () => {
      const repo = await newRepo();
      const user = await createUserIdentity(t.dataDir, unique("writer"));
      const role = await op("POST", `/iam/v2beta1/roles/${org}`, {
        name: unique("repo-writer"),
        capabilities: [Capability[Capability.CAP_REPO_UPDATE], Capability[Capability.CAP_REPO_LIST]],
      });
      await op("POST", `/iam/v2beta1/roleBindings/${org}`, { identityUid: user, roleUid: role.uid });
      const token = await identityToken(t.app, user);
      await refused(ReposService.method.updateRepoReadme, { repoReadme: { uid: repo, content: "# mine" } }, Code.PermissionDenied, undefined, token);
      await refused(R.updateRepo, { id: repo, name: "whatever", readme: "# mine" }, Code.InvalidArgument, "readme", token);
      // It may read it and change the repo itself.
      expect((await ok(ReposService.method.getRepoReadme, { uid: repo }, token)).uid).toBe(repo);
      expect(await ok(R.updateRepo, { id: repo, name: "renamed-by-writer" }, token)).toMatchObject({ name: "renamed-by-writer" });
    });
  });

  describe("authorization", () => {
    it("a caller that may only list tags reads history and summaries but writes nothing, and sees no other organization", async () => {
      const repo = await newRepo();
      const tagId = (await ok(R.createTag, { repoId: repo, tag: { name: "latest", digest: DIGEST_A } })).id as string;
      const other = (await op("POST", "/iam/v2beta1/groups", { name: unique("other org") })).uid as string;
      const user = await createUserIdentity(t.dataDir, unique("reader"));
      const role = await op("POST", `/iam/v2beta1/roles/${org}`, { name: unique("tag-reader"), capabilities: [Capability[Capability.CAP_TAG_LIST]] });
      await op("POST", `/iam/v2beta1/roleBindings/${org}`, { identityUid: user, roleUid: role.uid });
      const token = await identityToken(t.app, user);
      expect((await ok(R.listTagHistory, { parentId: tagId }, token)).items).toHaveLength(1);
      expect(Number((await ok(R.getRepoTagsSummary, { repoId: repo }, token)).tagCount)).toBe(1);
      const denied = Code.PermissionDenied;
      await refused(R.createTag, { repoId: repo, tag: { name: "mine", digest: DIGEST_B } }, denied, undefined, token);
      await refused(R.updateTag, { id: tagId, name: "latest", digest: DIGEST_B }, denied, undefined, token);
      await refused(R.deleteTag, { id: tagId }, denied, undefined, token);
      await refused(R.createRepo, { parentId: org, repo: { name: unique("mine") } }, denied, undefined, token);
      await refused(R.updateRepo, { id: repo, name: "mine" }, denied, undefined, token);
      await refused(R.deleteRepo, { id: repo }, denied, undefined, token);
      await refused(R.updateRegistrySettings, { registryId: org, uniqueTags: true }, denied, undefined, token);
      await refused(R.getRegistrySettings, { registryId: org }, denied, undefined, token);
      await refused(R.createDeployment, { parentId: repo, charts: [] }, denied, undefined, token);
      await refused(R.getDeployment, { repoId: repo }, denied, undefined, token);
      await refused(R.getRepoCountBySource, { id: repo }, denied, undefined, token);
      await refused(R.getRegistrySettings, { registryId: other }, denied, undefined, token);
      // Unknown and forbidden look the same.
      await refused(R.listTagHistory, { parentId: `${other}/0123456789abcdef/0123456789abcdef` }, denied, undefined, token);
    });

    it("CreateRepo replaces an existing repo only for a caller that may also update it", async () => {
      const name = unique("guarded");
      const existing = (await ok(R.createRepo, { parentId: org, repo: { name, description: "original" } })).id as string;
      const bind = async (caps: Capability[]) => {
        const user = await createUserIdentity(t.dataDir, unique("creator"));
        const role = await op("POST", `/iam/v2beta1/roles/${org}`, { name: unique("role"), capabilities: caps.map((c) => Capability[c]) });
        await op("POST", `/iam/v2beta1/roleBindings/${org}`, { identityUid: user, roleUid: role.uid });
        return identityToken(t.app, user);
      };
      const creator = await bind([Capability.CAP_REPO_CREATE]);
      expect((await ok(R.createRepo, { parentId: org, repo: { name: unique("fresh") } }, creator)).id).toBeDefined();
      const o = await refused(R.createRepo, { parentId: org, repo: { name, description: "hijacked" } }, Code.PermissionDenied, undefined, creator);
      expect(o.ok ? undefined : o.metadata.scope).toBe(existing);
      const updater = await bind([Capability.CAP_REPO_CREATE, Capability.CAP_REPO_UPDATE]);
      expect(await ok(R.createRepo, { parentId: org, repo: { name, description: "updated" } }, updater)).toMatchObject({
        id: existing,
        description: "updated",
      });
    });
  });

  describe("end-of-life tags", () => {
    it("ListEolTags lists the tags `trellis import` gave end-of-life facts, a page at a time", async () => {
      const repoName = unique("eol-repo");
      const repo = await newRepo(repoName);
      expect((await ok(R.listEolTags, { uidp: { descendantsOf: org } })).items ?? []).toEqual([]);
      for (const name of ["1.24", "1.25", "1.25-r1", "latest"]) await ok(R.createTag, { repoId: repo, tag: { name, digest: DIGEST_A } });
      const eol = (name: string, status: string) => ({
        parent: org,
        repo_name: repoName,
        eol_tag: {
          name,
          mainPackageName: "nginx",
          tagStatus: status,
          graceStatus: "GRACE_ACTIVE",
          gracePeriodExpiryDate: "2027-01-01T00:00:00Z",
          mainPackageVersion: { version: name, eolDate: "2026-05-01" },
        },
      });
      await importRecords([eol("1.24", "TAG_INACTIVE"), eol("1.25", "TAG_IN_GRACE"), eol("1.25-r1", "TAG_IN_GRACE")]);
      const first = await ok(R.listEolTags, { uidp: { descendantsOf: org }, pageSize: 2n });
      const second = await ok(R.listEolTags, { uidp: { descendantsOf: org }, pageSize: 2n, pageToken: first.nextPageToken as string });
      const items = [...(first.items as JsonObject[]), ...(second.items as JsonObject[])];
      expect(items.map((i) => i.name).sort()).toEqual(["1.24", "1.25", "1.25-r1"]);
      expect(second.nextPageToken ?? "").toBe("");
      const inactive = items.find((i) => i.name === "1.24");
      expect(inactive).toMatchObject({
        mainPackageName: "nginx",
        tagStatus: "TAG_INACTIVE",
        graceStatus: "GRACE_ACTIVE",
        mainPackageVersion: { version: "1.24", eolDate: "2026-05-01" },
      });
      expect(Date.parse(String(inactive?.gracePeriodExpiryDate))).toBe(Date.parse("2027-01-01T00:00:00Z"));
      expect(String(inactive?.id).startsWith(`${repo}/`)).toBe(true);
      const noEpochs = await ok(R.listEolTags, { uidp: { descendantsOf: org }, excludeEpochs: true });
      expect((noEpochs.items as JsonObject[]).map((i) => i.name).sort()).toEqual(["1.24", "1.25"]);
      const named = await ok(R.listEolTags, { uidp: { descendantsOf: org }, name: "1.25" });
      expect((named.items as JsonObject[]).map((i) => i.name)).toEqual(["1.25"]);
      await refused(R.listEolTags, { pageSize: -1n }, Code.InvalidArgument, "page_size");
      await refused(R.listEolTags, { pageToken: "garbage" }, Code.InvalidArgument, "page_token");
      await refused(R.listEolTags, { name: "bad name" }, Code.InvalidArgument, "name");
    });
  });
});
