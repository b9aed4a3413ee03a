/**
 * The everyday commands, run as the real `trellis` process against a real server: each
 * command's happy path in the output formats scripts rely on, one error path each with its
 * exit code and readable error block, paging past one page with --limit, both protocols,
 * and `trellis import` feeding the registry and advisory commands.
 * Help, usage errors and completion need no server and run in process
 * (test/unit/cli/program.test.ts).
 *
 * Subprocesses cost about half a second each, so independent invocations run side by side.
 */
import path from "node:path";
import { createClient } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GroupsService } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { type CliResult, type CliRunner, cliRunner, jsonOut } from "../support/cli.js";
import { rpcTransports } from "../support/transports.js";
import { storeArgs } from "../support/store-target.js";

const UID = /^[0-9a-f]{40}(\/[0-9a-f]{16})*$/;
const NDJSON = path.resolve("test/fixtures/import/registry.ndjson");
const OSV_DIR = path.resolve("test/fixtures/osv");

let t: TestApp;
let cli: CliRunner;

beforeAll(async () => {
  t = await startTestApp();
  // The operator token: these tests are about the commands, not about who may call them.
  cli = cliRunner(t.url, { TRELLIS_TOKEN: t.token });
});
afterAll(async () => {
  cli.cleanup();
  await t.close();
});

/** Runs and expects exit 0 with nothing alarming on stderr. */
async function ok(args: string[]): Promise<CliResult> {
  const r = await cli.run(args);
  expect(r.stderr.includes("error:") ? r.stderr : "", `trellis ${args.join(" ")}`).toBe("");
  expect(r.code, `trellis ${args.join(" ")}: ${r.stderr}`).toBe(0);
  return r;
}
const json = jsonOut;

describe("trellis iam (subprocess against a real server)", () => {
  let org: { uid: string; name: string };

  it("groups: create, get by name, update, list in every format, delete; a bad name is exit 1 with the field violation", async () => {
    org = json(await ok(["iam", "groups", "create", "acme", "--description", "the org", "-o", "json"]));
    expect(org).toMatchObject({ name: "acme", description: "the org" });
    expect(org.uid).toMatch(UID);

    // --parent takes a name; output without -o in a pipe is JSON.
    const eng = json(await ok(["iam", "groups", "create", "eng", "--parent", "acme"]));
    expect(eng.uid.startsWith(`${org.uid}/`)).toBe(true);

    const [got, updated, table, ids, yaml] = await Promise.all([
      ok(["iam", "groups", "get", "acme", "-o", "json"]),
      ok(["iam", "groups", "update", eng.uid, "--description", "engineering", "-o", "json"]),
      ok(["iam", "groups", "list", "-o", "table"]),
      ok(["iam", "groups", "list", "--parent", org.uid, "-o", "id"]),
      ok(["iam", "groups", "get", eng.uid, "-o", "yaml"]),
    ]);
    expect(json(got)).toMatchObject({ uid: org.uid, name: "acme", description: "the org" });
    expect(json(updated)).toMatchObject({ uid: eng.uid, name: "eng", description: "engineering" });
    expect(table.stdout.split("\n")[0]).toMatch(/^UID\s+NAME\s+DESCRIPTION\s+CREATED$/);
    expect(table.stdout).toMatch(new RegExp(`^${org.uid}\\s+acme\\s+the org\\s+\\d{4}-`, "m"));
    expect(ids.stdout).toBe(`${eng.uid}\n`);
    expect(yaml.stdout).toContain(`uid: ${eng.uid}\nname: eng\n`);

    const bad = await cli.run(["iam", "groups", "create", "Not Valid!"]);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toBe("");
    expect(bad.stderr).toContain("code: INVALID_ARGUMENT");
    expect(bad.stderr).toContain("reason: INVALID_ARGUMENT (iam.chainguard.dev)");
    expect(bad.stderr).toMatch(/field name: .*\^\[a-z0-9 \._-\]/);

    const nothing = await cli.run(["iam", "groups", "update", eng.uid]);
    expect(nothing.code).toBe(2);
    expect(nothing.stderr).toContain("nothing to update");

    const tmp = json(await ok(["iam", "groups", "create", "tmp", "--parent", org.uid]));
    const del = await ok(["iam", "groups", "delete", tmp.uid]);
    expect(del.stderr).toBe(`deleted group ${tmp.uid}\n`);
    const gone = await cli.run(["iam", "groups", "get", tmp.uid]);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toContain("code: NOT_FOUND");
  }, 60_000);

  it("group names: an unknown name and an ambiguous one are usage errors (exit 2) naming the candidates", async () => {
    const a = json(await ok(["iam", "groups", "create", "twin", "--parent", org.uid]));
    const eng = json(await ok(["iam", "groups", "list", "--name", "eng"]))[0];
    const b = json(await ok(["iam", "groups", "create", "twin", "--parent", eng.uid]));
    const [ambiguous, unknown] = await Promise.all([
      cli.run(["iam", "groups", "get", "twin"]),
      cli.run(["iam", "identities", "list", "--group", "no such group"]),
    ]);
    expect(ambiguous.code).toBe(2);
    expect(ambiguous.stderr).toContain('several groups are named "twin"');
    expect(ambiguous.stderr).toContain(a.uid);
    expect(ambiguous.stderr).toContain(b.uid);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('no group named "no such group"');
  }, 60_000);

  it("identities: create with a claim match, get, update, list, delete; an unknown uid is exit 1 NOT_FOUND", async () => {
    const id = json(
      await ok([
        "iam",
        "identities",
        "create",
        "ci-bot",
        "--group",
        "acme",
        "--description",
        "CI",
        "--issuer",
        "https://token.actions.example",
        "--subject",
        "repo:acme/app:ref:refs/heads/main",
        "-o",
        "json",
      ]),
    );
    expect(id).toMatchObject({
      name: "ci-bot",
      description: "CI",
      claimMatch: { issuer: "https://token.actions.example", subject: "repo:acme/app:ref:refs/heads/main" },
    });
    const [got, updated, list] = await Promise.all([
      ok(["iam", "identities", "get", id.uid, "-o", "json"]),
      ok(["iam", "identities", "update", id.uid, "--name", "ci-robot", "-o", "json"]),
      ok(["iam", "identities", "list", "--group", org.uid, "-o", "table"]),
    ]);
    expect(json(got).uid).toBe(id.uid);
    expect(json(updated)).toMatchObject({ uid: id.uid, name: "ci-robot", description: "CI" });
    expect(list.stdout).toMatch(/^UID\s+NAME\s+ISSUER\s+SUBJECT\s+CREATED$/m);
    expect(list.stdout).toContain("https://token.actions.example");

    const [del, missing, both] = await Promise.all([
      ok(["iam", "identities", "delete", id.uid]),
      cli.run(["iam", "identities", "get", `${org.uid}/0123456789abcdef`]),
      cli.run(["iam", "identities", "create", "x", "--group", org.uid, "--issuer", "a", "--issuer-pattern", "b"]),
    ]);
    expect(del.stderr).toBe(`deleted identity ${id.uid}\n`);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("code: NOT_FOUND");
    expect(both.code).toBe(2);
  }, 60_000);

  it("roles, role bindings and invites: the new-user path from a group to a binding, and their error paths", async () => {
    const [viewer, roles] = await Promise.all([ok(["iam", "roles", "get", "viewer", "-o", "json"]), ok(["iam", "roles", "list", "-o", "id"])]);
    expect(json(viewer)).toMatchObject({ name: "viewer" });
    expect(roles.stdout.split("\n")).toContain(json(viewer).uid);

    const role = json(
      await ok(["iam", "roles", "create", "puller", "--group", "acme", "--capability", "CAP_REPO_LIST", "--capability", "tag_list", "-o", "json"]),
    );
    expect(role).toMatchObject({ name: "puller", capabilities: ["CAP_REPO_LIST", "CAP_TAG_LIST"] });
    const badCap = await cli.run(["iam", "roles", "create", "x", "--group", "acme", "--capability", "CAP_NOPE"]);
    expect(badCap.code).toBe(2);
    expect(badCap.stderr).toContain('unknown capability "CAP_NOPE"');

    const who = json(await ok(["iam", "identities", "create", "alice", "--group", "acme", "--issuer", "https://idp.example", "--subject", "alice"]));
    const binding = json(await ok(["iam", "role-bindings", "create", "--group", "acme", "--identity", who.uid, "--role", "viewer", "-o", "json"]));
    expect(binding).toMatchObject({ identity: { uid: who.uid, name: "alice" }, group: { uid: org.uid, name: "acme" }, role: { name: "viewer" } });

    const [bindings, badBinding, invite] = await Promise.all([
      ok(["iam", "role-bindings", "list", "--group", "acme", "-o", "table"]),
      cli.run(["iam", "role-bindings", "create", "--group", "acme", "--identity", `${org.uid}/0123456789abcdef`, "--role", "viewer"]),
      ok(["iam", "invites", "create", "--group", "acme", "--role", "puller", "--ttl", "2h", "--single-use", "-o", "json"]),
    ]);
    expect(bindings.stdout).toMatch(new RegExp(`^${binding.uid.replace(/\//g, "\\/")}\\s+acme\\s+alice\\s+viewer\\s+`, "m"));
    expect(badBinding.code).toBe(1);
    expect(badBinding.stderr).toMatch(/code: (NOT_FOUND|INVALID_ARGUMENT|FAILED_PRECONDITION)/);
    const inv = json(invite);
    expect(inv).toMatchObject({ roleUid: role.uid, singleUse: true });
    expect(inv.code).toBeTruthy();
    const expires = Date.parse(inv.expirationTime) - Date.now();
    expect(expires).toBeGreaterThan(1.9 * 3600_000);
    expect(expires).toBeLessThanOrEqual(2 * 3600_000);

    const [invites, badTtl] = await Promise.all([
      ok(["iam", "invites", "list", "--group", "acme", "-o", "id"]),
      cli.run(["iam", "invites", "create", "--group", "acme", "--role", "viewer", "--ttl", "soon"]),
    ]);
    expect(invites.stdout).toBe(`${inv.uid}\n`);
    expect(badTtl.code).toBe(2);
    expect(badTtl.stderr).toContain("--ttl");

    // The role is still used by the invite: deleting it fails with the precondition block.
    const inUse = await cli.run(["iam", "roles", "delete", role.uid]);
    expect(inUse.code).toBe(1);
    expect(inUse.stderr).toContain(`precondition RESOURCE_IN_USE ${role.uid}: cannot delete role with group invites`);

    const [d1, d2, rolesAfter] = await Promise.all([
      ok(["iam", "invites", "delete", inv.uid, "-o", "id"]),
      ok(["iam", "role-bindings", "delete", binding.uid]),
      cli.run(["iam", "role-bindings", "delete", "not-a-uid"]),
    ]);
    const d3 = await ok(["iam", "roles", "delete", role.uid]);
    expect(d1.stdout).toBe(`${inv.uid}\n`);
    expect(d2.stderr).toBe(`deleted role binding ${binding.uid}\n`);
    expect(d3.stderr).toBe(`deleted role ${role.uid}\n`);
    expect(rolesAfter.code).toBe(1);
    expect(rolesAfter.stderr).toContain("code: INVALID_ARGUMENT");
  }, 90_000);

  it("lists page through the server's pages with --limit, over Connect and gRPC", async () => {
    const client = createClient(GroupsService, rpcTransports[1]!.create(t.url)); // sends the operator token
    const big = await client.createGroup({ parent: org.uid, group: { name: "big" } });
    for (let i = 0; i < 205; i++) await client.createGroup({ parent: big.uid, group: { name: `grp${i}` } });
    const [all, limited, grpc] = await Promise.all([
      ok(["iam", "groups", "list", "--parent", big.uid, "-o", "id"]),
      ok(["iam", "groups", "list", "--parent", big.uid, "--limit", "203", "-o", "id"]),
      ok(["--protocol", "grpc", "iam", "groups", "list", "--parent", big.uid, "--limit", "3", "-o", "json"]),
    ]);
    const allIds = all.stdout.trim().split("\n");
    expect(allIds).toHaveLength(205);
    expect(new Set(allIds).size).toBe(205);
    expect(limited.stdout.trim().split("\n")).toHaveLength(203);
    expect(json(grpc)).toHaveLength(3);
    // Not a terminal: no progress line on stderr.
    expect(all.stderr).toBe("");
  }, 90_000);
});

describe("trellis import, registry and advisories", () => {
  it("imports through the CLI (its own exit 3 for rejected records), then lists and gets repos, tags and advisories", async () => {
    const org = json(await ok(["iam", "groups", "create", "feeds", "-o", "json"]));
    const imported = await cli.run(["import", ...storeArgs(t.dataDir), "--group", org.uid, "--quiet", NDJSON, OSV_DIR]);
    expect(imported.code, imported.stderr).toBe(3); // the fixtures hold broken records on purpose
    expect(imported.stdout).toMatch(/^import: \d+ loaded, 0 updated, 0 unchanged, \d+ rejected/);

    const repos = json(await ok(["registry", "repos", "list", "--group", "feeds", "-o", "json"]));
    expect(repos.map((r: { name: string }) => r.name).sort()).toEqual(["nginx", "python"]);
    const nginx = repos.find((r: { name: string }) => r.name === "nginx");
    const [repo, tags, table, advisories] = await Promise.all([
      ok(["registry", "repos", "get", nginx.uid, "-o", "json"]),
      ok(["registry", "tags", "list", "--repo", nginx.uid, "-o", "json"]),
      ok(["registry", "repos", "list", "--group", org.uid, "-o", "table"]),
      ok(["advisories", "list", "--alias", "CVE-2026-1111", "-o", "json"]),
    ]);
    expect(json(repo)).toMatchObject({ uid: nginx.uid, name: "nginx", description: "web server" });
    expect(
      json(tags)
        .map((t: { name: string }) => t.name)
        .sort(),
    ).toEqual(["1.27", "latest"]);
    expect(table.stdout).toMatch(/^UID\s+NAME\s+ACTIVE TAGS\s+CREATED$/m);
    const [advisory] = json(advisories);
    expect(advisory).toMatchObject({ advisoryId: "CGA-2222-aaaa-bbbb", aliases: expect.arrayContaining(["CVE-2026-1111"]) });

    const [got, missingRepo, badAdvisory] = await Promise.all([
      ok(["advisories", "get", advisory.uid, "-o", "yaml"]),
      cli.run(["registry", "repos", "get", `${org.uid}/0123456789abcdef`]),
      cli.run(["advisories", "get", "not-a-uid"]),
    ]);
    expect(got.stdout).toContain("advisoryId: CGA-2222-aaaa-bbbb");
    expect(missingRepo.code).toBe(1);
    expect(missingRepo.stderr).toContain("code: NOT_FOUND");
    expect(badAdvisory.code).toBe(1);
    expect(badAdvisory.stderr).toContain("code: INVALID_ARGUMENT");
  }, 60_000);
});

describe("trellis error paths not covered above", () => {
  it("each ends with the right exit code and says why", async () => {
    const cases: [string[], number, string][] = [
      [["iam", "groups", "delete", "acme"], 1, "code: FAILED_PRECONDITION"],
      [["iam", "groups", "list", "--name", "Bad Name!", "--parent", "no such group"], 2, 'no group named "no such group"'],
      [["iam", "identities", "delete", "not-a-uid"], 2, 'no identity named "not-a-uid"'],
      [["iam", "roles", "get", "no-such-role"], 2, 'no role named "no-such-role"'],
      [["iam", "roles", "list", "--group", "no such group"], 2, 'no group named "no such group"'],
      [["iam", "role-bindings", "list", "--identity", "not-a-uid"], 2, 'no identity named "not-a-uid"'],
      [["iam", "invites", "list", "--group", "no such group"], 2, 'no group named "no such group"'],
      [["iam", "invites", "delete", "not-a-uid"], 1, "code: INVALID_ARGUMENT"],
      [["registry", "repos", "list", "--group", "no such group"], 2, 'no group named "no such group"'],
      [["registry", "tags", "list", "--repo", "not-a-uid"], 2, 'no repo named "not-a-uid"'],
      [["advisories", "list", "--limit", "0"], 2, "must be a positive integer"],
    ];
    const results = await Promise.all(cases.map(([args]) => cli.run(args)));
    results.forEach((r, i) => {
      const [args, code, text] = cases[i]!;
      expect(r.code, `trellis ${args.join(" ")}: ${r.stderr}`).toBe(code);
      expect(r.stderr, args.join(" ")).toContain(text);
      expect(r.stdout, args.join(" ")).toBe("");
    });
  }, 60_000);
});
