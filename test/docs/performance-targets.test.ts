/**
 * docs/performance.md's "Against the targets" lists exactly the targets the bench checks
 * (bench/goals.ts), in its words: a target added, dropped or reworded in the bench without the
 * page following it (or the reverse) fails here. The figures themselves are measured by the
 * bench, never in tests.
 */
import fs from "node:fs";
import { expect, it } from "vitest";
import { checkGoals } from "../../bench/goals.js";
import type { ScenarioResult } from "../../bench/report.js";

/** A scenario that ran, figures aside: enough for checkGoals to list every target it knows. */
function ran(id: string): ScenarioResult {
  return { id, title: id, kind: "load", status: "ok", runs: [{} as never] };
}

it("docs/performance.md's targets are the bench's targets, in the bench's words", () => {
  const doc = fs.readFileSync("docs/performance.md", "utf8");
  const section = doc.slice(doc.indexOf("## Against the targets"), doc.indexOf("\n## ", doc.indexOf("## Against the targets") + 1));
  const rows = [...section.matchAll(/^\| (?!target \|)(?!---)([^|]+?) \|/gm)].map((m) => (m[1] as string).replaceAll("`", ""));
  // A PostgreSQL scenario in the run makes checkGoals add the PostgreSQL targets too.
  const goals = checkGoals([ran("rest-get"), ran("pg-rest-get")]).map((g) => g.goal);
  expect(rows).toEqual(goals);
});
