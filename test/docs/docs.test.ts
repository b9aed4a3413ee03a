/**
 * The docs, executed as a reader follows them: README.md, then the documents below in that
 * order, every shell block exactly as written, one after another in what behaves as ONE bash
 * session (variables and the working directory carry from block to block, session.ts),
 * against ONE server started the way the README starts it (`npm start --silent`, in a
 * directory that looks like the checkout, with `./data` of its own). Two things differ from a
 * reader's terminal: the server listens on a free port (`TRELLIS_ADDR=127.0.0.1:0`), so the
 * README's one `export TRELLIS_API=http://127.0.0.1:8080` gets that address instead, and
 * `npx trellis` / `npx buf` skip npm's start-up (shell-blocks.ts PREAMBLE).
 *
 * Blocks that cannot run in CI are marked `<!-- docs-test: skip (reason) -->` in the
 * markdown; commands that must fail say so with `# exits N` (shell-blocks.ts). Where the
 * text states what a block prints, the block carries `<!-- docs-test: id NAME -->` and
 * EXPECTATIONS below checks it. Besides, every block must stop the processes it starts, and
 * every document must leave the working directory (and the temporary directory) as it found
 * them.
 */
import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { leftInGroup, makeReaderCheckout, ROOT, runInGroup, sessionScript, signalGroup } from "./session.js";
import { parseShellBlocks, toScript } from "./shell-blocks.js";

/** The documents whose blocks run here, in reading order (README.md's "Read on" leads there). */
const DOCS = ["README.md", "docs/cli.md", "docs/auth.md", "docs/import.md", "docs/rest.md", "docs/migrating.md", "docs/deploy.md"];
/** Documents whose blocks another runner executes. */
const RUN_ELSEWHERE: Record<string, string> = { "docs/scale-out.md": "test/postgres/scale-out-docs.test.ts" };
/** The address the docs are written for; the README sets it once. */
const DOC_ADDRESS = "127.0.0.1:8080";

const ALL_DOCS = ["README.md", ...fs.readdirSync(path.join(ROOT, "docs")).map((f) => `docs/${f}`)].filter((f) => f.endsWith(".md"));
const parsed = new Map(ALL_DOCS.map((doc) => [doc, parseShellBlocks(fs.readFileSync(path.join(ROOT, doc), "utf8"))]));
const runBlocks = (doc: string) => (parsed.get(doc)?.blocks ?? []).filter((b) => b.skip === undefined);

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
  "readme-address": ({ stdout }) => {
    expect(JSON.parse(stdout)).toEqual({ status: "ok" });
  },
  "readme-tokens": ({ stdout }) => {
    expect((jsonLines(stdout)[0] as Json).groups).toBeInstanceOf(Array);
  },
  "readme-grpc": ({ stdout }) => {
    expect(stdout.split("\n")).toContain("chainguard.platform.iam.v2beta1.GroupsService");
    expect(JSON.parse(stdout.slice(stdout.indexOf("{")))).toMatchObject({ name: "grpc demo" });
  },
  "readme-grpc-web": ({ stdout }) => {
    expect(JSON.parse(stdout).groups.map((g: Json) => g.name)).toContain("grpc demo");
  },
  "readme-connect": ({ stdout }) => {
    expect(JSON.parse(stdout).groups.map((g: Json) => g.name)).toContain("grpc demo");
  },
  "readme-rest": ({ stdout }) => {
    const [team, list, invalid] = jsonLines(stdout) as Json[];
    expect(team).toMatchObject({ name: "team" });
    expect(list.groups.map((g: Json) => g.name)).toEqual(["team"]);
    expect(list.totalCount).toBe("1");
    // "HTTP 400 with {code: 3, message: ...}", ErrorInfo first, reason the code's name here.
    expect(invalid).toMatchObject({ code: 3, message: 'Invalid argument: name: name must match "^[a-z0-9 ._-]{1,}$"' });
    expect(invalid.details[0]).toMatchObject({
      "@type": "type.googleapis.com/google.rpc.ErrorInfo",
      reason: "INVALID_ARGUMENT",
      domain: "iam.chainguard.dev",
    });
  },
  "readme-cli": ({ stdout }) => {
    expect(stdout).toMatch(/^name: cli demo$/m);
  },
  "cli-first-binding": ({ stdout }) => {
    const bindings = JSON.parse(stdout.slice(stdout.lastIndexOf("\n[") + 1));
    expect(bindings).toHaveLength(1);
    expect(bindings[0]).toMatchObject({ role: { name: "viewer" }, identity: { name: "ci-bot" } });
  },
  "cli-fast-path": ({ stdout }) => {
    expect(stdout).toMatch(/^[0-9a-f]{40}\n$/);
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
  "cli-backup": ({ stdout }) => {
    const lines = stdout.split("\n").filter((l) => l !== "");
    expect(lines).toEqual([
      expect.stringMatching(/^backup \/\S+\/trellis\.backup: \d+ bytes, \d+ pages, \d+ tables, \d+ rows$/),
      expect.stringMatching(/^restored \S*restored\/trellis\.db: \d+ bytes, \d+ pages, \d+ tables, \d+ rows$/),
    ]);
  },
  "import-sample": ({ stdout }) => {
    const summaries = stdout.split("\n").filter((l) => l.startsWith("import: "));
    expect(summaries[0]).toMatch(/^import: 13 loaded, 0 updated, 0 unchanged, 0 rejected \(12 records from 4 files /);
    expect(summaries[1]).toMatch(/^import: 0 loaded, 0 updated, 13 unchanged, 0 rejected /);
    expect(summaries[2]).toMatch(/^import: 0 loaded, 0 updated, 0 unchanged, 1 rejected /);
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
  "rest-walk": ({ stdout }) => {
    const [team, patched, v1, notEmpty] = jsonLines(stdout) as Json[];
    expect(team).toMatchObject({ name: "team", description: "first folder" });
    expect(patched).toMatchObject({ name: "rest walk", description: "renamed" });
    expect(v1.items).toHaveLength(1);
    expect(v1.items[0]).toMatchObject({ name: "rest walk", description: "renamed" });
    expect(notEmpty).toMatchObject({ code: 9, message: "Precondition failed: cannot delete group with child groups" });
    expect(JSON.stringify(notEmpty.details)).toContain("RESOURCE_NOT_EMPTY");
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
};

/**
 * The README's command that starts the server, as written in its first block
 * (`npm ci && npm start --silent   # ...`): the part after `&&`, before the comment.
 */
function readmeStartCommand(): string[] {
  const first = parsed.get("README.md")?.blocks[0]?.text ?? "";
  const line = first.split("\n").find((l) => l.includes("npm start")) ?? "";
  return (line.split("#")[0] as string).split("&&").at(-1)?.trim().split(/\s+/) ?? [];
}

interface Server {
  readonly child: ChildProcess;
  readonly url: string;
  readonly stdout: () => string;
  readonly stderr: () => string;
  readonly exited: Promise<number | null>;
}

/** Starts the server as the README says, in `cwd`, and waits for its ready line. */
function startAsReadmeSays(cwd: string, env: NodeJS.ProcessEnv): Promise<Server> {
  const [command, ...args] = readmeStartCommand();
  const child = spawn(command as string, args, { cwd, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  child.stderr?.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  return new Promise((resolve, reject) => {
    child.stdout?.setEncoding("utf8").on("data", (d: string) => {
      stdout += d;
      const ready = /listening on (http:\/\/\S+)\n/.exec(stdout);
      if (ready) resolve({ child, url: ready[1] as string, stdout: () => stdout, stderr: () => stderr, exited });
    });
    exited.then((code) => reject(new Error(`${readmeStartCommand().join(" ")} exited with ${code} before it was ready:\n${stdout}\n${stderr}`)));
  });
}

const entries = (dir: string) => fs.readdirSync(dir).sort();

describe("the docs, in reading order, in one session on one server", () => {
  let base: string;
  let work: string;
  let env: NodeJS.ProcessEnv;
  let server: Server | undefined;

  beforeAll(async () => {
    base = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-docs-"));
    work = path.join(base, "checkout");
    for (const dir of [work, path.join(base, "home"), path.join(base, "tmp")]) fs.mkdirSync(dir);
    makeReaderCheckout(work);
    env = {
      PATH: process.env.PATH,
      HOME: path.join(base, "home"),
      XDG_CONFIG_HOME: path.join(base, "home", ".config"),
      TMPDIR: path.join(base, "tmp"),
      LANG: "C.UTF-8",
      DOCS_ROOT: ROOT,
      npm_config_update_notifier: "false",
    };
    // The runtime the suite itself runs on goes to the blocks too: on the Node 24 run
    // (scripts/test-node24.sh) these load better-sqlite3's build for that Node.
    for (const name of ["NODE_OPTIONS", "TRELLIS_TEST_SQLITE_ADDON"]) {
      if (process.env[name] !== undefined) env[name] = process.env[name];
    }
    server = await startAsReadmeSays(work, { ...env, TRELLIS_ADDR: "127.0.0.1:0" });
  }, 120_000);

  afterAll(async () => {
    if (server) signalGroup(server.child.pid as number, "SIGKILL");
    if (base) fs.rmSync(base, { recursive: true, force: true });
  });

  it("runs or skips every shell block of every document: a skip says why, an id has its check", () => {
    for (const [doc, { blocks, problems }] of parsed) {
      expect(problems, doc).toEqual([]);
      for (const id of blocks.flatMap((b) => (b.id ? [b.id] : []))) {
        if (!(doc in RUN_ELSEWHERE)) expect(Object.keys(EXPECTATIONS), `${doc}: id ${id}`).toContain(id);
      }
      if (!DOCS.includes(doc) && !(doc in RUN_ELSEWHERE)) {
        expect(
          runBlocks(doc).map((b) => `${doc}:${b.line}`),
          `${doc} is not run here: each shell block needs a skip marker`,
        ).toEqual([]);
      }
    }
  });

  it("carries the server's address in one variable, set once in the README", () => {
    const uses = DOCS.flatMap((doc) =>
      runBlocks(doc).flatMap((b) =>
        b.text
          .split("\n")
          .filter((l) => l.includes(DOC_ADDRESS))
          .map((l) => `${doc}:${b.line}: ${l.trim()}`),
      ),
    );
    expect(uses).toEqual([expect.stringMatching(/^README\.md:\d+: export TRELLIS_API=http:\/\/127\.0\.0\.1:8080\s/)]);
  });

  it("runs every shell block in reading order, as written, in one session on the server npm start runs", async () => {
    const url = new URL((server as Server).url);
    const state = path.join(base, "session.sh");
    const before = entries(work);
    for (const doc of DOCS) {
      for (const block of runBlocks(doc)) {
        const script = sessionScript(block.text.replaceAll(DOC_ADDRESS, url.host), state);
        const out = await runInGroup(script, work, env, 120_000);
        const where = `${doc}:${block.line}\n--- block ---\n${block.text}\n--- stdout ---\n${out.stdout}\n--- stderr ---\n${out.stderr}`;
        expect(out.code, where).toBe(0);
        expect(out.survivors, `processes the block started and left running\n${where}`).toEqual([]);
        if (block.id) {
          try {
            (EXPECTATIONS[block.id] as (o: Output) => void)(out);
          } catch (err) {
            (err as Error).message += `\n${where}`;
            throw err;
          }
        }
      }
      expect(entries(work), `${doc} left files in the working directory`).toEqual(before);
    }
    // What the blocks wrote under mktemp they removed. The runtimes keep caches there: tsx its
    // compiled files (tsx-UID), Node 24 its module compile cache (node-compile-cache).
    expect(entries(path.join(base, "tmp")).filter((f) => !/^(tsx-\d+|node-compile-cache)$/.test(f))).toEqual([]);
  }, 400_000);

  it("npm start --silent prints exactly one line, and stopping npm stops the server", async () => {
    const running = server as Server;
    // What a reader's `kill $!` (or Ctrl-C: SIGINT) sends: npm hands it to the server, which drains and exits.
    process.kill(running.child.pid as number, "SIGTERM");
    expect(await running.exited).toBe(0);
    expect(await leftInGroup(running.child.pid as number)).toEqual([]);
    expect(running.stdout()).toBe(`listening on ${running.url}\n`);
    expect(running.stderr()).toContain("trellis stopped");
    server = undefined;
  }, 60_000);
});

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
    const good = await runInGroup(`set -euo pipefail\n${ok}`, os.tmpdir(), process.env, 20_000);
    expect(good).toMatchObject({ code: 0, stdout: "done\n" });
    const bad = await runInGroup(`set -euo pipefail\n${toScript("true   # exits 2\necho not reached")}`, os.tmpdir(), process.env, 20_000);
    expect(bad.code).toBe(99);
    expect(bad.stderr).toContain("docs-test: expected exit 2, got 0");
    expect(bad.stdout).toBe("");
  });
});
