/**
 * Role bindings' List is a joined read (identity, group and role names) run through a
 * statement prepared once per filter shape (list-query.ts joinedPage): every shape, asked
 * again with other values, must answer for those values, with the joined fields of each row.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { builtInRoleUid } from "../../src/store/builtin-roles.js";
import type { RoleBindingRecord } from "../../src/store/role-bindings.js";
import { ENGINES, type OpenedEngine } from "../support/engines.js";

const NOW = 1_800_000_000_000;

describe.each(ENGINES)("role bindings on $name", (engineUnderTest) => {
  let opened: OpenedEngine;
  const all: RoleBindingRecord[] = [];
  const orgs: string[] = [];

  beforeAll(async () => {
    opened = await engineUnderTest.open(NOW);
    const { groups, identities, roleBindings: bindings } = opened.engine.repositories;
    for (const name of ["org-a", "org-b"]) {
      const org = (await groups.create({ parentUid: null, name, description: "", verified: false, kind: 0 }, NOW)).uid;
      orgs.push(org);
      for (const who of ["robot-1", "robot-2"]) {
        const identity = await identities.create(
          { parentUid: org, name: `${name}-${who}`, description: "", company: "", relationship: { kind: "service_principal", servicePrincipal: 1 } },
          NOW,
        );
        for (const role of ["viewer", "editor"]) {
          const roleUid = builtInRoleUid(role);
          all.push(...(await bindings.create(org, [{ identityUid: identity.uid, roleUid, fields: { identityUid: "identity", roleUid: "role" } }], NOW)));
        }
      }
    }
  });
  afterAll(async () => {
    await opened.close();
  });

  describe("role bindings list", () => {
    const page = { order: "uid" as const, desc: false, offset: 0, limit: 100 };

    it("answers each filter shape for the values asked, again with other values, rows joined", async () => {
      const repo = opened.engine.repositories.roleBindings;
      const expected = (pred: (b: RoleBindingRecord) => boolean) => all.filter(pred).sort((x, y) => (x.uid < y.uid ? -1 : 1));
      for (let round = 0; round < 2; round++) {
        for (const org of orgs) {
          expect(await repo.list({ uidp: { childrenOf: org } }, page)).toEqual(expected((b) => b.groupUid === org));
          expect(await repo.list({ uidp: {}, within: [org] }, page)).toEqual(expected((b) => b.groupUid === org));
          expect(await repo.count({ uidp: { descendantsOf: org } })).toBe(4);
        }
        for (const b of all.slice(0, 3)) {
          expect(await repo.list({ uidp: {}, identityUid: b.identityUid }, page)).toEqual(expected((x) => x.identityUid === b.identityUid));
          expect(await repo.list({ uidp: {}, roleUid: b.roleUid }, page)).toEqual(expected((x) => x.roleUid === b.roleUid));
          expect(await repo.list({ uidp: {}, roleUid: b.roleUid, groupUid: b.groupUid }, page)).toEqual(
            expected((x) => x.roleUid === b.roleUid && x.groupUid === b.groupUid),
          );
        }
      }
      const first = expected(() => true)[0] as RoleBindingRecord;
      expect(first.identity.name).toMatch(/^org-[ab]-robot-[12]$/);
      expect(first.role.name === "viewer" || first.role.name === "editor").toBe(true);
      const after = { value: first.uid, uid: first.uid };
      expect(await repo.list({ uidp: {} }, { ...page, after })).toEqual(expected((b) => b.uid > first.uid));
    });
  });
});
