/**
 * Listing advisories through statements prepared once per filter shape: every shape is asked
 * with one set of values, then another, then the first again, and each answer (page and
 * count) must equal the same filter run with the engine's caches bypassed (built afresh, its
 * values inline, unprepared). A shape key that missed a condition, or a list's length, would
 * hand a later filter the statement of an earlier one and fail here. On every engine through
 * StoreEngine; the advisories arrive the way `trellis import` writes them, through the
 * engine's import writer.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AdvisoryFields, type AdvisoryListFilter, type AdvisoriesRepository, REVIEW_STATE_APPROVED } from "../../src/store/advisories.js";
import { ENGINES, type OpenedEngine } from "../support/engines.js";

const NOW = 1_800_000_000_000;

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

describe.each(ENGINES)("advisories on $name", (engineUnderTest) => {
  let opened: OpenedEngine;
  let repo: AdvisoriesRepository;
  const orgs: string[] = [];

  beforeAll(async () => {
    opened = await engineUnderTest.open(NOW);
    repo = opened.engine.repositories.advisories;
    orgs.length = 0;
    for (const name of ["org-a", "org-b"]) {
      orgs.push((await opened.engine.repositories.groups.create({ parentUid: null, name, description: "", verified: false, kind: 0 }, NOW)).uid);
    }
    await opened.engine.importer.transaction(async (tx) => {
      for (const org of orgs) for (let i = 0; i < 24; i++) await tx.record((w) => w.upsertAdvisory(org, fields(i), NOW));
    });
  });
  afterAll(async () => {
    await opened.close();
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

  /** The reference: every uid the filter selects, in uid order, with the engine's caches bypassed. */
  async function inlineUids(filter: AdvisoryListFilter): Promise<string[]> {
    return (await engineUnderTest.uncached(() => repo.list(filter, { order: "uid", desc: false, offset: 0, limit: 1000 }))).map((r) => r.uid);
  }

  describe("listing advisories (statements prepared once per filter shape)", () => {
    it("answers every shape for the values asked, again with other values, as the uncached statement does", async () => {
      const page = { order: "uid" as const, desc: false, offset: 0, limit: 1000 };
      for (const [name, first, second] of shapes()) {
        const firstUids = await inlineUids(first);
        const secondUids = await inlineUids(second);
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
          expect(await engineUnderTest.uncached(() => repo.count(filter)), name).toBe(expected.length);
        }
      }
      // Every shape ran; a key that confused two of them (e.g. a filter left out of the shape)
      // would have answered the later one with the earlier one's SQL above. The filters are
      // not vacuous either: each matches some rows, not all.
      const total = (await inlineUids({ uidp: {} })).length;
      expect(total).toBeGreaterThan(1);
      for (const [name, first] of shapes().slice(1)) {
        const n = (await inlineUids(first)).length;
        expect(n, name).toBeGreaterThan(0);
        if (!name.startsWith("within two")) expect(n, name).toBeLessThan(total);
      }
    });

    it("pages by keyset after a cursor, in both directions, with the events of each row", async () => {
      const all = await inlineUids({ uidp: {}, artifactTypes: ["apk"] });
      const after = { value: all[3] as string, uid: all[3] as string };
      const up = await repo.list({ uidp: {}, artifactTypes: ["apk"] }, { order: "uid", desc: false, offset: 0, limit: 5, after });
      expect(up.map((r) => r.uid)).toEqual(all.slice(4, 9));
      const down = await repo.list({ uidp: {}, artifactTypes: ["oci"] }, { order: "uid", desc: true, offset: 1, limit: 3 });
      expect(down.map((r) => r.uid)).toEqual((await inlineUids({ uidp: {}, artifactTypes: ["oci"] })).reverse().slice(1, 4));
      expect(up.every((r) => r.events.length >= 1)).toBe(true);
    });
  });
});
