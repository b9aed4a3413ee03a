/**
 * Repos and Tags end to end over every RPC protocol (REST: test/rest/registry.test.ts).
 * Rejected calls assert the code, the AIP-193 details and an unchanged database.
 */
import { type Client, ConnectError, createClient } from "@connectrpc/connect";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GroupsService } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { CatalogTier as CatalogTierV1, Registry } from "../../gen/chainguard/platform/registry/registry_v1_pb.js";
import { CatalogTier, ReposService } from "../../gen/chainguard/platform/registry/v2beta1/repos_pb.js";
import { TagsService } from "../../gen/chainguard/platform/registry/v2beta1/tags_pb.js";
import { BadRequestSchema, ErrorInfoSchema, PreconditionFailureSchema } from "../../gen/google/rpc/error_details_pb.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { expectRejectedAndUnchanged } from "../support/db.js";
import { closeGrpcClients, Code, rpcTransports } from "../support/transports.js";

const DIGEST_A = `sha256:${"a".repeat(64)}`;
const DIGEST_B = `sha256:${"b".repeat(64)}`;

function asConnectError(err: unknown): ConnectError {
  expect(err).toBeInstanceOf(ConnectError);
  return err as ConnectError;
}

function violations(err: ConnectError): string[] {
  return err.findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => v.field) ?? [];
}

describe.each(rpcTransports)("registry over $name", (transport) => {
  let t: TestApp;
  let groups: Client<typeof GroupsService>;
  let repos: Client<typeof ReposService>;
  let tags: Client<typeof TagsService>;
  let v1: Client<typeof Registry>;
  let org: string;

  const rejected = async (fn: () => Promise<unknown>) => asConnectError(await expectRejectedAndUnchanged(t, fn));

  beforeAll(async () => {
    t = await startTestApp();
    const tr = transport.create(t.url);
    groups = createClient(GroupsService, tr);
    repos = createClient(ReposService, tr);
    tags = createClient(TagsService, tr);
    v1 = createClient(Registry, tr);
    org = (await groups.createGroup({ group: { name: "registry org" } })).uid;
  });
  afterAll(async () => {
    closeGrpcClients();
    await t.close();
  });

  it("creates, gets, updates (mask) and deletes a repo", async () => {
    const r = await repos.createRepo({
      parent: org,
      repo: {
        name: "nginx",
        description: "web server",
        catalogTier: CatalogTier.APPLICATION,
        bundles: ["application"],
        aliases: ["nginx:latest"],
        activeTags: ["1.27"],
      },
    });
    expect(r.uid).toMatch(new RegExp(`^${org}/[0-9a-f]{16}$`));
    expect(r.createTime).toEqual(r.updateTime);
    expect(await repos.getRepo({ uid: r.uid })).toEqual(r);
    t.advanceClock(1000);
    const u = await repos.updateRepo({ repo: { uid: r.uid, description: "changed", name: "ignored" }, updateMask: { paths: ["description"] } });
    expect(u.description).toBe("changed");
    expect(u.name).toBe("nginx");
    expect(u.bundles).toEqual(["application"]);
    expect(Number(u.updateTime?.seconds)).toBeGreaterThan(Number(r.updateTime?.seconds));
    await repos.deleteRepo({ uid: r.uid });
    const err = asConnectError(await repos.getRepo({ uid: r.uid }).catch((e) => e));
    expect(err.code).toBe(Code.NotFound);
  });

  it("rejects hostile repo input with field violations and writes nothing", async () => {
    const cases: [object, string][] = [
      [{ parent: org, repo: { name: "" } }, "repo.name"],
      [{ parent: org, repo: { name: "UPPER" } }, "repo.name"],
      [{ parent: org, repo: { name: "../etc/passwd" } }, "repo.name"],
      [{ parent: org, repo: { name: "a".repeat(256) } }, "repo.name"],
      [{ parent: org, repo: { name: "ok", bundles: ["free-lunch"] } }, "repo.bundles[0]"],
      [{ parent: org, repo: { name: "ok", aliases: ["no tag"] } }, "repo.aliases[0]"],
      [{ parent: org, repo: { name: "ok", activeTags: ["-bad"] } }, "repo.active_tags[0]"],
      [{ parent: org, repo: { name: "ok", catalogTier: 99 } }, "repo.catalog_tier"],
      [{ parent: org, repo: { name: "ok", syncConfig: { source: "cgr.dev/chainguard/nginx" } } }, "repo.sync_config"],
      [{ parent: org, repo: { name: "ok", customOverlay: { environment: { A: "b" } } } }, "repo.custom_overlay"],
      [{ parent: "not/a/uid", repo: { name: "ok" } }, "parent"],
      [{ parent: org }, "repo"],
    ];
    for (const [req, field] of cases) {
      const err = await rejected(() => repos.createRepo(req));
      expect(err.code, field).toBe(Code.InvalidArgument);
      expect(err.findDetails(ErrorInfoSchema)[0]?.reason).toBe("INVALID_ARGUMENT");
      expect(violations(err)).toContain(field);
    }
    const missing = await rejected(() => repos.createRepo({ parent: "c".repeat(40), repo: { name: "ok" } }));
    expect(missing.code).toBe(Code.NotFound);
    await repos.createRepo({ parent: org, repo: { name: "taken" } });
    const dup = await rejected(() => repos.createRepo({ parent: org, repo: { name: "taken" } }));
    expect(dup.code).toBe(Code.AlreadyExists);
    const out = await rejected(() => repos.updateRepo({ repo: { uid: `${org}/0123456789abcdef`, name: "x" }, updateMask: { paths: ["create_time"] } }));
    expect(out.code).toBe(Code.InvalidArgument);
  });

  it("lists repos by descendants_of, name and order with keyset pages", async () => {
    const team = (await groups.createGroup({ parent: org, group: { name: "team" } })).uid;
    for (const name of ["bravo", "alpha", "charlie"]) await repos.createRepo({ parent: team, repo: { name } });
    const first = await repos.listRepos({ uidp: { descendantsOf: team }, orderBy: "name desc", pageSize: 2 });
    expect(first.repos.map((r) => r.name)).toEqual(["charlie", "bravo"]);
    expect(first.totalCount).toBe(3n);
    const second = await repos.listRepos({ uidp: { descendantsOf: team }, orderBy: "name desc", pageSize: 2, pageToken: first.nextPageToken });
    expect(second.repos.map((r) => r.name)).toEqual(["alpha"]);
    expect(second.nextPageToken).toBe("");
    const named = await repos.listRepos({ name: "alpha" });
    expect(named.repos.map((r) => r.uid)).toEqual([second.repos[0]?.uid]);
    const other = await repos.listRepos({ uidp: { descendantsOf: team }, orderBy: "name", pageToken: first.nextPageToken }).catch((e) => e);
    expect(asConnectError(other).code).toBe(Code.InvalidArgument);
    const badOrder = await repos.listRepos({ orderBy: "digest" }).catch((e) => e);
    expect(violations(asConnectError(badOrder))).toEqual(["order_by"]);

    // v1 shape over the same table: id, v1 tier numbers, no paging.
    await repos.createRepo({ parent: team, repo: { name: "tiered", catalogTier: CatalogTier.BASE } });
    const list = await v1.listRepos({ uidp: { childrenOf: team } });
    expect(list.items.map((r) => r.name).sort()).toEqual(["alpha", "bravo", "charlie", "tiered"]);
    const tiered = list.items.find((r) => r.name === "tiered");
    expect(tiered?.catalogTier).toBe(CatalogTierV1.BASE);
    expect(tiered?.id).toMatch(new RegExp(`^${team}/`));
  });

  it("refuses to delete a group with repos: code 9, RESOURCE_NOT_EMPTY", async () => {
    const g = (await groups.createGroup({ group: { name: "with repos" } })).uid;
    const r = await repos.createRepo({ parent: g, repo: { name: "busybox" } });
    const err = await rejected(() => groups.deleteGroup({ uid: g }));
    expect(err.code).toBe(Code.FailedPrecondition);
    expect(err.rawMessage).toBe("Precondition failed: cannot delete group with child repos");
    expect(err.findDetails(ErrorInfoSchema)[0]?.reason).toBe("FAILED_PRECONDITION");
    expect(err.findDetails(PreconditionFailureSchema)[0]?.violations[0]?.type).toBe("RESOURCE_NOT_EMPTY");
    await repos.deleteRepo({ uid: r.uid });
    await groups.deleteGroup({ uid: g });
  });

  it("creates tags as an upsert, validates OCI names and digests, filters and deletes", async () => {
    const repo = await repos.createRepo({ parent: org, repo: { name: "tagged" } });
    const latest = await tags.createTag({ parent: repo.uid, tag: { name: "latest", digest: DIGEST_A, bundles: ["base"] } });
    expect(latest.uid).toMatch(new RegExp(`^${repo.uid}/[0-9a-f]{16}$`));
    t.advanceClock(5000);
    const moved = await tags.createTag({ parent: repo.uid, tag: { name: "latest", digest: DIGEST_B } });
    expect(moved.uid).toBe(latest.uid); // updated, not duplicated
    expect(moved.digest).toBe(DIGEST_B);
    for (const name of ["1.2", "sha256-abc.sig", "1.2-20260101", "1.2-r3"]) {
      await tags.createTag({ parent: repo.uid, tag: { name, digest: DIGEST_A } });
    }
    const children = { childrenOf: repo.uid };
    const plain = await tags.listTags({ uidp: children, orderBy: "name" });
    expect(plain.tags.map((x) => x.name)).toEqual(["1.2", "latest"]);
    const all = await tags.listTags({ uidp: children, includeReferrers: true, includeDates: true, includeEpochs: true, orderBy: "name" });
    expect(all.tags.map((x) => x.name)).toEqual(["1.2", "1.2-20260101", "1.2-r3", "latest", "sha256-abc.sig"]);
    const epochs = await tags.listTags({ uidp: children, includeEpochs: true, orderBy: "name" });
    expect(epochs.tags.map((x) => x.name)).toEqual(["1.2", "1.2-r3", "latest"]);
    const byDigest = await tags.listTags({ uidp: children, digest: DIGEST_B });
    expect(byDigest.tags.map((x) => x.name)).toEqual(["latest"]);
    const byName = await tags.listTags({ name: "1.2", uidp: { descendantsOf: org } });
    expect(byName.tags).toHaveLength(1);
    const since = await tags.listTags({ uidp: children, updatedSince: moved.updateTime, orderBy: "update_time" });
    expect(since.tags.map((x) => x.name)).toContain("latest");
    const future = await tags.listTags({ uidp: children, updatedSince: timestampFromMs(Date.now() + 3_600_000) });
    expect(future.tags).toEqual([]);

    const cases: [object, string][] = [
      [{ parent: repo.uid, tag: { name: "", digest: DIGEST_A } }, "tag.name"],
      [{ parent: repo.uid, tag: { name: ".hidden", digest: DIGEST_A } }, "tag.name"],
      [{ parent: repo.uid, tag: { name: "x".repeat(129), digest: DIGEST_A } }, "tag.name"],
      [{ parent: repo.uid, tag: { name: "ok", digest: "sha256:abc" } }, "tag.digest"],
      [{ parent: repo.uid, tag: { name: "ok", digest: `sha512:${"a".repeat(128)}` } }, "tag.digest"],
      [{ parent: repo.uid, tag: { name: "ok", digest: DIGEST_A.toUpperCase() } }, "tag.digest"],
      [{ parent: repo.uid, tag: { name: "ok" } }, "tag.digest"],
      [{ parent: repo.uid }, "tag"],
    ];
    for (const [req, field] of cases) {
      const err = await rejected(() => tags.createTag(req));
      expect(err.code, field).toBe(Code.InvalidArgument);
      expect(violations(err)).toContain(field);
    }
    const noRepo = await rejected(() => tags.createTag({ parent: `${org}/0123456789abcdef`, tag: { name: "ok", digest: DIGEST_A } }));
    expect(noRepo.code).toBe(Code.NotFound);
    const badFilter = await tags.listTags({ digest: "md5:x" }).catch((e) => e);
    expect(violations(asConnectError(badFilter))).toEqual(["digest"]);

    const v1Tags = await v1.listTags({ uidp: children, excludeReferrers: true });
    expect(v1Tags.items.map((x) => x.name).sort()).toEqual(["1.2", "1.2-20260101", "1.2-r3", "latest"]);
    expect(v1Tags.items.find((x) => x.name === "latest")?.lastUpdated).toEqual(moved.updateTime);

    await tags.deleteTag({ uid: latest.uid });
    expect(asConnectError(await tags.getTag({ uid: latest.uid }).catch((e) => e)).code).toBe(Code.NotFound);
    // Deleting the repo takes its remaining tags with it.
    await repos.deleteRepo({ uid: repo.uid });
    expect((await tags.listTags({ uidp: children, includeReferrers: true, includeDates: true, includeEpochs: true })).tags).toEqual([]);
  });
});
