/**
 * An invite's creator is recorded when it is made (grantAuthor) and judged again at every
 * redemption (authorLacks) as if it made the invite then: its bindings as they are now,
 * narrowed by the reduction its token carried when it made the invite. The end-to-end cases
 * (a binding lost, a role narrowed, on every door) are test/auth/invite-redemption.test.ts;
 * here, what only the record decides: the reduction it keeps, the operator, and records that
 * name nobody.
 */
import { createContextValues, type HandlerContext } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { CALLER } from "../../../src/auth/caller.js";
import { authorLacks, grantAuthor } from "../../../src/auth/grant-guard.js";
import type { Caller } from "../../../src/auth/tokens.js";
import type { GrantView } from "../../../src/store/grant-view.js";
import type { Grant } from "../../../src/store/role-bindings.js";

const ORG = "a".repeat(40);
const TEAM = `${ORG}/${"1".repeat(16)}`;
const OTHER = `${ORG}/${"2".repeat(16)}`;
const MEL = "b".repeat(40);
const LIST = 103; // groups.list
const CREATE = 101; // groups.create

function contextOf(caller: Caller): HandlerContext {
  const values = createContextValues();
  values.set(CALLER, caller);
  return { values } as HandlerContext;
}

function viewWith(grants: Record<string, Grant[]>): GrantView {
  return { grantsOf: (uid) => grants[uid] ?? [], roleCapabilities: () => undefined, groupsBinding: () => [] };
}

const melOwnsOrg = viewWith({ [MEL]: [{ groupUid: ORG, capabilities: [LIST, CREATE] }] });
const base = { subject: MEL, operator: false, exp: 2, iat: 1 };

describe("an invite's recorded creator", () => {
  it("holds what its bindings give today", () => {
    const author = grantAuthor(contextOf(base));
    expect(authorLacks(melOwnsOrg, author, TEAM, [LIST, CREATE])).toEqual([]);
    expect(authorLacks(viewWith({}), author, TEAM, [LIST, CREATE])).toEqual([LIST, CREATE]);
  });

  it("keeps the reduction of the token it used: capabilities and scopes it did not ask for are never held", () => {
    const author = grantAuthor(contextOf({ ...base, limits: { capabilities: [LIST], scopes: [TEAM] } }));
    expect(authorLacks(melOwnsOrg, author, TEAM, [LIST])).toEqual([]);
    expect(authorLacks(melOwnsOrg, author, TEAM, [LIST, CREATE])).toEqual([CREATE]);
    expect(authorLacks(melOwnsOrg, author, OTHER, [LIST])).toEqual([LIST]);
  });

  it("the operator holds everything; a record that is missing, unreadable or names no identity holds nothing", () => {
    const operator = grantAuthor(contextOf({ ...base, subject: "operator:ops", operator: true }));
    expect(authorLacks(viewWith({}), operator, TEAM, [LIST, CREATE])).toEqual([]);
    for (const author of [
      null,
      "",
      "not json",
      "null",
      "{}",
      JSON.stringify({ sub: "operator:ops" }),
      JSON.stringify({ sub: MEL, trellis_cap: "groups.list" }),
    ]) {
      expect(authorLacks(melOwnsOrg, author, TEAM, [LIST]), String(author)).toEqual([LIST]);
    }
  });
});
