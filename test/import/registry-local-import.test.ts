/**
 * `trellis import` of what the registry serves from local state besides repos and tags:
 * READMEs and end-of-life facts, and the tag history an imported tag leaves, read back through
 * the running server's REST door.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { PassThrough } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runImport } from "../../src/import/run-import.js";
import { README_MAX_BYTES } from "../../src/services/registry/validate.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { snapshotDb } from "../support/db.js";
import { rest } from "../support/rest.js";

const DIGEST_A = `sha256:${"a".repeat(64)}`;
const DIGEST_B = `sha256:${"b".repeat(64)}`;

let t: TestApp;
let org: string;
let work: string;
let files = 0;

async function importRecords(records: unknown[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const file = path.join(work, `records-${files++}.ndjson`);
  fs.writeFileSync(file, records.map((r) => JSON.stringify(r)).join("\n"));
  const out: string[] = [];
  const err: string[] = [];
  const code = await runImport(["--data", t.dataDir, "--quiet", file], {
    stdout: new PassThrough().on("data", (c) => out.push(String(c))),
    stderr: Object.assign(
      new PassThrough().on("data", (c) => err.push(String(c))),
      { isTTY: false },
    ),
    env: {},
  });
  return { code, stdout: out.join(""), stderr: err.join("") };
}

async function get(urlPath: string) {
  const r = await rest(t.url, "GET", urlPath);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
}

beforeAll(async () => {
  t = await startTestApp();
  work = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-import-local-"));
  org = (await rest(t.url, "POST", "/iam/v2beta1/groups", { name: "local import org" })).body.uid;
  await rest(t.url, "POST", `/registry/v2beta1/repos/${org}`, { name: "nginx" });
});
afterAll(async () => {
  fs.rmSync(work, { recursive: true, force: true });
  await t.close();
});

describe("trellis import of local registry state", () => {
  it("an imported tag starts its history, and a moved one adds to it; an unchanged one does not", async () => {
    const tag = (digest: string) => ({ parent: org, repo_name: "nginx", tag: { name: "stable", digest } });
    expect((await importRecords([tag(DIGEST_A)])).code).toBe(0);
    const uid = (await get(`/registry/v1/tags?name=stable`)).items[0].id as string;
    t.advanceClock(1000);
    const again = await importRecords([tag(DIGEST_A)]);
    expect(again.stdout).toMatch(/^import: 0 loaded, 0 updated, 1 unchanged, 0 rejected/);
    expect((await importRecords([tag(DIGEST_B)])).code).toBe(0);
    const history = await get(`/registry/v1/tags/${uid}/history`);
    expect(history.items.map((i: { digest: string }) => i.digest)).toEqual([DIGEST_B, DIGEST_A]);
  });

  it("loads a README by repo uid or name, idempotently; an invalid one is rejected and writes nothing", async () => {
    const repo = (await get(`/registry/v1/repos?name=nginx`)).items[0].id as string;
    const first = await importRecords([{ parent: repo, readme: { content: "# nginx" } }]);
    expect(first.stdout).toMatch(/^import: 1 loaded, 0 updated, 0 unchanged, 0 rejected/);
    expect((await get(`/registry/v2beta1/repos/${repo}/readme`)).content).toBe("# nginx");
    const byName = await importRecords([{ parent: org, repo_name: "nginx", readme: { content: "# nginx\n\nupdated" } }]);
    expect(byName.stdout).toMatch(/^import: 0 loaded, 1 updated, 0 unchanged, 0 rejected/);
    expect((await importRecords([{ parent: repo, readme: { content: "# nginx\n\nupdated" } }])).stdout).toMatch(/1 unchanged/);

    const before = await snapshotDb(t);
    const bad = await importRecords([
      { parent: repo, readme: { content: "x".repeat(README_MAX_BYTES + 1) } },
      { parent: repo, readme: { content: "bell\u0007" } },
      { parent: org, repo_name: "no-such-repo", readme: { content: "# x" } },
      { parent: repo, readme: { content: "# x" }, extra: true },
    ]);
    expect(bad.code).toBe(3);
    expect(bad.stdout).toMatch(/^import: 0 loaded, 0 updated, 0 unchanged, 4 rejected/);
    expect(bad.stderr).toContain("readme.content");
    expect(bad.stderr).toContain('unknown key "extra"');
    expect(await snapshotDb(t)).toBe(before);
  });

  it("loads end-of-life facts for existing tags only, with known statuses", async () => {
    const before = await snapshotDb(t);
    const bad = await importRecords([
      { parent: org, repo_name: "nginx", eol_tag: { name: "no-such-tag", tagStatus: "TAG_INACTIVE" } },
      { parent: org, repo_name: "nginx", eol_tag: { name: "stable", tagStatus: 7 } },
      { parent: org, repo_name: "nginx", eol_tag: { name: "stable", graceStatus: "GRACE_FOREVER" } },
      { parent: org, repo_name: "nginx", eol_tag: { tagStatus: "TAG_INACTIVE" } },
    ]);
    expect(bad.stdout).toMatch(/^import: 0 loaded, 0 updated, 0 unchanged, 4 rejected/);
    expect(bad.stderr).toContain("eol_tag.tag_status");
    expect(await snapshotDb(t)).toBe(before);

    const good = await importRecords([{ parent: org, repo_name: "nginx", eol_tag: { name: "stable", mainPackageName: "nginx", tagStatus: "TAG_IN_GRACE" } }]);
    expect(good.code).toBe(0);
    const list = await get(`/registry/v1/eoltags?uidp.descendants_of=${org}`);
    expect(list.items).toHaveLength(1);
    expect(list.items[0]).toMatchObject({ name: "stable", mainPackageName: "nginx", tagStatus: "TAG_IN_GRACE" });
    // Deleting the tag takes its facts with it.
    await rest(t.url, "DELETE", `/registry/v1/tags/${list.items[0].id}`);
    expect((await get(`/registry/v1/eoltags?uidp.descendants_of=${org}`)).items).toEqual([]);
  });
});
