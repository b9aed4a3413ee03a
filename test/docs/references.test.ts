/**
 * What the docs point at exists. The docs name files (`src/store/sqlite/group-commit.ts`, or
 * just `group-commit.ts` where the section says which folder) and cite each other's sections
 * (`docs/cli.md "Backup and restore"`), and so do code comments; files move and headings
 * change, and a pointer that leads nowhere is a claim that no longer holds. Shell blocks are
 * run elsewhere (docs.test.ts); this checks the prose.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { CODE_NAMES } from "../../src/errors/codes.js";
import { SPECIFIC_REASONS } from "../../src/errors/reasons.js";

const ROOT = path.resolve(".");
/** The files of the checkout: committed, or new and not ignored. */
const TRACKED = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], { cwd: ROOT, encoding: "utf8" })
  .split("\0")
  .filter(Boolean);
/** Tracked files, and every folder above one. */
const PATHS = new Set(TRACKED.flatMap((f) => f.split("/").map((_, i, parts) => parts.slice(0, i + 1).join("/"))));
const BASENAMES = new Set(TRACKED.map((f) => path.basename(f)));

const DOCS = ["README.md", ...fs.readdirSync(path.join(ROOT, "docs")).flatMap((f) => (f.endsWith(".md") ? [`docs/${f}`] : []))];
/** Where code comments cite a document's section (this file's own examples aside). */
const CODE = TRACKED.filter((f) => /^(src|test|bench|scripts)\//.test(f) && /\.(ts|mjs|cjs|js|sh)$/.test(f) && f !== "test/docs/references.test.ts");

/** Prose only: fenced blocks are commands and output, not pointers. */
function prose(markdown: string): string {
  return markdown.replace(/^```[^\n]*\n[\s\S]*?^```\s*$/gm, "");
}

const TOP = "(?:src|test|bench|scripts|docs|proto|packaging|examples|gen|bin|\\.ci)";
/** Where a path is not a file of the repository: written by a run, or a placeholder. */
const NOT_IN_REPO = [/^bench\/results\//, /[<>*…]/];

function pathsNamed(text: string): string[] {
  const found = [...text.matchAll(new RegExp(`(?<![\\w./-])${TOP}/[\\w./-]*[\\w/]`, "g"))].map((m) => m[0].replace(/\/$/, ""));
  return found.filter((p) => !NOT_IN_REPO.some((re) => re.test(p)));
}

/** `name.ts` alone, in backticks: a file the section's folder holds. */
function bareFilesNamed(text: string): string[] {
  return [...text.matchAll(/`([\w.-]+\.(?:ts|mjs|cjs|sh|proto|sql))`/g)].map((m) => m[1] as string);
}

/**
 * What a citation may name: a heading (its numbering, `## 2. Authentication`, aside; a cite may
 * stop before a heading's colon, "Down-scoping" for "Down-scoping: `cap` and `scopes`"), or the
 * bold label that opens a list item (`- **Storage.** ...`).
 */
function sections(doc: string): Set<string> {
  const text = prose(fs.readFileSync(path.join(ROOT, doc), "utf8")).replaceAll("`", "");
  const names = new Set<string>();
  for (const m of text.matchAll(/^#{1,6}\s+(?:\d+\.\s+)?(.+?)\s*$/gm)) {
    const heading = m[1] as string;
    names.add(heading);
    if (heading.includes(":")) names.add(heading.slice(0, heading.indexOf(":")));
  }
  for (const m of text.matchAll(/^\s*[-*]\s+\*\*(.+?)\.?\*\*/gm)) names.add(m[1] as string);
  return names;
}

/**
 * `docs/x.md "Heading"`, `docs/x.md` ("Heading"), docs/x.md, "Heading", [docs/x.md](docs/x.md)
 * "Heading", in prose or in a comment. Something other than the quote must follow the name
 * (a space, a parenthesis), so a list of file names in code is not read as a citation.
 */
function sectionsCited(text: string): { doc: string; heading: string }[] {
  return [...text.matchAll(/(docs\/[\w-]+\.md)[`)]*(?:,?\s+\(?|\s*\()"([^"\n]+)"/g)].map((m) => ({
    doc: m[1] as string,
    heading: (m[2] as string).replaceAll("`", ""),
  }));
}

/** The names after "reason" or "reasons": `reason \`STORAGE_BUSY\``, `reasons (\`TOKEN_MISSING\`, \`TOKEN_EXPIRED\`, ...)`. */
function reasonsNamed(text: string): string[] {
  return [...text.matchAll(/\breasons? \(?((?:`[A-Z_]+`(?:,\s*|\s+or\s+|\s+and\s+)?)+)/g)].flatMap((m) =>
    [...(m[1] as string).matchAll(/`([A-Z_]+)`/g)].map((r) => r[1] as string),
  );
}

describe("the docs' pointers", () => {
  it("name only files and folders that exist", () => {
    const missing = DOCS.flatMap((doc) => {
      const text = prose(fs.readFileSync(path.join(ROOT, doc), "utf8"));
      return [...pathsNamed(text).filter((p) => !PATHS.has(p)), ...bareFilesNamed(text).filter((f) => !BASENAMES.has(f))].map((p) => `${doc}: ${p}`);
    });
    expect(missing).toEqual([]);
  });

  it("cite only sections that exist, from the docs and from code comments", () => {
    const cache = new Map<string, Set<string>>();
    const missing = [...DOCS, ...CODE].flatMap((file) => {
      const text = fs.readFileSync(path.join(ROOT, file), "utf8");
      return sectionsCited(DOCS.includes(file) ? prose(text) : text).flatMap(({ doc, heading }) => {
        if (!PATHS.has(doc)) return [`${file}: ${doc} does not exist`];
        if (!cache.has(doc)) cache.set(doc, sections(doc));
        return cache.get(doc)?.has(heading) ? [] : [`${file}: ${doc} has no section "${heading}"`];
      });
    });
    expect(missing).toEqual([]);
  });

  it("name only ErrorInfo reasons the server can send (src/errors/reasons.ts)", () => {
    const known = new Set<string>([...Object.values(CODE_NAMES), ...SPECIFIC_REASONS]);
    const unknown = DOCS.flatMap((doc) =>
      reasonsNamed(prose(fs.readFileSync(path.join(ROOT, doc), "utf8")))
        .filter((r) => !known.has(r))
        .map((r) => `${doc}: ${r}`),
    );
    expect(unknown).toEqual([]);
  });

  it("finds the pointers it checks (a pattern that stopped matching would check nothing)", () => {
    const readme = prose(fs.readFileSync(path.join(ROOT, "README.md"), "utf8"));
    expect(pathsNamed(readme)).toContain("docs/operate.md");
    expect(sectionsCited(readme)).toContainEqual({ doc: "docs/published-api.md", heading: "ErrorInfo reasons" });
    expect(bareFilesNamed("see `group-commit.ts` and `src/a.ts`")).toEqual(["group-commit.ts"]);
    expect(sectionsCited('(`docs/architecture.md`, "Traces") and docs/cli.md ("Backup and restore"); ["docs/a.md", "docs/b.md"]')).toEqual([
      { doc: "docs/architecture.md", heading: "Traces" },
      { doc: "docs/cli.md", heading: "Backup and restore" },
    ]);
    expect(reasonsNamed(readme)).toContain("TOKEN_MISSING");
    expect(reasonsNamed("reason `A_B`, `C` or `D`; reasons (`E` and `F`), `G`")).toEqual(["A_B", "C", "D", "E", "F"]);
    expect(sections("docs/security.md")).toContain("Authentication");
    expect(sections("docs/architecture.md")).toContain("Storage");
  });
});
