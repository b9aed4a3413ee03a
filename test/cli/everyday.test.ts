/**
 * The CLI as people use chainctl: capabilities by their published names, versions, the group
 * tree, network failures, completion of option values, `-o json` matching REST, and the
 * guard rails of `import`, `serve` and `auth token --local`. The real `trellis` process.
 */
import { execFile, execFileSync } from "node:child_process";
import { promisify } from "node:util";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "../support/app.js";
import { type CliRunner, cliRunner, jsonOut, runOk } from "../support/cli.js";
import { rest } from "../support/rest.js";
import { selfSignedCert } from "../support/tls.js";
import { storeArgs } from "../support/store-target.js";

const execFileAsync = promisify(execFile);

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

describe("capabilities by their published names", () => {
  it("`iam capabilities list` prints the published names with descriptions; roles create takes them", async () => {
    const [listed, table] = await Promise.all([ok(["iam", "capabilities", "list", "-o", "json"]), ok(["iam", "capabilities", "list", "-o", "table"])]);
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

describe("versions", () => {
  it("`--version` prints the client's version; `version` adds the server's, from GET /version", async () => {
    const pkg = JSON.parse(fs.readFileSync("package.json", "utf8")) as { version: string };
    const [flag, both, asJson] = await Promise.all([ok(["--version"]), ok(["version", "-o", "table"]), ok(["version", "-o", "json"])]);
    expect(flag.stdout).toBe(`${pkg.version}\n`);
    expect(both.stdout).toBe(`client: ${pkg.version}\nserver: ${pkg.version} (${t.url})\n`);
    expect(json(asJson)).toEqual({ client: pkg.version, server: pkg.version, api: t.url });
    const res = await fetch(`${t.url}/version`);
    expect(await res.json()).toEqual({ name: "trellis", version: pkg.version });
  }, 30_000);

  it("an unreachable server leaves the client's version and says why (exit 0)", async () => {
    const r = await ok(["version", "-o", "json", "--api", "http://127.0.0.1:1"]);
    expect(json(r)).toMatchObject({ server: null });
    expect(r.stderr).toContain("connection refused");
  }, 30_000);
});

describe("iam groups list --tree", () => {
  it("draws each group under its parent, siblings by name", async () => {
    const root = json(await ok(["iam", "groups", "create", "tree-root", "-o", "json"]));
    const b = json(await ok(["iam", "groups", "create", "b-team", "--parent", root.uid, "-o", "json"]));
    const a = json(await ok(["iam", "groups", "create", "a-team", "--parent", root.uid, "-o", "json"]));
    const leaf = json(await ok(["iam", "groups", "create", "leaf", "--parent", a.uid, "-o", "json"]));
    const drawn = await ok(["iam", "groups", "list", "--descendants-of", root.uid, "--tree"]);
    // --descendants-of leaves the root out: its children are the top of the drawing.
    expect(drawn.stdout).toBe(`a-team  ${a.uid}\n└── leaf  ${leaf.uid}\nb-team  ${b.uid}\n`);
    const all = await ok(["iam", "groups", "list", "--tree"]);
    expect(all.stdout).toContain(`tree-root  ${root.uid}\n├── a-team  ${a.uid}\n│   └── leaf  ${leaf.uid}\n└── b-team  ${b.uid}\n`);
    const refused = await cli.run(["iam", "groups", "list", "--tree", "-o", "json"]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("--tree");
  }, 30_000);
});

describe("network and TLS failures", () => {
  it("a refused connection and an unknown host are UNAVAILABLE (exit 1) in plain words, on both protocols", async () => {
    const quick = { TRELLIS_RETRY_DELAY_MS: "1" };
    const [refused, grpcRefused, unknownHost] = await Promise.all([
      cli.run(["iam", "groups", "list", "--api", "http://127.0.0.1:1"], quick),
      cli.run(["iam", "groups", "list", "--protocol", "grpc", "--api", "http://127.0.0.1:1"], quick),
      cli.run(["iam", "groups", "list", "--api", "http://no-such-host.invalid"], quick),
    ]);
    for (const r of [refused, grpcRefused]) {
      expect(r.code).toBe(1);
      expect(r.stderr).toBe("error: cannot reach http://127.0.0.1:1: connection refused (is the server running, on this address?)\n  code: UNAVAILABLE\n");
    }
    expect(unknownHost.code).toBe(1);
    expect(unknownHost.stderr).toContain("host not found\n  code: UNAVAILABLE");
  }, 30_000);

  it("reads are retried with backoff on UNAVAILABLE (3 more tries), writes never", async () => {
    let connections = 0;
    const server = net.createServer((socket) => {
      connections++;
      socket.destroy(); // a reset before any answer: UNAVAILABLE
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const api = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
    try {
      const read = await cli.run(["iam", "groups", "get", "0".repeat(40), "--api", api], { TRELLIS_RETRY_DELAY_MS: "1" });
      expect(read.code).toBe(1);
      expect(read.stderr).toContain("code: UNAVAILABLE");
      expect(read.stderr).not.toContain("INTERNAL");
      expect(connections).toBe(4);
      connections = 0;
      const write = await cli.run(["iam", "groups", "create", "never-twice", "--api", api], { TRELLIS_RETRY_DELAY_MS: "1" });
      expect(write.code).toBe(1);
      expect(write.stderr).toContain("code: UNAVAILABLE");
      expect(connections).toBe(1);
    } finally {
      server.close();
    }
  }, 30_000);

  it("TLS: an untrusted certificate is UNAVAILABLE naming --ca-cert; with --ca-cert the call works; https to a plain port is a plain handshake failure", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-ca-"));
    const { certFile, keyFile } = selfSignedCert(dir);
    const tls = await startTestApp({ tls: { certFile, keyFile } });
    const quick = { TRELLIS_RETRY_DELAY_MS: "1", TRELLIS_TOKEN: tls.token };
    try {
      const [untrusted, trusted, grpcTrusted, version, plainPort, badCa] = await Promise.all([
        cli.run(["iam", "groups", "list", "--api", tls.url], quick),
        cli.run(["iam", "groups", "list", "--api", tls.url, "--ca-cert", certFile, "-o", "json"], quick),
        cli.run(["iam", "groups", "list", "--api", tls.url, "--ca-cert", certFile, "--protocol", "grpc", "-o", "json"], quick),
        cli.run(["version", "-o", "json", "--api", tls.url, "--ca-cert", certFile], quick),
        cli.run(["iam", "groups", "list", "--api", t.url.replace("http:", "https:")], quick),
        cli.run(["iam", "groups", "list", "--api", tls.url, "--ca-cert", path.join(dir, "missing.pem")], quick),
      ]);
      expect(untrusted.code).toBe(1);
      expect(untrusted.stderr).toMatch(/TLS: the server's certificate is not trusted \(\w+\); pass --ca-cert FILE/);
      expect(untrusted.stderr).toContain("code: UNAVAILABLE");
      expect(trusted.code, trusted.stderr).toBe(0);
      expect(JSON.parse(trusted.stdout)).toEqual([]);
      expect(grpcTrusted.code, grpcTrusted.stderr).toBe(0);
      expect(JSON.parse(version.stdout).server).toBe(JSON.parse(fs.readFileSync("package.json", "utf8")).version);
      expect(plainPort.code).toBe(1);
      expect(plainPort.stderr).toContain("the TLS handshake failed");
      expect(plainPort.stderr).toContain("code: UNAVAILABLE");
      expect(badCa.code).toBe(2);
      expect(badCa.stderr).toContain("cannot read --ca-cert");
    } finally {
      await tls.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe("completion of option values", () => {
  /**
   * Runs the bash script's completion function on `words`, with `trellis` being this CLI.
   * Asynchronously: the server runs in this process and must answer the CLI meanwhile.
   */
  async function bashComplete(script: string, words: string[]): Promise<string[]> {
    const { stdout: out } = await execFileAsync(
      "bash",
      [
        "-c",
        `source "$0"; COMP_WORDS=(${words.map((w) => `'${w}'`).join(" ")}); COMP_CWORD=${words.length - 1}; _trellis; printf '%s\\n' "\${COMPREPLY[@]}"`,
        script,
      ],
      { encoding: "utf8", env: { ...process.env, XDG_CONFIG_HOME: cli.configHome, TRELLIS_API: t.url, TRELLIS_TOKEN: t.token } },
    );
    return out.split("\n").filter((l) => l !== "");
  }

  it("bash completes -o, --protocol, --log-level and group names from the server (names with spaces whole)", async () => {
    await ok(["iam", "groups", "create", "complete me"]);
    await ok(["iam", "groups", "create", "completion-org"]);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-complete-"));
    try {
      const script = path.join(dir, "trellis.bash");
      fs.writeFileSync(script, (await ok(["completion", "bash"])).stdout);
      // `trellis` on the command line is this CLI (the script calls COMP_WORDS[0]).
      const wrapper = path.join(dir, "trellis");
      fs.writeFileSync(wrapper, `#!/bin/sh\nexec "${process.execPath}" "${path.resolve("bin/trellis.mjs")}" "$@"\n`, { mode: 0o755 });
      expect(await bashComplete(script, [wrapper, "-o", ""])).toEqual(["table", "json", "yaml", "id"]);
      expect(await bashComplete(script, [wrapper, "iam", "groups", "list", "--output", "y"])).toEqual(["yaml"]);
      expect(await bashComplete(script, [wrapper, "--protocol", ""])).toEqual(["connect", "grpc"]);
      expect(await bashComplete(script, [wrapper, "serve", "--log-level", "d"])).toEqual(["debug"]);
      expect(await bashComplete(script, [wrapper, "iam", "identities", "list", "--group", "compl"])).toEqual(["complete me", "completion-org"]);
      expect(await bashComplete(script, [wrapper, "iam", "groups", "get", "completion"])).toEqual(["completion-org"]);
      // A server that cannot be asked offers nothing, and prints nothing into the command line.
      const silent = await execFileAsync(wrapper, ["__complete", "groups"], { encoding: "utf8", env: { ...process.env, TRELLIS_API: "http://127.0.0.1:1" } });
      expect(silent).toEqual({ stdout: "", stderr: "" });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it("zsh and fish scripts carry the same value completions", async () => {
    const [zsh, fish] = await Promise.all([ok(["completion", "zsh"]), ok(["completion", "fish"])]);
    expect(zsh.stdout).toContain("    -o|--output) compadd -- table json yaml id; return ;;");
    expect(zsh.stdout).toContain("    --protocol) compadd -- connect grpc; return ;;");
    expect(zsh.stdout).toContain("    --group) _trellis_groups; return ;;");
    // biome-ignore lint/suspicious/noTemplateCurlyInString: zsh's own parameter expansion, as generated
    expect(zsh.stdout).toContain('"$(${words[1]} __complete groups 2>/dev/null)"');
    expect(fish.stdout).toContain("complete -c trellis -n '__trellis_at \"\"' -l output -s o -x -a 'table json yaml id'");
    expect(fish.stdout).toContain("complete -c trellis -n '__trellis_at \"iam identities list\"' -l group -x -a '(__trellis_groups)'");
    expect(fish.stdout).toContain("complete -c trellis -n '__trellis_at \"iam groups get\"' -a '(__trellis_groups)'");
    expect(fish.stdout).toContain("complete -c trellis -n '__trellis_at \"iam\"' -a 'groups'");
    for (const [shell, bin] of [
      ["zsh", "zsh"],
      ["fish", "fish"],
    ] as const) {
      // Where the shell is installed, the script must at least parse.
      try {
        execFileSync("which", [bin], { stdio: "ignore", timeout: 5_000 });
      } catch {
        continue;
      }
      const text = shell === "zsh" ? zsh.stdout : fish.stdout;
      // A synchronous child blocks this worker's event loop, test timeouts included: bound it.
      execFileSync(bin, shell === "zsh" ? ["-n", "-c", text] : ["--no-execute", "-c", text], { stdio: ["ignore", "pipe", "pipe"], timeout: 15_000 });
    }
  }, 30_000);
});

describe("guard rails", () => {
  it("`import` into a directory without a database refuses and creates nothing", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-nodb-"));
    try {
      const r = await cli.run(["import", "--data", dir, path.resolve("test/fixtures/import/registry.ndjson")]);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`no Trellis database in ${dir}`);
      expect(r.stderr).toContain("trellis serve --data");
      expect(fs.readdirSync(dir)).toEqual([]);
      const missing = path.join(dir, "not-there");
      const r2 = await cli.run(["import", "--data", missing, path.resolve("test/fixtures/import/registry.ndjson")]);
      expect(r2.code).toBe(1);
      expect(fs.existsSync(missing)).toBe(false);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 30_000);

  it("`serve --log-level loud` (flag or env) is a usage error listing the levels; `serve --help` shows only server options", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-serve-"));
    try {
      const [flag, env, help] = await Promise.all([
        cli.run(["serve", "--log-level", "loud", "--data", dir, "--addr", "127.0.0.1:0"]),
        cli.run(["serve", "--data", dir, "--addr", "127.0.0.1:0"], { TRELLIS_LOG_LEVEL: "loud" }),
        cli.run(["serve", "--help"]),
      ]);
      for (const r of [flag, env]) {
        expect(r.code).toBe(2);
        expect(r.stderr).toMatch(/fatal, error, warn, info, debug, trace, silent/);
      }
      expect(fs.readdirSync(dir)).toEqual([]); // nothing started
      expect(help.code).toBe(0);
      expect(help.stdout).toContain("--log-level");
      expect(help.stdout).toContain("--tls-cert");
      for (const client of ["--api", "--token", "--protocol", "--output", "--ca-cert", "Global Options"]) expect(help.stdout).not.toContain(client);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 30_000);

  it("`auth token --local --ttl` is capped at 24 hours with a clear error; within the cap it works", async () => {
    const [over, within] = await Promise.all([
      cli.run(["auth", "token", "--local", ...storeArgs(t.dataDir), "--ttl", "86401"]),
      cli.run(["auth", "token", "--local", ...storeArgs(t.dataDir), "--ttl", "86400"]),
    ]);
    expect(over.code).toBe(2);
    expect(over.stderr).toContain("at most 86400 seconds (24 hours)");
    expect(over.stdout).toBe("");
    expect(within.code, within.stderr).toBe(0);
    const [, payload] = within.stdout.trim().split(".");
    const claims = JSON.parse(Buffer.from(payload!, "base64url").toString("utf8")) as { iat: number; exp: number };
    expect(claims.exp - claims.iat).toBe(86400);
  }, 30_000);
});

describe("-o json is what REST returns", () => {
  it("every resource the CLI prints equals the REST body for it, key for key; list items too", async () => {
    const org = json(await ok(["iam", "groups", "create", "json-org", "--description", "same bytes", "-o", "json"]));
    const identity = json(
      await ok(["iam", "identities", "create", "json-bot", "--group", org.uid, "--issuer", "https://ci.example", "--subject", "s", "-o", "json"]),
    );
    const role = json(await ok(["iam", "roles", "create", "json-role", "--group", org.uid, "--capability", "groups.list", "-o", "json"]));
    const binding = json(await ok(["iam", "role-bindings", "create", "--group", org.uid, "--identity", identity.uid, "--role", "json-role", "-o", "json"]));
    await cli.run(["import", ...storeArgs(t.dataDir), "--group", org.uid, "--quiet", path.resolve("test/fixtures/import/registry.ndjson")]);
    const repo = json(await ok(["registry", "repos", "get", "nginx", "--group", org.uid, "-o", "json"]));
    const tag = json(await ok(["registry", "tags", "get", "latest", "--repo", repo.uid, "-o", "json"]));

    const pairs: [string[], string][] = [
      [["iam", "groups", "get", org.uid], `/iam/v2beta1/groups/${org.uid}`],
      [["iam", "identities", "get", identity.uid], `/iam/v2beta1/identities/${identity.uid}`],
      [["iam", "roles", "get", role.uid], `/iam/v2beta1/roles/${role.uid}`],
      [["iam", "roles", "get", "viewer"], `/iam/v2beta1/roles/${json(await ok(["iam", "roles", "get", "viewer", "-o", "json"])).uid}`],
      [["registry", "repos", "get", repo.uid], `/registry/v2beta1/repos/${repo.uid}`],
      [["registry", "tags", "get", tag.uid], `/registry/v2beta1/tags/${tag.uid}`],
    ];
    for (const [args, restPath] of pairs) {
      const [fromCli, fromRest] = await Promise.all([ok([...args, "-o", "json"]), rest(t.url, "GET", restPath)]);
      expect(fromRest.status, restPath).toBe(200);
      // Same text of each value, not only the same meaning: key order aside, byte-equal.
      expect(json(fromCli), args.join(" ")).toStrictEqual(fromRest.body);
    }
    // A create prints what REST would return for it too (a later GET, same resource).
    expect(binding).toStrictEqual((await rest(t.url, "GET", `/iam/v2beta1/roleBindings/${binding.uid}`)).body);
    // Lists: each element as REST lists it.
    const [cliGroups, restGroups] = await Promise.all([
      ok(["iam", "groups", "list", "--descendants-of", org.uid, "-o", "json"]),
      rest(t.url, "GET", `/iam/v2beta1/groups?uidp.descendantsOf=${org.uid}`),
    ]);
    expect(json(cliGroups)).toStrictEqual(restGroups.body.items ?? restGroups.body.groups);
    const [cliRoles, restRoles] = await Promise.all([ok(["iam", "roles", "list", "-o", "json"]), rest(t.url, "GET", "/iam/v2beta1/roles")]);
    expect(json(cliRoles)).toStrictEqual(restRoles.body.roles);
  }, 60_000);
});
