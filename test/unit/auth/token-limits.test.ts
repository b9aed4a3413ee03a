/**
 * narrowGrants is the whole meaning of a down-scoped token: holding C at X through the
 * narrowed grants must equal holding C at X through the identity's bindings AND C requested
 * AND X inside a requested scope. Checked over random trees, bindings and reductions (seeded).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { holdsAt } from "../../../src/auth/authorize.js";
import { intersectLimits, narrowGrants, type TokenLimits } from "../../../src/auth/token-limits.js";
import { isAncestorOrSelf } from "../../../src/store/uidp.js";

const ROOT = "a".repeat(40);
const seg = (n: number) => n.toString(16).padStart(16, "0");
// A small tree: root, 3 children, 3 grandchildren each.
const GROUPS = [ROOT, ...[1, 2, 3].flatMap((i) => [`${ROOT}/${seg(i)}`, ...[1, 2, 3].map((j) => `${ROOT}/${seg(i)}/${seg(10 + j)}`)])];
const CAPS = [101, 102, 103, 104];

const grant = fc.record({ groupUid: fc.constantFrom(...GROUPS), capabilities: fc.subarray(CAPS, { minLength: 1 }) });
const limits: fc.Arbitrary<TokenLimits> = fc.record({ capabilities: fc.subarray(CAPS), scopes: fc.subarray(GROUPS) }, { requiredKeys: [] });

function inside(scopes: readonly string[] | undefined, x: string): boolean {
  return scopes === undefined || scopes.some((s) => isAncestorOrSelf(s, x));
}

describe("narrowGrants", () => {
  it("holds C at X exactly when the bindings do, C was requested and X lies in a requested scope", () => {
    fc.assert(
      fc.property(fc.array(grant, { maxLength: 6 }), limits, (grants, l) => {
        const narrowed = narrowGrants(grants, l);
        for (const x of GROUPS) {
          for (const c of CAPS) {
            const expected = holdsAt(grants, x, [c]) && (l.capabilities === undefined || l.capabilities.includes(c)) && inside(l.scopes, x);
            expect(holdsAt(narrowed, x, [c])).toBe(expected);
          }
        }
      }),
      { seed: 20261125, numRuns: 300 },
    );
  });

  it("a refresh's reduction of a reduction never widens either (intersectLimits)", () => {
    fc.assert(
      fc.property(fc.array(grant, { maxLength: 6 }), limits, limits, (grants, a, b) => {
        const both = narrowGrants(grants, intersectLimits(a, b));
        const viaA = narrowGrants(grants, a);
        const viaB = narrowGrants(grants, b);
        for (const x of GROUPS) {
          for (const c of CAPS) {
            expect(holdsAt(both, x, [c])).toBe(holdsAt(viaA, x, [c]) && holdsAt(viaB, x, [c]));
          }
        }
      }),
      { seed: 20261126, numRuns: 300 },
    );
  });
});
