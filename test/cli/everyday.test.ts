/**
 * The CLI as people use chainctl: capabilities by their published names, versions, the group
 * tree, network failures, completion of option values, `-o json` matching REST, and the
 * guard rails of `import`, `serve` and `auth token --local`. The real `trellis` process.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "../support/app.js";
import { type CliResult, type CliRunner, cliRunner } from "../support/cli.js";

let t: TestApp;
let cli: CliRunner;
beforeAll(async () => {
  t = await startTestApp();
  cli = cliRunner(t.url, { TRELLIS_TOKEN: t.token });
});
afterAll(async () => {
  cli.cleanup();
  await t.close();
});

async function ok(args: string[]): Promise<CliResult> {
  const r = await cli.run(args);
  expect(r.code, `trellis ${args.join(" ")}: ${r.stderr}`).toBe(0);
  return r;
}
const json = (r: CliResult) => JSON.parse(r.stdout);

describe("capabilities by their published names", () => {
  it("`iam capabilities list` prints the published names with descriptions; roles create takes them", async () => {
    const [listed, table] = await Promise.all([
      ok(["iam", "capabilities", "list", "-o", "json"]),
      ok(["iam", "capabilities", "list", "-o", "table"]),
    ]);
    const caps = json(listed) as { name: string; capability: string; description: string }[];
    expect(caps).toContainEqual(expect.objectContaining({ name: "groups.list", capability: "CAP_IAM_GROUPS_LIST", description: "list and read groups" }));
    expect(caps.every((c) => c.description !== "")).toBe(true);
    expect(table.stdout).toMatch(/^groups\.list\s+CAP_IAM_GROUPS_LIST\s+list and read groups$/m);

    await ok(["iam", "groups", "create", "caps-org"]);
    const role = json(
      await ok(["iam", "roles", "create", "lister", "--group", "caps-org", "--capability", "groups.list", "--capability", "role_bindings.list", "-o", "json"]),
    );
    expect(role.capabilities).toEqual(["CAP_IAM_GROUPS_LIST", "CAP_IAM_ROLE_BINDINGS_LIST"]);
    const bad = await cli.run(["iam", "roles", "create", "x-role", "--group", "caps-org", "--capability", "groups.fly"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('unknown capability "groups.fly"');
    expect(bad.stderr).toContain("trellis iam capabilities list");
  }, 30_000);
});
