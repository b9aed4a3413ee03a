/**
 * Account associations' List runs statements prepared once per filter shape (list-query.ts
 * preparedLists). Their hierarchy filter is on the uid alone (the association's uid is its
 * group's), so `children_of` compares a substring whose offset depends on the parent's
 * length: asked for parents at different depths, in turn, each answer must be that parent's.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ENGINES, type OpenedEngine } from "../support/engines.js";

const NOW = 1_800_000_000_000;

describe.each(ENGINES)("account associations on $name", (engineUnderTest) => {
  let opened: OpenedEngine;
  const tree: Record<string, string> = {};

  beforeAll(async () => {
    opened = await engineUnderTest.open(NOW);
    const { groups, accountAssociations: associations } = opened.engine.repositories;
    const add = async (key: string, parentUid: string | null) => {
      tree[key] = (await groups.create({ parentUid, name: key, description: "", verified: false, kind: 0 }, NOW)).uid;
      await associations.create(
        { groupUid: tree[key] as string, name: `assoc-${key}`, description: "", providers: { amazon: { account: "123456789012" } } },
        NOW,
      );
    };
    await add("a", null);
    await add("b", null);
    await add("a-folder", tree.a as string);
    await add("a-folder-sub", tree["a-folder"] as string);
    await add("b-folder", tree.b as string);
  });
  afterAll(async () => {
    await opened.close();
  });

  describe("account associations list", () => {
    const page = { order: "uid" as const, desc: false, offset: 0, limit: 100 };

    it("answers children_of, in_root, name and scopes for the values asked, again with other values", async () => {
      const repo = opened.engine.repositories.accountAssociations;
      const uids = async (filter: Parameters<typeof repo.list>[0]) => (await repo.list(filter, page)).map((r) => r.uid);
      for (let round = 0; round < 2; round++) {
        expect(await uids({ uidp: { childrenOf: tree.a } })).toEqual([tree["a-folder"]]);
        expect(await uids({ uidp: { childrenOf: tree["a-folder"] } })).toEqual([tree["a-folder-sub"]]);
        expect(await uids({ uidp: { childrenOf: tree.b } })).toEqual([tree["b-folder"]]);
        expect(await repo.count({ uidp: { childrenOf: tree["a-folder"] } })).toBe(1);
        expect((await uids({ uidp: { inRoot: true } })).sort()).toEqual([tree.a, tree.b].sort());
        expect(await uids({ uidp: {}, name: "assoc-b-folder" })).toEqual([tree["b-folder"]]);
        expect(await uids({ uidp: {}, name: "assoc-a" })).toEqual([tree.a]);
        expect((await uids({ uidp: {}, within: [tree["a-folder"] as string] })).sort()).toEqual([tree["a-folder"], tree["a-folder-sub"]].sort());
        expect(await uids({ uidp: {}, within: [tree.b as string] })).toEqual([tree.b, tree["b-folder"]].sort());
        expect(await repo.count({ uidp: { descendantsOf: tree.a } })).toBe(2);
      }
    });
  });
});
