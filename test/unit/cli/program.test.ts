/**
 * The program's surface that needs no server, run in process through runCli (the same
 * function bin/trellis.mjs calls) with captured output: --help everywhere, --version, usage errors as
 * exit 2, a network failure as exit 1, and completion scripts that really complete in bash.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { Io } from "../../../src/cli/io.js";
import { runCli } from "../../../src/cli/program.js";

async function run(argv: string[], env: NodeJS.ProcessEnv = {}) {
  let stdout = "";
  let stderr = "";
  const io: Io = {
    out: (t) => {
      stdout += t;
    },
    err: (t) => {
      stderr += t;
    },
    stdoutIsTty: false,
    stderrIsTty: false,
    env: { XDG_CONFIG_HOME: path.join(os.tmpdir(), "trellis-no-config"), ...env },
  };
  const code = await runCli(argv, io);
  return { code, stdout, stderr };
}

describe("trellis program", () => {
  it("has --help on every command", async () => {
    const help = await run(["--help"]);
    expect(help.code).toBe(0);
    for (const cmd of ["serve", "auth", "iam", "registry", "advisories", "import", "backup", "restore", "completion"]) expect(help.stdout).toContain(cmd);
    const groups = await run(["iam", "groups", "--help"]);
    expect(groups.stdout).toMatch(/list[\s\S]*get[\s\S]*create[\s\S]*update[\s\S]*delete/);
    const create = await run(["iam", "groups", "create", "--help"]);
    expect(create.code).toBe(0);
    expect(create.stdout).toContain("--parent <group>");
    expect(create.stdout).toContain("Global Options:");
    expect(create.stdout).toContain("--output <format>");
    const login = await run(["auth", "login", "--help"]);
    expect(login.stdout).toContain("--identity-token <file>");
  });

  it("prints package.json's version with --version and -V, and exits 0", async () => {
    const { version } = JSON.parse(fs.readFileSync(new URL("../../../package.json", import.meta.url), "utf8")) as { version: string };
    expect(version).toMatch(/^\d+\.\d+\.\d+/);
    for (const flag of ["--version", "-V"]) {
      expect(await run([flag])).toEqual({ code: 0, stdout: `${version}\n`, stderr: "" });
    }
  });

  it("ends usage errors with exit 2 and a message", async () => {
    const cases: [string[], RegExp][] = [
      [[], /Usage: trellis/],
      [["frobnicate"], /unknown command 'frobnicate'/],
      [["iam", "groups", "list", "-o", "xml"], /argument 'xml' is invalid/],
      [["iam", "groups", "list", "--bogus"], /unknown option '--bogus'/],
      [["iam", "groups", "list", "--limit", "0"], /must be a positive integer/],
      [["iam", "groups", "create"], /missing required argument 'name'/],
      [["iam", "identities", "create", "x"], /required option '--group <group>' not specified/],
      [["iam", "identities", "update", "x"], /nothing to update/],
      [["iam", "groups", "list", "--parent", "a", "--descendants-of", "b"], /cannot be combined/],
      [["--protocol", "http3", "iam", "groups", "list"], /argument 'http3' is invalid/],
      [["--api", "ftp://x", "iam", "groups", "list"], /--api must be an http/],
      [["completion", "tcsh"], /value 'tcsh' is invalid/],
      [["auth", "login", "--identity", "abc"], /--identity and --identity-token must be given together/],
      [["auth", "token", "--local", "--ttl", "0"], /must be a positive integer/],
      [["serve", "--addr", "nonsense"], /--addr must be HOST:PORT/],
    ];
    for (const [argv, message] of cases) {
      const r = await run(argv);
      expect(r.code, argv.join(" ")).toBe(2);
      expect(r.stderr, argv.join(" ")).toMatch(message);
      expect(r.stdout, argv.join(" ")).toBe("");
    }
  });

  it("ends `auth token --local` without a server's data with exit 1 and says why", async () => {
    const r = await run(["auth", "token", "--data", path.join(os.tmpdir(), "trellis-no-such-data")]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error: no Trellis database at .*trellis-no-such-data/);
    expect(r.stdout).toBe("");
  });

  it("ends a network failure with exit 1 and one error block", async () => {
    const r = await run(["--api", "http://127.0.0.1:9", "iam", "groups", "get", "acme"], { TRELLIS_RETRY_DELAY_MS: "1" });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error: cannot reach http:\/\/127\.0\.0\.1:9: connection refused.*\n {2}code: UNAVAILABLE\n$/);
  });

  it("prints bash and zsh completion generated from the command tree; the bash one completes", async () => {
    const bash = await run(["completion", "bash"]);
    const zsh = await run(["completion", "zsh"]);
    expect(bash.code).toBe(0);
    expect(zsh.stdout.startsWith("#compdef trellis\n")).toBe(true);
    expect(zsh.stdout).toContain("'role-bindings:role bindings\\: grant an identity a role in a group'");

    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-completion-"));
    const script = path.join(dir, "trellis.bash");
    fs.writeFileSync(script, bash.stdout);
    const complete = (words: string[]) =>
      execFileSync(
        "bash",
        ["-c", `source "$0"; COMP_WORDS=(${words.map((w) => `'${w}'`).join(" ")}); COMP_CWORD=${words.length - 1}; _trellis; echo "\${COMPREPLY[*]}"`, script],
        { encoding: "utf8" },
      ).trim();
    try {
      expect(complete(["trellis", ""])).toBe(
        "serve auth iam registry advisories import backup restore db keys tokens completion version --api --token --protocol --output --ca-cert --version --help",
      );
      expect(complete(["trellis", "iam", "ro"])).toBe("roles role-bindings");
      expect(complete(["trellis", "-o", "json", "iam", "groups", "list", "--p"])).toBe("--protocol --parent");
      expect(complete(["trellis", "auth", "login", "--id"])).toBe("--identity --identity-token");
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
