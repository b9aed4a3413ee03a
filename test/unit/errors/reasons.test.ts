/**
 * The reasons clients switch on are one closed set (src/errors/reasons.ts); the table of them in
 * docs/published-api.md must list exactly that set, so a reason added in code without a word for
 * clients, or documented but never sent, fails here.
 */
import fs from "node:fs";
import { describe, expect, it } from "vitest";
import { CODE_NAMES } from "../../../src/errors/codes.js";
import { SPECIFIC_REASONS } from "../../../src/errors/reasons.js";

describe("ErrorInfo reasons", () => {
  it("docs/published-api.md's reason table lists exactly the specific reasons the code can send", () => {
    const doc = fs.readFileSync("docs/published-api.md", "utf8");
    const section = doc.slice(doc.indexOf("### ErrorInfo reasons"));
    const table = section.slice(0, section.indexOf("\n\n", section.indexOf("| reason |")));
    const documented = [...table.matchAll(/^\| `([A-Z_]+)` \|/gm)].map((m) => m[1]);
    expect([...documented].sort()).toEqual([...SPECIFIC_REASONS].sort());
  });

  it("no specific reason reuses a canonical code name, and none is listed twice", () => {
    for (const r of SPECIFIC_REASONS) expect(Object.values(CODE_NAMES) as string[]).not.toContain(r);
    expect(new Set(SPECIFIC_REASONS).size).toBe(SPECIFIC_REASONS.length);
  });
});
