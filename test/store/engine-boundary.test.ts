/**
 * The storage seam holds: outside src/store/, no source file names the SQLite engine (its
 * driver, drizzle's SQLite modules, the `Db` connection type, a PRAGMA, a SQLITE_* error
 * code), imports from src/store/sqlite/ or writes its own BEGIN / SAVEPOINT / COMMIT (the
 * importer's transactions are the store's import writer). Everything else reaches storage through the
 * StoreEngine interface (src/store/engine.ts), so a second engine slots in behind it.
 *
 * src/sea/ is exempt: it is the single-file binary's stand-ins for two library modules
 * (better-sqlite3's addon loader, drizzle's migrator), swapped in by the bundler, and names
 * them because that is its whole job.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const SRC = path.resolve(__dirname, "../../src");
const EXEMPT = ["store", "sea"].map((d) => path.join(SRC, d) + path.sep);

/** What only the store may say, each with why it gives the engine away. */
const FORBIDDEN: readonly { what: string; pattern: RegExp }[] = [
  { what: "the better-sqlite3 driver", pattern: /better-sqlite3/ },
  { what: "drizzle's SQLite modules", pattern: /drizzle-orm\/(?:better-sqlite3|sqlite-core|sqlite-proxy|libsql)/ },
  { what: "the SQLite connection type Db", pattern: /\bDb\b/ },
  { what: "a PRAGMA", pattern: /\bPRAGMA\b|\.pragma\(/ },
  { what: "a SQLite error code", pattern: /\bSQLITE_[A-Z]/ },
  { what: "an import from src/store/sqlite/", pattern: /from\s+["'][^"']*store\/sqlite\// },
  { what: "a hand-rolled transaction statement", pattern: /["'`](?:BEGIN|SAVEPOINT|RELEASE|ROLLBACK|COMMIT)\b/ },
];

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(full);
    return e.name.endsWith(".ts") ? [full] : [];
  });
}

/** Every line of `text` that matches `pattern`, as "file:line: text". */
function offences(file: string, text: string, pattern: RegExp): string[] {
  return text.split("\n").flatMap((line, i) => (pattern.test(line) ? [`${path.relative(SRC, file)}:${i + 1}: ${line.trim()}`] : []));
}

describe("the storage seam", () => {
  const files = sourceFiles(SRC).filter((f) => !EXEMPT.some((d) => f.startsWith(d)));

  it("scans the sources outside src/store/", () => {
    // A guard that reads nothing passes for the wrong reason.
    expect(files.some((f) => f.endsWith(path.join("server", "create-app.ts")))).toBe(true);
    expect(files.some((f) => f.includes(`${path.sep}store${path.sep}`))).toBe(false);
  });

  it.each(FORBIDDEN)("nothing outside src/store/ names $what", ({ pattern }) => {
    const found = files.flatMap((f) => offences(f, fs.readFileSync(f, "utf8"), pattern));
    expect(found).toEqual([]);
  });

  it("each pattern catches what it names (the guard is not blind)", () => {
    const samples = [
      'import Database from "better-sqlite3";',
      'import { drizzle } from "drizzle-orm/better-sqlite3";',
      "function f(db: Db) {}",
      'sqlite.pragma("page_count")',
      'if (code === "SQLITE_BUSY") {}',
      'import { x } from "../store/sqlite/engine.js";',
      'sqlite.exec("SAVEPOINT import_record");',
    ];
    for (const [i, { pattern }] of FORBIDDEN.entries()) expect(pattern.test(samples[i] as string)).toBe(true);
  });
});
