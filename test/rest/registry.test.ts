/**
 * Repos, Tags and the v1 repo list over REST/JSON as a curl user sees them, including the
 * published delete-group-with-repos error (docs/published-api.md "Errors") byte for byte.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "../support/app.js";
import { snapshotDb } from "../support/db.js";
import { rest } from "../support/rest.js";

let t: TestApp;
const call = (method: string, path: string, body?: unknown) => rest(t.url, method, path, body);
const DIGEST = `sha256:${"0123456789abcdef".repeat(4)}`;

beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t.close());

describe("registry over REST", () => {
  it("deleting a group with repos fails exactly as the published API answers it (docs/published-api.md, Errors)", async () => {
    const org = (await call("POST", "/iam/v2beta1/groups", { name: "acme" })).body.uid;
    const repo = await call("POST", `/registry/v2beta1/repos/${org}`, { name: "nginx" });
    expect(repo.status).toBe(200);
    const before = await snapshotDb(t);
    const res = await fetch(`${t.url}/iam/v2beta1/groups/${org}`, { method: "DELETE", headers: { authorization: `Bearer ${t.token}` } });
    expect(res.status).toBe(400);
    expect(await res.text()).toBe(
      JSON.stringify({
        code: 9,
        message: "Precondition failed: cannot delete group with child repos",
        details: [
          {
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            reason: "FAILED_PRECONDITION",
            domain: "iam.chainguard.dev",
            metadata: { child_kind: "repos" },
          },
          {
            "@type": "type.googleapis.com/google.rpc.PreconditionFailure",
            violations: [{ type: "RESOURCE_NOT_EMPTY", subject: org, description: "cannot delete group with child repos" }],
          },
        ],
      }),
    );
    expect(await snapshotDb(t)).toBe(before);
  });

  it("creates, patches, lists and reads repos and tags with the published JSON names", async () => {
    const org = (await call("POST", "/iam/v2beta1/groups", { name: "rest org" })).body.uid;
    const created = await call("POST", `/registry/v2beta1/repos/${org}`, {
      name: "python",
      catalogTier: "CATALOG_TIER_BASE",
      bundles: ["base", "fips"],
      activeTags: ["3.13"],
    });
    expect(created.body).toMatchObject({ name: "python", catalogTier: "CATALOG_TIER_BASE", bundles: ["base", "fips"], activeTags: ["3.13"], description: "" });
    const uid = created.body.uid;
    // sync_config keeps its published snake_case JSON name; Trellis cannot mirror, so it says so.
    const mirror = await call("POST", `/registry/v2beta1/repos/${org}`, { name: "mirror", sync_config: { source: "cgr.dev/chainguard/nginx" } });
    expect(mirror.status).toBe(400);
    expect(mirror.body.details[1].fieldViolations[0].field).toBe("repo.sync_config");
    const patched = await call("PATCH", `/registry/v2beta1/repos/${uid}`, { description: "snake" });
    expect(patched.body).toMatchObject({ description: "snake", name: "python", bundles: ["base", "fips"] });
    const list = await call("GET", `/registry/v2beta1/repos?uidp.descendants_of=${org}&order_by=name%20desc&page_size=10`);
    expect(list.status).toBe(200);
    expect(list.body.repos.map((r: { name: string }) => r.name)).toEqual(["python"]);
    expect(list.body.totalCount).toBe("1");

    const tag = await call("POST", `/registry/v2beta1/tags/${uid}`, { name: "3.13", digest: DIGEST });
    expect(tag.body).toMatchObject({ name: "3.13", digest: DIGEST, deprecated: false, bundles: [] });
    expect(tag.body.updateTime).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    const since = encodeURIComponent(tag.body.updateTime);
    const tags = await call("GET", `/registry/v2beta1/tags?uidp.children_of=${uid}&updated_since=${since}&digest=${DIGEST}`);
    expect(tags.body.tags.map((x: { uid: string }) => x.uid)).toEqual([tag.body.uid]);
    expect((await call("GET", `/registry/v2beta1/tags/${tag.body.uid}`)).body).toEqual(tag.body);

    const v1 = await call("GET", `/registry/v1/repos?uidp.descendants_of=${org}`);
    expect(v1.body).toEqual({
      items: [
        {
          id: uid,
          name: "python",
          catalogTier: "BASE",
          bundles: ["base", "fips"],
          readme: "",
          aliases: [],
          createTime: created.body.createTime,
          activeTags: ["3.13"],
          description: "snake",
        },
      ],
    });
    expect((await call("GET", `/registry/v1/repos?id=${uid}&name=python`)).body.items).toHaveLength(1);
    // v1 tags include generated tags unless excluded, and name the time last_updated.
    await call("POST", `/registry/v2beta1/tags/${uid}`, { name: "3.13-r1", digest: DIGEST });
    const v1Tags = await call("GET", `/registry/v1/tags?uidp.children_of=${uid}`);
    expect(v1Tags.body.items.map((x: { name: string }) => x.name).sort()).toEqual(["3.13", "3.13-r1"]);
    expect(v1Tags.body.items.find((x: { name: string }) => x.name === "3.13")).toEqual({
      id: tag.body.uid,
      name: "3.13",
      digest: DIGEST,
      lastUpdated: tag.body.updateTime,
      deprecated: false,
      bundles: [],
    });
    const noEpochs = await call("GET", `/registry/v1/tags?uidp.children_of=${uid}&exclude_epochs=true`);
    expect(noEpochs.body.items.map((x: { name: string }) => x.name)).toEqual(["3.13"]);
    expect((await call("GET", `/registry/v1/tags?digest=nope`)).status).toBe(400);
    expect((await call("DELETE", `/registry/v2beta1/tags/${tag.body.uid}`)).status).toBe(200);
    expect((await call("DELETE", `/registry/v2beta1/repos/${uid}`)).status).toBe(200);
    expect((await call("DELETE", `/iam/v2beta1/groups/${org}`)).status).toBe(200);
  });
});
