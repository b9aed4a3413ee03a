/**
 * The docs, executed as a reader follows them. For each document below, one fresh server
 * (a fresh data directory in a fresh working directory, a free port), then every shell
 * block in order, exactly as written, in bash with `set -euo pipefail`. Only two things are
 * substituted: `npm start` (the server is already running: it becomes `:`) and the server
 * address (`127.0.0.1:8080` becomes the test server's; `TRELLIS_API` points the CLI at it).
 * `npx trellis` and `npx buf` run this checkout's program and buf, as they do in a checkout;
 * the working directory has `./data` (the server's) and `examples/` (this checkout's).
 *
 * Blocks that cannot run in CI are marked `<!-- docs-test: skip (reason) -->` in the
 * markdown; commands that must fail say so with `# exits N` (shell-blocks.ts). Where the
 * text states what a block prints, the block carries `<!-- docs-test: id NAME -->` and
 * EXPECTATIONS below checks it.
 */
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ServerConfig } from "../../src/server/config.js";
import { DEFAULT_RATE_LIMITS } from "../../src/server/rate-limits.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { PREAMBLE, parseShellBlocks, type ShellBlock, toScript } from "./shell-blocks.js";

const ROOT = path.resolve(".");
const DOCS = ["README.md", "docs/cli.md", "docs/auth.md", "docs/import.md", "docs/rest.md", "docs/migrating.md"];
/** The server a document's blocks run against, where it is not the default one (as its text says). */
const SERVER_CONFIG: Record<string, Partial<ServerConfig>> = {
  "docs/migrating.md": { v1SunsetAt: Date.UTC(2099, 11, 31) },
  "docs/rest.md": { rateLimits: { ...DEFAULT_RATE_LIMITS, reads: { points: 2, seconds: 3600 } } },
};

/** Every JSON value printed on its own line(s): curl answers followed by `; echo`. */
function jsonLines(stdout: string): unknown[] {
  return stdout
    .split("\n")
    .filter((l) => l.trim().startsWith("{"))
    .map((l) => JSON.parse(l));
}

type Output = { stdout: string; stderr: string };
// biome-ignore lint/suspicious/noExplicitAny: outputs are inspected structurally
type Json = any;

/** What the text around a block says it prints, by the block's id. */
const EXPECTATIONS: Record<string, (out: Output) => void> = {
  "readme-tokens": ({ stdout }) => {
    expect((jsonLines(stdout)[0] as Json).groups).toBeInstanceOf(Array);
  },
  "readme-grpc": ({ stdout }) => {
    expect(stdout.split("\n")).toContain("chainguard.platform.iam.v2beta1.GroupsService");
    expect(JSON.parse(stdout.slice(stdout.indexOf("{")))).toMatchObject({ name: "grpc demo" });
  },
  "readme-connect": ({ stdout }) => {
    expect(JSON.parse(stdout).groups.map((g: Json) => g.name)).toContain("grpc demo");
  },
  "readme-rest": ({ stdout }) => {
    const [team, list, patched, invalid, notEmpty, v1] = jsonLines(stdout) as Json[];
    expect(team).toMatchObject({ name: "team", description: "first folder" });
    expect(list.groups.map((g: Json) => g.name)).toEqual(["team"]);
    expect(list.totalCount).toBe("1");
    expect(patched).toMatchObject({ name: "rest demo", description: "renamed" });
    // "HTTP 400 with {code: 3, message: ...}", then "400 and code 9".
    expect(invalid).toMatchObject({ code: 3, message: 'Invalid argument: name: name must match "^[a-z0-9 ._-]{1,}$"' });
    expect(invalid.details[0]["@type"]).toBe("type.googleapis.com/google.rpc.ErrorInfo");
    expect(notEmpty).toMatchObject({ code: 9, message: "Precondition failed: cannot delete group with child groups" });
    expect(v1.items[0]).toMatchObject({ name: "rest demo", description: "renamed" });
  },
  "readme-registry": ({ stdout }) => {
    expect(stdout).toContain("import: 13 loaded, 0 updated, 0 unchanged, 0 rejected");
    const [tags, advisories, repos, notEmpty] = jsonLines(stdout) as Json[];
    expect(tags.tags.map((t: Json) => t.name)).toEqual(["1.26", "1.27", "latest"]);
    expect(advisories.advisories.map((a: Json) => `${a.advisoryId} ${a.artifactName}`).sort()).toEqual([
      "EXAMPLE-2026-0001 openssl",
      "EXAMPLE-2026-0002 nginx-mod-openssl",
    ]);
    expect(repos.repos.map((r: Json) => r.name).sort()).toEqual(["busybox", "nginx", "python"]);
    // "code 9, Precondition failed: cannot delete group with child repos, RESOURCE_NOT_EMPTY"
    expect(notEmpty).toMatchObject({ code: 9, message: "Precondition failed: cannot delete group with child repos" });
    expect(JSON.stringify(notEmpty.details)).toContain("RESOURCE_NOT_EMPTY");
  },
  "readme-cli": ({ stdout }) => {
    expect(stdout).toMatch(/name: viewer/);
    expect(stdout).toMatch(/name: ci-bot/);
  },
  "cli-first-binding": ({ stdout }) => {
    const bindings = JSON.parse(stdout.slice(stdout.lastIndexOf("\n[") + 1));
    expect(bindings).toHaveLength(1);
    expect(bindings[0]).toMatchObject({ role: { name: "viewer" }, identity: { name: "ci-bot" } });
  },
  "cli-exit-codes": ({ stderr }) => {
    expect(stderr).toContain("code: FAILED_PRECONDITION");
    expect(stderr).toContain("code: UNAUTHENTICATED");
  },
  "auth-operator": ({ stdout }) => {
    const lines = stdout.split("\n");
    expect(lines.slice(0, 2)).toEqual(["401", "200"]);
    const [inUrl, exchange, discovery] = jsonLines(stdout) as Json[];
    expect(inUrl).toMatchObject({ code: 16, details: [{ reason: "TOKEN_IN_URL" }] });
    expect(exchange).toMatchObject({ code: 16 });
    expect(discovery.jwks_uri).toMatch(/\/\.well-known\/jwks\.json$/);
  },
  "rest-routing": ({ stdout }) => {
    const [folder, dots, put, unknown] = jsonLines(stdout) as Json[];
    expect(folder).toMatchObject({ name: "folder" });
    expect(dots).toMatchObject({ code: 3, details: [{}, { fieldViolations: [{ field: "uid" }] }] });
    expect(put).toMatchObject({ code: 12, details: [{ reason: "METHOD_NOT_ALLOWED" }] });
    expect(unknown).toMatchObject({ code: 3 });
    expect(unknown.message).toContain("colour");
  },
  "migrating-setup": ({ stdout }) => {
    const [group, list] = jsonLines(stdout) as Json[];
    expect(group).toMatchObject({ name: "migrating demo" });
    expect(list.groups).toEqual([group]);
  },
  "migrating-v1": ({ stdout }) => {
    // "every v1 answer carries Deprecation, Sunset and a Link to this section", then the guide
    // served at that path has the section.
    const lines = stdout
      .trim()
      .split("\n")
      .map((l) => l.trim());
    expect([...lines.slice(0, 3)].sort()).toEqual([
      "deprecation: @1795824000",
      expect.stringMatching(/^link: <http:\/\/127\.0\.0\.1:\d+\/docs\/migrating\.md#v1--v2>; rel="deprecation sunset"; type="text\/markdown"$/),
      "sunset: Thu, 31 Dec 2099 00:00:00 GMT",
    ]);
    expect(lines[3]).toBe("1");
  },
  "rest-rate-limit": ({ stdout }) => {
    // "200, 200", then 429 with Retry-After, the RateLimit fields and RESOURCE_EXHAUSTED's
    // body, then v2beta1's 200.
    const lines = stdout.split("\n").filter((l) => l !== "");
    expect(lines.slice(0, 3)).toEqual(["200", "200", "HTTP/1.1 429 Too Many Requests"]);
    expect(lines.slice(3, 6).sort()).toEqual([
      expect.stringMatching(/^ratelimit-policy: "reads";q=2;w=3600$/),
      expect.stringMatching(/^ratelimit: "reads";r=0;t=\d+$/),
      expect.stringMatching(/^retry-after: \d+$/),
    ]);
    expect(JSON.parse(lines[6] as string)).toMatchObject({
      code: 8,
      details: [
        { reason: "RATE_LIMIT_EXCEEDED" },
        { "@type": "type.googleapis.com/google.rpc.QuotaFailure" },
        { "@type": "type.googleapis.com/google.rpc.RetryInfo" },
      ],
    });
    expect(lines[7]).toBe("200");
  },
  "cli-backup": ({ stdout }) => {
    const lines = stdout.split("\n").filter((l) => l !== "");
    expect(lines).toEqual([
      expect.stringMatching(/^backup \/\S+\/trellis\.backup: \d+ bytes, \d+ pages, \d+ tables, \d+ rows$/),
      expect.stringMatching(/^restored \S*restored\/trellis\.db: \d+ bytes, \d+ pages, \d+ tables, \d+ rows$/),
    ]);
  },
  "import-sample": ({ stdout }) => {
    const summaries = stdout.split("\n").filter((l) => l.startsWith("import: "));
    expect(summaries[0]).toMatch(/^import: 13 loaded, 0 updated, 0 unchanged, 0 rejected /);
    expect(summaries[1]).toMatch(/^import: 0 loaded, 0 updated, 13 unchanged, 0 rejected /);
    expect(summaries[2]).toMatch(/^import: 0 loaded, 0 updated, 0 unchanged, 1 rejected /);
    expect(stdout.trim().split("\n").slice(-2)).toEqual([
      expect.stringMatching(/^[0-9a-f]{40}\/[0-9a-f]{16}$/),
      expect.stringMatching(/^[0-9a-f]{40}\/[0-9a-f]{16}$/),
    ]);
  },
};

async function runScript(script: string, cwd: string, env: NodeJS.ProcessEnv): Promise<Output & { code: number }> {
  return new Promise((resolve) => {
    execFile("bash", ["-c", script], { cwd, env, maxBuffer: 16 << 20, timeout: 120_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === "number" ? err.code : 1) : 0;
      resolve({ stdout, stderr, code });
    });
  });
}

for (const doc of DOCS) {
  const parsed = parseShellBlocks(fs.readFileSync(path.join(ROOT, doc), "utf8"));

  describe(doc, () => {
    let t: TestApp;
    let work: string;
    beforeAll(async () => {
      work = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-docs-"));
      fs.symlinkSync(path.join(ROOT, "examples"), path.join(work, "examples"));
      t = await startTestApp({ dataDir: path.join(work, "data"), ...SERVER_CONFIG[doc] });
    });
    afterAll(async () => {
      await t?.close();
      if (work) fs.rmSync(work, { recursive: true, force: true });
    });

    it("marks every block it does not run with a reason, and nothing else", () => {
      expect(parsed.problems).toEqual([]);
      for (const id of parsed.blocks.flatMap((b) => (b.id ? [b.id] : []))) expect(Object.keys(EXPECTATIONS), `id ${id}`).toContain(id);
    });

    it("runs every shell block in order, as written, against one fresh server", async () => {
      const url = new URL(t.url);
      const env: NodeJS.ProcessEnv = {
        PATH: process.env.PATH,
        HOME: work,
        XDG_CONFIG_HOME: path.join(work, ".config"),
        TMPDIR: os.tmpdir(),
        LANG: "C.UTF-8",
        DOCS_ROOT: ROOT,
        TRELLIS_API: t.url,
      };
      // The runtime the suite itself runs on goes to the blocks too: on the Node 24 run
      // (scripts/test-node24.sh) these load better-sqlite3's build for that Node.
      for (const name of ["NODE_OPTIONS", "TRELLIS_TEST_SQLITE_ADDON"]) {
        if (process.env[name] !== undefined) env[name] = process.env[name];
      }
      const substitute = (text: string) => text.replaceAll("127.0.0.1:8080", url.host).replace(/\bnpm start\b/g, ":");
      for (const block of parsed.blocks.filter((b: ShellBlock) => b.skip === undefined)) {
        const out = await runScript(PREAMBLE + toScript(substitute(block.text)), work, env);
        const where = `${doc}:${block.line}\n--- block ---\n${block.text}\n--- stdout ---\n${out.stdout}\n--- stderr ---\n${out.stderr}`;
        expect(out.code, where).toBe(0);
        if (block.id) {
          try {
            (EXPECTATIONS[block.id] as (o: Output) => void)(out);
          } catch (err) {
            (err as Error).message += `\n${where}`;
            throw err;
          }
        }
      }
    }, 180_000);
  });
}

describe("the docs-test markers", () => {
  it("fail a skip without a reason, an unknown directive and a marker without a block", () => {
    const parsed = parseShellBlocks(
      [
        "<!-- docs-test: skip -->",
        "```sh",
        "true",
        "```",
        "<!-- docs-test: run-twice -->",
        "```sh",
        "true",
        "```",
        "<!-- docs-test: skip (x) -->",
        "text",
        "```sh",
        "```",
        "<!-- docs-test: skip (x) --> and more",
        "Prose may name `<!-- docs-test: skip (reason) -->` inline.",
      ].join("\n"),
    );
    expect(parsed.problems).toEqual([
      'line 1: "skip" needs a reason: <!-- docs-test: skip (why) -->',
      'line 5: unknown docs-test directive "run-twice" (use "skip (reason)" or "id NAME")',
      "line 9: docs-test marker is not followed by a shell block",
      'line 13: a docs-test marker must be a whole line "<!-- docs-test: ... -->"',
    ]);
  });

  it("`# exits N` checks the status of that command only", async () => {
    const ok = toScript(["false   # exits 1", "sh -c 'exit 3' \\", "  # exits 3", "echo done"].join("\n"));
    const good = await runScript(`set -euo pipefail\n${ok}`, os.tmpdir(), process.env);
    expect(good).toMatchObject({ code: 0, stdout: "done\n" });
    const bad = await runScript(`set -euo pipefail\n${toScript("true   # exits 2\necho not reached")}`, os.tmpdir(), process.env);
    expect(bad.code).toBe(99);
    expect(bad.stderr).toContain("docs-test: expected exit 2, got 0");
    expect(bad.stdout).toBe("");
  });
});
