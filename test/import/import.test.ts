/**
 * `trellis import` against a running server on the same data directory: a sample OSV feed
 * with a broken file in it, native NDJSON records, re-import idempotence, the progress bar,
 * and the clear refusal when another writer holds the database lock.
 */
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { PassThrough } from "node:stream";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listInputFiles } from "../../src/import/read-records.js";
import { importFiles, runImport } from "../../src/import/run-import.js";
import { openDatabase } from "../../src/store/sqlite/db.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { snapshotDb } from "../support/db.js";
import { rest } from "../support/rest.js";

const FIXTURES = path.join(import.meta.dirname, "../fixtures");
const OSV_DIR = path.join(FIXTURES, "osv");
const NDJSON = path.join(FIXTURES, "import/registry.ndjson");

let t: TestApp;
let org: string;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

async function run(args: string[], tty = false): Promise<Run> {
  const out: string[] = [];
  const err: string[] = [];
  const stdout = new PassThrough().on("data", (c) => out.push(String(c)));
  const stderr = Object.assign(
    new PassThrough().on("data", (c) => err.push(String(c))),
    { isTTY: tty, columns: 100, cursorTo: () => true, clearLine: () => true, moveCursor: () => true },
  );
  const code = await runImport(["--data", t.dataDir, ...args], { stdout, stderr, env: {} });
  return { code, stdout: out.join(""), stderr: err.join("") };
}

const count = (table: string) => {
  const db = new Database(t.dbFile, { readonly: true });
  try {
    return (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
  } finally {
    db.close();
  }
};

beforeAll(async () => {
  t = await startTestApp();
  org = (await rest(t.url, "POST", "/iam/v2beta1/groups", { name: "feed org" })).body.uid;
});
afterAll(async () => t.close());

describe("trellis import", () => {
  it("imports an OSV directory while the server runs, rejecting the broken files with reasons", async () => {
    const r = await run(["--group", org, OSV_DIR]);
    expect(r.stdout).toMatch(/^import: 4 loaded, 0 updated, 0 unchanged, 2 rejected \(5 records from 5 files in [\d.]+s\)\n$/);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain(`rejected ${path.join(OSV_DIR, "broken.json")}: not valid JSON`);
    expect(r.stderr).toContain(`rejected ${path.join(OSV_DIR, "nested/missing-package.json")}: modified must be an RFC 3339 time`);

    // The running server sees the advisories at once.
    const list = await rest(t.url, "GET", `/vulnerabilities/v2beta1/advisories?uidp.descendants_of=${org}&order_by=advisory_id`);
    // Sorted: the two CGA-3333 advisories tie on advisory_id and then order by random uid.
    expect(list.body.advisories.map((a: { advisoryId: string; artifactName: string }) => `${a.advisoryId} ${a.artifactName}`).sort()).toEqual([
      "CGA-2222-aaaa-bbbb openssl",
      "CGA-3333-cccc-dddd curl",
      "CGA-3333-cccc-dddd libcurl-openssl4",
      "GHSA-wxyz-1234-5678 requests",
    ]);
    const byName = (n: string) => list.body.advisories.find((a: { artifactName: string }) => a.artifactName === n);
    const openssl = byName("openssl");
    expect(openssl).toMatchObject({
      artifactType: "apk",
      artifactArchitecture: "x86_64",
      componentType: "Wolfi",
      aliases: ["CVE-2026-1111", "GHSA-abcd-efgh-ijkl"],
      severities: [{ type: "TYPE_CVSS_V3", score: "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:N/A:N" }],
      createTime: "2026-09-30T12:00:00.000Z",
      updateTime: "2026-10-02T08:00:00.000Z",
    });
    expect(openssl.events.map((e: Record<string, unknown>) => Object.keys(e).find((k) => ["detection", "fixed"].includes(k)))).toEqual(["detection", "fixed"]);
    expect(openssl.events[1].fixed.fixedVersion).toBe("3.5.1-r0");
    expect(byName("requests").deleteTime).toBe("2026-08-01T00:00:00.000Z");
  });

  it("re-imports idempotently: nothing duplicated, unchanged records untouched, changes update in place", async () => {
    const before = await snapshotDb(t);
    const again = await run(["--group", org, OSV_DIR]);
    expect(again.stdout).toMatch(/^import: 0 loaded, 0 updated, 4 unchanged, 2 rejected /);
    expect(await snapshotDb(t)).toBe(before);
    expect(count("advisories")).toBe(4);

    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-osv-"));
    try {
      const doc = JSON.parse(fs.readFileSync(path.join(OSV_DIR, "CGA-2222-aaaa-bbbb.json"), "utf8"));
      doc.modified = "2026-11-01T00:00:00Z";
      doc.aliases.push("CVE-2026-9999");
      fs.writeFileSync(path.join(dir, "changed.json"), JSON.stringify(doc));
      const uidBefore = (await rest(t.url, "GET", "/vulnerabilities/v2beta1/advisories?advisory_ids=CGA-2222-aaaa-bbbb")).body.advisories[0];
      const changed = await run(["--group", org, dir]);
      expect(changed.code).toBe(0);
      expect(changed.stdout).toMatch(/^import: 0 loaded, 1 updated, 0 unchanged, 0 rejected /);
      const after = (await rest(t.url, "GET", "/vulnerabilities/v2beta1/advisories?aliases=CVE-2026-9999")).body.advisories;
      expect(after).toHaveLength(1);
      expect(after[0].uid).toBe(uidBefore.uid);
      expect(after[0].events.map((e: { uid: string }) => e.uid)).toEqual(uidBefore.events.map((e: { uid: string }) => e.uid));
      expect(count("advisories")).toBe(4);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("loads native NDJSON repos, tags and advisories, explaining each rejected line", async () => {
    const r = await run(["--group", org, NDJSON]);
    expect(r.stdout).toMatch(/^import: 6 loaded, 0 updated, 0 unchanged, 5 rejected \(11 records from 1 files/);
    expect(r.stderr).toContain(`${NDJSON}:7: Invalid argument: tag.digest: must be an OCI digest`);
    expect(r.stderr).toContain(`${NDJSON}:8: Not found: repo`);
    expect(r.stderr).toMatch(/registry\.ndjson:9: .*colour/);
    expect(r.stderr).toContain(`${NDJSON}:10: not valid JSON`);
    expect(r.stderr).toContain(`${NDJSON}:12: Invalid argument: advisory.events[0].review_state: is required`);
    const repos = await rest(t.url, "GET", `/registry/v2beta1/repos?uidp.children_of=${org}&order_by=name`);
    expect(repos.body.repos.map((x: { name: string }) => x.name)).toEqual(["nginx", "python"]);
    const tags = await rest(t.url, "GET", `/registry/v2beta1/tags?uidp.descendants_of=${org}&order_by=name`);
    expect(tags.body.tags.map((x: { name: string }) => x.name)).toEqual(["1.27", "3.13", "latest"]);

    const again = await run(["--group", org, NDJSON]);
    expect(again.stdout).toMatch(/^import: 0 loaded, 0 updated, 6 unchanged, 5 rejected /);
    expect(count("repos")).toBe(2);
    expect(count("tags")).toBe(3);
  });

  it("rejects every record with a NUL (U+0000) in any string, naming where, and stores nothing of it", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-nul-"));
    try {
      const osv = JSON.parse(fs.readFileSync(path.join(OSV_DIR, "CGA-2222-aaaa-bbbb.json"), "utf8"));
      osv.id = "CGA-9999-nul0-nul0";
      osv.affected[0].package.name = "open\u0000ssl";
      fs.writeFileSync(path.join(dir, "osv-nul.json"), JSON.stringify(osv));
      const lines = [
        { repo: { name: "nul-desc", description: "web\u0000server" } },
        { repo: { name: "nul-bundle", bundles: ["application", "b\u0000"] } },
        { repo_name: "nginx", tag: { name: "nul\u0000tag", digest: `sha256:${"3".repeat(64)}` } },
        { advisory: { advisoryId: "CGA-9999-nul1-nul1", artifactName: "busybox", events: [{ author: "x", detection: { manual: { note: "a\u0000b" } } }] } },
        { "repo\u0000": { name: "nul-key" } },
        { repo: { name: "clean-after-nul" } },
      ];
      // JSON.stringify writes U+0000 as the escape \u0000, as a real feed would carry it.
      fs.writeFileSync(path.join(dir, "native.ndjson"), `${lines.map((l) => JSON.stringify(l)).join("\n")}\n`);
      const repos = count("repos");
      const tags = count("tags");
      const advisories = count("advisories");
      const r = await run(["--group", org, dir]);
      expect(r.code).toBe(3);
      expect(r.stdout).toMatch(/^import: 1 loaded, 0 updated, 0 unchanged, 6 rejected /);
      const nul = "must not contain the NUL character (U+0000)";
      const native = path.join(dir, "native.ndjson");
      expect(r.stderr).toContain(`rejected ${native}:1: Invalid argument: repo.description: ${nul}`);
      expect(r.stderr).toContain(`rejected ${native}:2: Invalid argument: repo.bundles[1]: ${nul}`);
      expect(r.stderr).toContain(`rejected ${native}:3: Invalid argument: tag.name: ${nul}`);
      expect(r.stderr).toContain(`rejected ${native}:4: Invalid argument: advisory.events[0].detection.manual.note: ${nul}`);
      expect(r.stderr).toContain(`rejected ${native}:5: Invalid argument: "repo\\u0000": is a key that ${nul}`);
      expect(r.stderr).toContain(`rejected ${path.join(dir, "osv-nul.json")}: Invalid argument: affected[0].package.name: ${nul}`);
      // Only the clean record was stored.
      expect(count("repos")).toBe(repos + 1);
      expect(count("tags")).toBe(tags);
      expect(count("advisories")).toBe(advisories);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("draws a progress bar on a terminal and refuses OSV input without a group", async () => {
    const r = await run([OSV_DIR], true);
    expect(r.stderr).toContain("importing [");
    expect(r.stderr).toContain("OSV documents need --group UID");
    expect(r.code).toBe(3);
    expect((await run([])).code).toBe(2);
    expect((await run(["/no/such/path"])).stderr).toContain("no such file or directory");
    const noGroup = await run(["--group", "e".repeat(40), OSV_DIR]);
    expect(noGroup.code).toBe(1);
    expect(noGroup.stderr).toContain(`--group ${"e".repeat(40)}: no such group`);
  });

  it("refuses clearly, changing nothing, when another writer holds the database lock", async () => {
    const before = await snapshotDb(t);
    const holder = new Database(t.dbFile);
    try {
      holder.exec("BEGIN IMMEDIATE");
      const r = await run(["--group", org, OSV_DIR]);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(
        /^trellis import: cannot take the write lock on the database in .*: another process is writing to it \(still busy after 3000 ms\)\. Nothing was imported\. Try again when it is idle\.\n$/,
      );
      expect(r.stdout).toBe("");
    } finally {
      holder.exec("ROLLBACK");
      holder.close();
    }
    expect(await snapshotDb(t)).toBe(before);
  });

  it("rolls a record that fails half-way back to its savepoint: nothing partial is committed", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-savepoint-"));
    try {
      const group = "d".repeat(40);
      const setup = openDatabase(dir);
      // CGA-3333 holds two advisories; make the second one's first event fail after the
      // first advisory (curl, with its aliases and events) has been written in the same record.
      setup.db.$client.exec(`
        INSERT INTO groups (uid, name, create_time, update_time) VALUES ('${group}', 'g', 0, 0);
        CREATE TRIGGER fail_libcurl BEFORE INSERT ON advisory_events
        WHEN (SELECT artifact_name FROM advisories WHERE uid = NEW.advisory_uid) = 'libcurl-openssl4'
        BEGIN SELECT RAISE(ABORT, 'injected failure'); END;`);
      setup.close();
      const summary = await importFiles({ dataDir: dir }, listInputFiles([OSV_DIR]), { group });
      expect(summary).toMatchObject({ loaded: 2, rejected: 3 });
      expect(summary.rejections.map((r) => r.reason)).toContain("injected failure");
      const db = new Database(path.join(dir, "trellis.db"), { readonly: true });
      try {
        const names = db.prepare("SELECT advisory_id || ' ' || artifact_name AS n FROM advisories ORDER BY n").all();
        expect(names).toEqual([{ n: "CGA-2222-aaaa-bbbb openssl" }, { n: "GHSA-wxyz-1234-5678 requests" }]);
        const orphans = db
          .prepare(
            "SELECT (SELECT count(*) FROM advisory_events WHERE advisory_uid NOT IN (SELECT uid FROM advisories)) + (SELECT count(*) FROM advisory_aliases WHERE advisory_uid NOT IN (SELECT uid FROM advisories)) AS n",
          )
          .get() as { n: number };
        expect(orphans.n).toBe(0);
        expect((db.prepare("SELECT count(*) AS n FROM advisory_aliases WHERE alias = 'CVE-2026-2222'").get() as { n: number }).n).toBe(0);
      } finally {
        db.close();
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("runs as a separate process beside the serving server: the server's writes keep succeeding", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-feed-"));
    try {
      const feed = path.join(dir, "feed.ndjson");
      const lines = [JSON.stringify({ repo: { name: "bulk" } })];
      for (let i = 0; i < 3000; i++) {
        lines.push(JSON.stringify({ repo_name: "bulk", tag: { name: `v${i}`, digest: `sha256:${i.toString(16).padStart(64, "0")}` } }));
      }
      fs.writeFileSync(feed, lines.join("\n"));
      const child = new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
        execFile("node", ["bin/trellis.mjs", "import", "--data", t.dataDir, "--group", org, feed], (err, stdout, stderr) =>
          resolve({ code: err ? Number(err.code) : 0, stdout, stderr }),
        );
      });
      let finished = false;
      void child.then(() => {
        finished = true;
      });
      const statuses: number[] = [];
      for (let i = 0; !finished || i < 3; i++) {
        const res = await rest(t.url, "POST", `/iam/v2beta1/groups/${org}`, { name: `while importing ${i}` });
        statuses.push(res.status);
      }
      const result = await child;
      // Its stderr says why, should it fail.
      expect(result.stdout, result.stderr).toMatch(/^import: 3001 loaded, 0 updated, 0 unchanged, 0 rejected /);
      expect(result.code).toBe(0);
      expect(statuses.filter((s) => s !== 200)).toEqual([]);
      const tags = await rest(t.url, "GET", `/registry/v2beta1/tags?uidp.descendants_of=${org}&name=v2999`);
      expect(tags.body.tags).toHaveLength(1);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
