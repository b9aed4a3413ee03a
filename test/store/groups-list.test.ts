/**
 * Groups' list and count reuse statements prepared once per query shape (list-query.ts
 * statementCache): the same repository answers many shapes and, within one shape, new values
 * each time — no call may see another call's values.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { GroupsRepository } from "../../src/store/groups.js";
import { ENGINES, type OpenedEngine } from "../support/engines.js";

const NOW = 1_800_000_000_000;

describe.each(ENGINES)("groups on $name", (engineUnderTest) => {
  let opened: OpenedEngine;
  let repo: GroupsRepository;
  const orgs: { uid: string; children: string[] }[] = [];
  const byName = new Map<string, string>();

  beforeEach(async () => {
    opened = await engineUnderTest.open(NOW);
    repo = opened.engine.repositories.groups;
    orgs.length = 0;
    for (const name of ["a", "b"]) {
      const org = await repo.create({ parentUid: null, name, description: "", verified: false, kind: 0 }, NOW);
      const children: string[] = [];
      for (let i = 0; i < 3; i++) {
        const child = await repo.create({ parentUid: org.uid, name: `${name}${i}`, description: "", verified: false, kind: 0 }, NOW + i);
        children.push(child.uid);
        byName.set(child.name, child.uid);
      }
      orgs.push({ uid: org.uid, children: children.sort() });
    }
  });
  afterEach(async () => {
    await opened.close();
  });

  const page = { order: "uid" as const, desc: false, offset: 0, limit: 10 };
  const uids = (rows: { uid: string }[]) => rows.map((r) => r.uid);

  describe("groups list/count with cached prepared statements", () => {
    it("the same shape with other values answers for those values", async () => {
      for (const org of [...orgs, ...orgs]) {
        expect(uids(await repo.list({ uidp: { childrenOf: org.uid } }, page))).toEqual(org.children);
        expect(await repo.count({ uidp: { childrenOf: org.uid } })).toBe(3);
        expect(uids(await repo.list({ uidp: { descendantsOf: org.uid } }, page))).toEqual(org.children);
      }
    });

    it("limit, offset and the keyset cursor are values, not part of the statement", async () => {
      const [a] = orgs;
      const f = { uidp: { childrenOf: a!.uid } };
      expect(uids(await repo.list(f, { ...page, limit: 2 }))).toEqual(a!.children.slice(0, 2));
      expect(uids(await repo.list(f, { ...page, limit: 1, offset: 1 }))).toEqual(a!.children.slice(1, 2));
      const after = { value: a!.children[0]!, uid: a!.children[0]! };
      expect(uids(await repo.list(f, { ...page, after }))).toEqual(a!.children.slice(1));
      const after2 = { value: a!.children[1]!, uid: a!.children[1]! };
      expect(uids(await repo.list(f, { ...page, after: after2 }))).toEqual(a!.children.slice(2));
      expect(uids(await repo.list(f, { ...page, desc: true, after: after2 }))).toEqual(a!.children.slice(0, 1));
    });

    it("filters of other shapes (name, ids, scopes of any count) each get their own statement", async () => {
      const [a, b] = orgs;
      expect(uids(await repo.list({ uidp: {}, name: "b1" }, page))).toEqual([byName.get("b1")]);
      expect(uids(await repo.list({ uidp: {}, name: "a2" }, page))).toEqual([byName.get("a2")]);
      expect(uids(await repo.list({ uidp: { ids: [a!.uid] } }, page))).toEqual([a!.uid]);
      expect(uids(await repo.list({ uidp: { ids: [a!.uid, b!.uid] } }, page))).toEqual([a!.uid, b!.uid].sort());
      expect(await repo.count({ uidp: { inRoot: true }, within: [] })).toBe(0);
      expect(await repo.count({ uidp: {}, within: [a!.uid] })).toBe(4);
      expect(await repo.count({ uidp: {}, within: [a!.uid, b!.uid] })).toBe(8);
      expect(uids(await repo.list({ uidp: { inRoot: true }, within: [b!.uid] }, page))).toEqual([b!.uid]);
      expect(uids(await repo.list({ uidp: { ancestorsOf: b!.children[0]! } }, page))).toEqual([b!.uid]);
    });
  });
});
