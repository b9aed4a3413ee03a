/**
 * Runs the README's call examples against a real server, so the README cannot rot: every
 * ```sh block that talks to http://127.0.0.1:8080 is executed with the test server's URL.
 */
import { execFile } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "../support/app.js";

const run = promisify(execFile);
const README = fs.readFileSync(path.resolve("README.md"), "utf8");
const blocks = [...README.matchAll(/```sh\n([\s\S]*?)```/g)]
  .map((m) => m[1] as string)
  .filter((b) => b.includes("http://127.0.0.1:8080"));

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t.close());

async function runBlock(block: string): Promise<string[]> {
  const script = block
    .replaceAll("http://127.0.0.1:8080", t.url)
    .replaceAll("npx buf ", `${path.resolve("node_modules/.bin/buf")} `)
    // The README's token command, pointed at the test server's data directory.
    .replaceAll("npx trellis auth token --local", `${process.execPath} ${path.resolve("bin/trellis.mjs")} auth token --local --data ${t.dataDir}`);
  const { stdout } = await run("bash", ["-euo", "pipefail", "-c", script], { cwd: path.resolve(".") });
  return stdout.split("\n").filter((l) => l.trim() !== "");
}

describe("README examples", () => {
  it("has the five example blocks (token, gRPC, Connect, REST, registry)", () => {
    expect(blocks.length).toBe(5);
  });

  it("Tokens: an operator token from the data directory, then a call with it", async () => {
    const lines = await runBlock(blocks.find((b) => b.includes("/iam/v2beta1/groups; echo")) as string);
    expect(JSON.parse(lines.join("")).groups).toBeInstanceOf(Array);
  });

  it("gRPC via buf curl: lists services and creates a group", async () => {
    const lines = await runBlock(blocks.find((b) => b.includes("buf curl")) as string);
    expect(lines).toContain("chainguard.platform.iam.v2beta1.GroupsService");
    const json = JSON.parse(lines.slice(lines.indexOf("{")).join("\n"));
    expect(json.name).toBe("acme");
  });

  it("Connect via curl: lists groups", async () => {
    const lines = await runBlock(blocks.find((b) => b.includes("GroupsService/ListGroups")) as string);
    expect(JSON.parse(lines.join("")).groups).toBeInstanceOf(Array);
  });

  it("REST via curl: the spec's flow, including its two errors", async () => {
    const lines = (await runBlock(blocks.find((b) => b.includes("uidp.descendants_of") && !b.includes("/registry/")) as string)).map((l) => JSON.parse(l));
    const [team, list, patched, invalid, notEmpty, v1] = lines;
    expect(team.name).toBe("team");
    expect(list.groups.map((g: { name: string }) => g.name)).toEqual(["team"]);
    expect(list.totalCount).toBe("1");
    expect(patched).toMatchObject({ name: "acme", description: "renamed" });
    expect(invalid).toMatchObject({ code: 3, message: 'Invalid argument: name: name must match "^[a-z0-9 ._-]{1,}$"' });
    expect(notEmpty).toMatchObject({ code: 9, message: "Precondition failed: cannot delete group with child groups" });
    expect(v1.items[0]).toMatchObject({ name: "acme", description: "renamed" });
  });

  it("registry via curl and gRPC: a repo, its tag, advisories and the spec's delete-with-repos error", async () => {
    const lines = (await runBlock(blocks.find((b) => b.includes("/registry/v2beta1/")) as string)).map((l) => JSON.parse(l));
    const [tags, advisories, repos, notEmpty] = lines;
    expect(tags.tags.map((x: { name: string }) => x.name)).toEqual(["latest"]);
    expect(advisories).toEqual({ advisories: [], nextPageToken: "", totalCount: "0", skipped: 0 });
    expect(repos.repos.map((x: { name: string }) => x.name)).toEqual(["nginx"]);
    expect(notEmpty).toMatchObject({ code: 9, message: "Precondition failed: cannot delete group with child repos" });
  });
});
