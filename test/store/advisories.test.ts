/**
 * Listing advisories through statements prepared once per filter shape (list-query.ts
 * preparedLists): every shape is asked with one set of values, then another, then the first
 * again, and each answer (page and count) must equal the same filter run as a one-off
 * statement with its values inline. A shape key that missed a condition, or a list's length,
 * would hand a later filter the statement of an earlier one and fail here.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AdvisoryFields, type AdvisoryListFilter, REVIEW_STATE_APPROVED } from "../../src/store/advisories.js";
import { advisoryListWhere, createAdvisoriesRepository, upsertAdvisoryInTx } from "../../src/store/sqlite/advisories.js";
import { type Db, type OpenedDatabase, openDatabase } from "../../src/store/sqlite/db.js";
import { createGroupsRepository } from "../../src/store/sqlite/groups.js";
import { advisories } from "../../src/store/sqlite/schema.js";

const NOW = 1_800_000_000_000;

let dir: string;
let opened: OpenedDatabase;
let db: Db;
const orgs: string[] = [];

/** Advisory `i` of an org: values cycle so that every filter value matches some rows, not all. */
function fields(i: number): AdvisoryFields {
  const pick = <T>(values: readonly T[]) => values[i % values.length] as T;
  return {
    advisoryId: `CGA-${i % 4}`,
    legacyAdvisoryId: i % 3 === 0 ? null : `LEG-${i % 3}`,
    author: "importer",
    artifactName: pick(["alpha", "beta", "gamma"]),
    artifactType: pick(["apk", "oci"]),
    artifactArchitecture: pick(["x86_64", "aarch64", "armv7"]),
    componentName: pick(["openssl", "zlib", "curl", "Busybox"]),
    componentLocation: pick(["/usr/lib", "/bin"]),
    componentType: pick(["apk", "go-module", "python"]),
    origin: i % 5 === 0 ? "origin-pkg" : undefined,
    aliases: [`CVE-2026-${i % 6}`, ...(i % 2 === 0 ? ["GHSA-even"] : [])],
    severities: [],
    deleteTime: null,
    createTime: NOW + i,
    updateTime: NOW + i,
    events: [
      {
        createTime: NOW + i,
        author: pick(["ann", "bob", "cy"]),
        reviewer: pick(["rev-1", "rev-2"]),
        reviewState: (i % 3) + 1,
        issue: null,
        eventType: (i % 4) + 1,
        body: "{}",
        findings: null,
      },
      ...(i % 2 === 0
        ? [
            {
              createTime: NOW + i + 1,
              author: "dee",
              reviewer: "rev-3",
              reviewState: REVIEW_STATE_APPROVED,
              issue: null,
              eventType: 3,
              body: "{}",
              findings: null,
            },
          ]
        : []),
    ],
  };
}

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-advisories-"));
  opened = openDatabase(dir);
  db = opened.db;
  const groups = createGroupsRepository(db);
  for (const name of ["org-a", "org-b"]) orgs.push((await groups.create({ parentUid: null, name, description: "", verified: false, kind: 0 }, NOW)).uid);
  db.transaction((tx) => {
    for (const org of orgs) for (let i = 0; i < 24; i++) upsertAdvisoryInTx(tx as unknown as Db, org, fields(i), NOW);
  });
});
afterAll(() => {
  opened.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Per filter shape: the values asked first and the values asked second. */
function shapes(): [string, AdvisoryListFilter, AdvisoryListFilter][] {
  const [a, b] = orgs as [string, string];
  return [
    ["no filter", { uidp: {} }, { uidp: {} }],
    ["children_of", { uidp: { childrenOf: a } }, { uidp: { childrenOf: b } }],
    ["within", { uidp: {}, within: [a] }, { uidp: {}, within: [b] }],
    ["within two scopes", { uidp: {}, within: [a, b] }, { uidp: {}, within: [b, `${a}/0000000000000000`] }],
    ["advisory ids, one", { uidp: {}, advisoryIds: ["CGA-1"] }, { uidp: {}, advisoryIds: ["CGA-2"] }],
    ["advisory ids, two", { uidp: {}, advisoryIds: ["CGA-1", "CGA-3"] }, { uidp: {}, advisoryIds: ["CGA-0", "CGA-2"] }],
    ["legacy ids", { uidp: {}, legacyAdvisoryIds: ["LEG-1"] }, { uidp: {}, legacyAdvisoryIds: ["LEG-2"] }],
    ["artifact names", { uidp: {}, artifactNames: ["alpha"] }, { uidp: {}, artifactNames: ["gamma"] }],
    ["origin", { uidp: {}, origin: "origin-pkg" }, { uidp: {}, origin: "beta" }],
    ["artifact types", { uidp: {}, artifactTypes: ["apk"] }, { uidp: {}, artifactTypes: ["oci"] }],
    ["architectures", { uidp: {}, artifactArchitectures: ["x86_64"] }, { uidp: {}, artifactArchitectures: ["armv7"] }],
    ["component names", { uidp: {}, componentNames: ["zlib"] }, { uidp: {}, componentNames: ["curl"] }],
    ["component types", { uidp: {}, componentTypes: ["python"] }, { uidp: {}, componentTypes: ["apk"] }],
    ["component locations", { uidp: {}, componentLocations: ["/bin"] }, { uidp: {}, componentLocations: ["/usr/lib"] }],
    ["aliases", { uidp: {}, aliases: ["CVE-2026-1"] }, { uidp: {}, aliases: ["GHSA-even"] }],
    ["review states", { uidp: {}, eventReviewStates: [1] }, { uidp: {}, eventReviewStates: [3] }],
    ["event authors", { uidp: {}, eventAuthors: ["ann"] }, { uidp: {}, eventAuthors: ["cy"] }],
    ["excluded event authors", { uidp: {}, excludeEventAuthors: ["dee"] }, { uidp: {}, excludeEventAuthors: ["bob"] }],
    ["event reviewers", { uidp: {}, eventReviewers: ["rev-1"] }, { uidp: {}, eventReviewers: ["rev-2"] }],
    ["event types", { uidp: {}, eventTypes: [2] }, { uidp: {}, eventTypes: [4] }],
    ["latest event type", { uidp: {}, latestEventType: 3 }, { uidp: {}, latestEventType: 0 }],
    ["query", { uidp: {}, query: "SSL" }, { uidp: {}, query: "ghsa" }],
    [
      "several at once",
      { uidp: { childrenOf: a }, artifactTypes: ["apk"], eventAuthors: ["ann", "bob"], query: "a" },
      { uidp: { childrenOf: b }, artifactTypes: ["oci"], eventAuthors: ["cy", "dee"], query: "z" },
    ],
  ];
}

/** The reference: the same WHERE with its values inline, as a one-off statement. */
function inlineUids(filter: AdvisoryListFilter): string[] {
  return db
    .select({ uid: advisories.uid })
    .from(advisories)
    .where(advisoryListWhere(db, filter))
    .orderBy(advisories.uid)
    .all()
    .map((r) => r.uid);
}

describe("listing advisories (statements prepared once per filter shape)", () => {
  it("answers every shape for the values asked, again with other values, as the inline statement does", async () => {
    const repo = createAdvisoriesRepository(db);
    const page = { order: "uid" as const, desc: false, offset: 0, limit: 1000 };
    for (const [name, first, second] of shapes()) {
      const firstUids = inlineUids(first);
      const secondUids = inlineUids(second);
      // Each pair must tell its two value sets apart, or a stale statement could pass unseen.
      if (name !== "no filter") expect(firstUids, name).not.toEqual(secondUids);
      for (const [filter, expected] of [
        [first, firstUids],
        [second, secondUids],
        [first, firstUids],
      ] as const) {
        expect(
          (await repo.list(filter, page)).map((r) => r.uid),
          name,
        ).toEqual(expected);
        expect(await repo.count(filter), name).toBe(expected.length);
      }
    }
    // Every shape ran; a key that confused two of them (e.g. a filter left out of the shape)
    // would have answered the later one with the earlier one's SQL above. The filters are
    // not vacuous either: each matches some rows, not all.
    const total = inlineUids({ uidp: {} }).length;
    for (const [name, first] of shapes().slice(1)) {
      const n = inlineUids(first).length;
      expect(n, name).toBeGreaterThan(0);
      if (!name.startsWith("within two")) expect(n, name).toBeLessThan(total);
    }
  });

  it("pages by keyset after a cursor, in both directions, with the events of each row", async () => {
    const repo = createAdvisoriesRepository(db);
    const all = inlineUids({ uidp: {}, artifactTypes: ["apk"] });
    const after = { value: all[3] as string, uid: all[3] as string };
    const up = await repo.list({ uidp: {}, artifactTypes: ["apk"] }, { order: "uid", desc: false, offset: 0, limit: 5, after });
    expect(up.map((r) => r.uid)).toEqual(all.slice(4, 9));
    const down = await repo.list({ uidp: {}, artifactTypes: ["oci"] }, { order: "uid", desc: true, offset: 1, limit: 3 });
    expect(down.map((r) => r.uid)).toEqual(
      inlineUids({ uidp: {}, artifactTypes: ["oci"] })
        .reverse()
        .slice(1, 4),
    );
    expect(up.every((r) => r.events.length >= 1)).toBe(true);
  });
});
