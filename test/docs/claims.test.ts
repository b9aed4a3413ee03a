/**
 * Tables in the docs that restate what the code defines, held to the code: docs/performance.md's
 * targets to the bench's (bench/goals.ts), docs/operate.md's flags to `trellis serve`'s options.
 * A target or flag added, dropped or reworded on one side without the other fails here. (The
 * figures themselves are measured by the bench, never in tests.)
 */
import fs from "node:fs";
import { expect, it } from "vitest";
import { checkGoals } from "../../bench/goals.js";
import type { ScenarioResult } from "../../bench/report.js";
import { buildProgram } from "../../src/cli/program.js";

/** The rows of the first table under `heading` in `doc`, as cells with backticks removed. */
function tableRows(doc: string, heading: string): string[][] {
  const text = fs.readFileSync(doc, "utf8");
  const start = text.indexOf(`\n${heading}\n`);
  expect(start, `${doc} has "${heading}"`).toBeGreaterThan(-1);
  const section = text.slice(start + 1, text.indexOf("\n## ", start + 1));
  const table = section.slice(section.indexOf("\n|") + 1, section.indexOf("\n\n", section.indexOf("\n|")));
  return table
    .split("\n")
    .slice(2) // the header row and the --- row
    .map((row) =>
      row
        .split("|")
        .slice(1, -1)
        .map((cell) => cell.trim().replaceAll("`", "")),
    );
}

/** A scenario that ran, figures aside: enough for checkGoals to list every target it knows. */
function ran(id: string): ScenarioResult {
  return { id, title: id, kind: "load", status: "ok", runs: [{} as never] };
}

it("docs/performance.md's targets are the bench's targets, in the bench's words", () => {
  // A PostgreSQL scenario in the run makes checkGoals add the PostgreSQL targets too.
  const goals = checkGoals([ran("rest-get"), ran("pg-rest-get")]).map((g) => g.goal);
  expect(tableRows("docs/performance.md", "## Against the targets").map(([target]) => target)).toEqual(goals);
});

it("docs/operate.md's flags are trellis serve's options, each with its environment variable", () => {
  const io = { out: () => {}, err: () => {}, stdoutIsTty: false, stderrIsTty: false, env: {} };
  const serve = buildProgram(io).commands.find((c) => c.name() === "serve");
  const options = (serve?.options ?? []).map((o) => ({ flag: o.long as string, env: /\[env (TRELLIS_\w+)/.exec(o.description)?.[1] }));
  expect(options.length).toBeGreaterThan(10);
  // A row may hold two flags and their two variables: `--tls-cert FILE --tls-key FILE`.
  const documented = tableRows("docs/operate.md", "## Flags").flatMap(([flags = "", env = ""]) => {
    const envs = env.match(/TRELLIS_\w+/g) ?? [];
    return [...flags.matchAll(/--[a-z0-9-]+/g)].map((m, i) => ({ flag: m[0], env: envs[i] }));
  });
  expect(documented.sort((a, b) => a.flag.localeCompare(b.flag))).toEqual(options.sort((a, b) => a.flag.localeCompare(b.flag)));
});
