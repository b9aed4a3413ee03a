/**
 * Lists stay fast at realistic sizes: with 100k tags in 100 repos, every ListTags order and
 * filter is answered from an index — the query plan has no full table scan and no temporary
 * sort b-tree. The plans are EXPLAINed on the exact SQL and arguments the repository's List
 * runs on its connection (captured with observeListStatements while the List is served),
 * never on a query rebuilt for the test. Advisory filters are checked the same way.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AdvisoryListFilter } from "../../src/store/advisories.js";
import type { StoreEngine } from "../../src/store/engine.js";
import { openStore } from "../../src/store/open.js";
import type { Db } from "../../src/store/sqlite/db.js";
import { sqliteConnectionOf } from "../../src/store/sqlite/engine.js";
import { observeListStatements } from "../../src/store/sqlite/list-query.js";
import type { TagListFilter, TagOrder } from "../../src/store/tags.js";

const ORG = "a".repeat(40);
const REPOS = 100;
const TAGS_PER_REPO = 1000;

let dir: string;
let store: StoreEngine;
let db: Db;

const repoUid = (i: number) => `${ORG}/${i.toString(16).padStart(16, "0")}`;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-plan-"));
  store = await openStore({ dataDir: dir });
  db = sqliteConnectionOf(store);
  const sqlite = db.$client;
  sqlite.prepare("INSERT INTO groups (uid, name, create_time, update_time) VALUES (?, 'org', 0, 0)").run(ORG);
  const repo = sqlite.prepare("INSERT INTO repos (uid, parent_uid, name, create_time, update_time) VALUES (?, ?, ?, 0, 0)");
  const tag = sqlite.prepare("INSERT INTO tags (uid, repo_uid, name, digest, generated, update_time) VALUES (?, ?, ?, ?, ?, ?)");
  const adv = sqlite.prepare(
    "INSERT INTO advisories (uid, parent_uid, advisory_id, artifact_name, origin, create_time, update_time) VALUES (?, ?, ?, ?, ?, 0, 0)",
  );
  sqlite.transaction(() => {
    for (let r = 0; r < REPOS; r++) {
      repo.run(repoUid(r), ORG, `repo-${r}`);
      for (let i = 0; i < TAGS_PER_REPO; i++) {
        const uid = `${repoUid(r)}/${i.toString(16).padStart(16, "0")}`;
        tag.run(uid, repoUid(r), `1.${i}`, `sha256:${(r * TAGS_PER_REPO + i).toString(16).padStart(64, "0")}`, i % 4, 1_700_000_000_000 + i * 1000);
      }
      adv.run(`${ORG}/${(r + 0x1000).toString(16).padStart(16, "0")}`, ORG, `CGA-${r}`, `pkg-${r}`, `pkg-${r}`);
    }
  })();
  expect((sqlite.prepare("SELECT count(*) AS n FROM tags").get() as { n: number }).n).toBe(REPOS * TAGS_PER_REPO);
});

afterAll(() => {
  store.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** The query plan of the one page statement `list` runs, with the arguments it ran with. */
async function plan(list: () => Promise<unknown>): Promise<string> {
  const ran: { sql: string; args: readonly unknown[] }[] = [];
  await observeListStatements((sql, args) => ran.push({ sql, args }), list);
  expect(ran).toHaveLength(1);
  const { sql, args } = ran[0] as { sql: string; args: readonly unknown[] };
  const rows = db.$client.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...args) as { detail: string }[];
  return rows.map((r) => r.detail).join("\n");
}

function tagPlan(filter: Partial<TagListFilter>, order: TagOrder, desc = false, after?: { value: string | number; uid: string }) {
  const f: TagListFilter = { uidp: {}, include: [], ...filter };
  return plan(() => store.repositories.tags.list(f, { order, desc, after, offset: 0, limit: 51 }));
}

function expectIndexed(p: string, index: RegExp) {
  expect(p).not.toMatch(/TEMP B-TREE/);
  expect(p).not.toMatch(/^SCAN tags$/m);
  expect(p).toMatch(index);
}

describe("ListTags query plans over 100k tags", () => {
  const cursor = { value: "1.5", uid: `${repoUid(3)}/0000000000000005` };
  it.each([
    ["uid", /SCAN tags USING INDEX sqlite_autoindex_tags_1/],
    ["name", /SCAN tags USING INDEX tags_name_uid_idx/],
    ["update_time", /SCAN tags USING INDEX tags_update_time_uid_idx/],
  ] as const)("order %s (asc, desc and after a cursor) walks its index", async (order, index) => {
    expectIndexed(await tagPlan({}, order), index);
    expectIndexed(await tagPlan({}, order, true), index);
    const after = order === "update_time" ? { value: 1_700_000_005_000, uid: cursor.uid } : cursor;
    expectIndexed(await tagPlan({}, order, false, after), /SEARCH tags USING INDEX|SCAN tags USING INDEX/);
  });

  it.each([
    ["uidp.children_of", { uidp: { childrenOf: repoUid(7) } }, "uid", /SEARCH tags USING INDEX tags_repo_uid_idx \(repo_uid=\?\)/],
    ["uidp.descendants_of", { uidp: { descendantsOf: repoUid(7) } }, "uid", /SEARCH tags USING INDEX sqlite_autoindex_tags_1 \(uid>\? AND uid<\?\)/],
    ["name", { name: "1.42" }, "uid", /SEARCH tags USING INDEX tags_name_uid_idx \(name=\?\)/],
    ["digest", { digest: `sha256:${"0".repeat(64)}` }, "uid", /SEARCH tags USING INDEX tags_digest_uid_idx \(digest=\?\)/],
    ["updated_since", { updatedSince: 1_700_000_900_000 }, "update_time", /SEARCH tags USING INDEX tags_update_time_uid_idx \(update_time>\?\)/],
    ["include_* flags", { include: [1, 2] as const }, "uid", /SCAN tags USING INDEX sqlite_autoindex_tags_1/],
    ["name in a repo", { uidp: { childrenOf: repoUid(7) }, name: "1.42" }, "uid", /SEARCH tags USING INDEX tags_(repo_name|name_uid)_idx/],
  ] as const)("filter %s searches an index", async (_name, filter, order, index) => {
    expectIndexed(await tagPlan(filter as Partial<TagListFilter>, order), index);
  });
});

describe("ListAdvisories query plans", () => {
  it.each([
    ["advisory_ids", { advisoryIds: ["CGA-1"] }, /advisories_advisory_id_uid_idx/],
    ["artifact_names", { artifactNames: ["pkg-1"] }, /advisories_artifact_name_idx/],
    ["origin", { origin: "pkg-1" }, /advisories_origin_idx/],
    ["component_names", { componentNames: ["x"] }, /advisories_component_name_idx/],
    ["aliases", { aliases: ["CVE-1"] }, /advisory_aliases_alias_idx/],
    ["event_authors", { eventAuthors: ["a"] }, /advisory_events_author_idx/],
    ["event_types", { eventTypes: [3] }, /advisory_events_type_idx/],
    ["latest_event_type", { latestEventType: 3 }, /advisories_latest_event_type_idx/],
  ] as const)("filter %s uses its index", async (_name, filter, index) => {
    const f: AdvisoryListFilter = { uidp: {}, ...(filter as Partial<AdvisoryListFilter>) };
    const p = await plan(() => store.repositories.advisories.list(f, { order: "uid", desc: false, offset: 0, limit: 51 }));
    expect(p).toMatch(index);
    expect(p).not.toMatch(/^SCAN advisories$/m);
  });
});
