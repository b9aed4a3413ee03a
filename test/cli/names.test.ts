/**
 * Every CLI argument that names a resource takes its uid or its name (one resolver,
 * src/cli/name-args.ts): identities, roles (get and delete), repos, tags, and role bindings
 * named by identity + role. Unknown names and ambiguous ones are usage errors (exit 2); the
 * ambiguous case lists the candidates and says how to narrow the lookup. The real `trellis`
 * process against a real server.
 */
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "../support/app.js";
import { type CliRunner, cliRunner, jsonOut, runOk } from "../support/cli.js";
import { storeArgs } from "../support/store-target.js";

const NDJSON = path.resolve("test/fixtures/import/registry.ndjson");

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

const ok = (args: string[]) => runOk(cli, args);
const json = jsonOut;

describe("names wherever a resource is named", () => {
  it("identities: get, update and delete by name; --group narrows an ambiguous name", async () => {
    const acme = json(await ok(["iam", "groups", "create", "names-acme", "-o", "json"]));
    const beta = json(await ok(["iam", "groups", "create", "names-beta", "-o", "json"]));
    const bot = json(
      await ok(["iam", "identities", "create", "deploy-bot", "--group", "names-acme", "--issuer", "https://ci.example", "--subject", "a", "-o", "json"]),
    );
    const other = json(
      await ok(["iam", "identities", "create", "deploy-bot", "--group", "names-beta", "--issuer", "https://ci.example", "--subject", "b", "-o", "json"]),
    );

    const ambiguous = await cli.run(["iam", "identities", "get", "deploy-bot"]);
    expect(ambiguous.code).toBe(2);
    expect(ambiguous.stderr).toContain('several identities are named "deploy-bot"');
    expect(ambiguous.stderr).toContain("--group");
    expect(ambiguous.stderr).toContain(bot.uid);
    expect(ambiguous.stderr).toContain(other.uid);

    expect(json(await ok(["iam", "identities", "get", "deploy-bot", "--group", "names-acme", "-o", "json"])).uid).toBe(bot.uid);
    const renamed = json(await ok(["iam", "identities", "update", "deploy-bot", "--group", acme.uid, "--description", "ships", "-o", "json"]));
    expect(renamed).toMatchObject({ uid: bot.uid, description: "ships" });
    const del = await ok(["iam", "identities", "delete", "deploy-bot", "--group", "names-beta"]);
    expect(del.stderr).toBe(`deleted identity ${other.uid}\n`);
    // Now unique: the name alone is enough.
    expect(json(await ok(["iam", "identities", "get", "deploy-bot", "-o", "json"])).uid).toBe(bot.uid);
    expect(beta.uid).not.toBe(acme.uid);
  }, 60_000);

  it("roles: get and delete a custom role by name; role bindings created, listed and deleted by identity + role names", async () => {
    await ok(["iam", "groups", "create", "names-roles"]);
    const role = json(await ok(["iam", "roles", "create", "releaser", "--group", "names-roles", "--capability", "groups.list", "-o", "json"]));
    const who = json(
      await ok(["iam", "identities", "create", "release-bot", "--group", "names-roles", "--issuer", "https://ci.example", "--subject", "r", "-o", "json"]),
    );

    expect(json(await ok(["iam", "roles", "get", "releaser", "-o", "json"])).uid).toBe(role.uid);
    const binding = json(
      await ok(["iam", "role-bindings", "create", "--group", "names-roles", "--identity", "release-bot", "--role", "releaser", "-o", "json"]),
    );
    expect(binding).toMatchObject({ identity: { uid: who.uid }, role: { uid: role.uid } });
    const listed = json(await ok(["iam", "role-bindings", "list", "--identity", "release-bot", "-o", "json"]));
    expect(listed.map((b: { uid: string }) => b.uid)).toEqual([binding.uid]);

    const neither = await cli.run(["iam", "role-bindings", "delete", "--identity", "release-bot"]);
    expect(neither.code).toBe(2);
    expect(neither.stderr).toContain("--identity and --role");
    const gone = await ok(["iam", "role-bindings", "delete", "--identity", "release-bot", "--role", "releaser", "--group", "names-roles"]);
    expect(gone.stderr).toBe(`deleted role binding ${binding.uid}\n`);
    const again = await cli.run(["iam", "role-bindings", "delete", "--identity", "release-bot", "--role", "releaser"]);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('no role binding named "release-bot as releaser"');

    const deleted = await ok(["iam", "roles", "delete", "releaser"]);
    expect(deleted.stderr).toBe(`deleted role ${role.uid}\n`);
    const missing = await cli.run(["iam", "roles", "delete", "releaser"]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('no role named "releaser"');
  }, 60_000);

  it("repos and tags: get a repo by name, list and get tags of a repo named by name", async () => {
    const org = json(await ok(["iam", "groups", "create", "names-registry", "-o", "json"]));
    const imported = await cli.run(["import", ...storeArgs(t.dataDir), "--group", org.uid, "--quiet", NDJSON]);
    expect([0, 3]).toContain(imported.code);

    const repo = json(await ok(["registry", "repos", "get", "nginx", "--group", "names-registry", "-o", "json"]));
    expect(repo).toMatchObject({ name: "nginx", description: "web server" });
    expect(repo.uid.startsWith(`${org.uid}/`)).toBe(true);
    const tags = json(await ok(["registry", "tags", "list", "--repo", "nginx", "--group", "names-registry", "-o", "json"]));
    expect(tags.map((x: { name: string }) => x.name).sort()).toEqual(["1.27", "latest"]);
    const latest = json(await ok(["registry", "tags", "get", "latest", "--repo", "nginx", "--group", "names-registry", "-o", "json"]));
    expect(latest).toMatchObject({ name: "latest", uid: tags.find((x: { name: string }) => x.name === "latest").uid });
    const byUid = json(await ok(["registry", "tags", "get", latest.uid, "-o", "json"]));
    expect(byUid.uid).toBe(latest.uid);

    const unknown = await cli.run(["registry", "repos", "get", "no-such-repo"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('no repo named "no-such-repo"');
  }, 60_000);
});
