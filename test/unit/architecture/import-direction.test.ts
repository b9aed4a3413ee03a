/**
 * Imports run one way: down the layers of docs/architecture.md ("Layers"). A module may import
 * its own layer and any layer below it, never one above, so a change low in the house (an
 * error, a repository) never has to reach up into the doors, and the doors can be rearranged
 * without touching what they call.
 *
 * Every `import … from`, `export … from`, side-effect `import "…"` and dynamic `import("…")`
 * in src/ counts, type-only imports included (a type from above is still a dependency on
 * above). The scanner is a few regular expressions rather than a dependency-graph tool:
 * the rule is one ordered list, and a second check keeps the scanner honest — every import
 * esbuild resolves when it bundles src/ must also be one the scanner found.
 */
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { describe, expect, it } from "vitest";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const SRC = path.join(ROOT, "src");

/**
 * Bottom first. The name is a folder of src/ or a file at its top. Keep in step with
 * docs/architecture.md "Layers".
 */
const LAYERS: readonly (readonly string[])[] = [
  ["version.ts"], // the build's name and version, from package.json
  ["errors"], // ApiError and its one conversion
  ["fieldmask"], // update masks
  ["json"], // the compiled proto JSON writer (REST door and Connect fast door)
  ["store"], // the only place with SQL, behind the store's engine
  ["pagination"], // page tokens and their keys (kept by the store)
  ["observe"], // logs, metrics, probes, request ids
  ["auth"], // tokens, claim matching, authentication and authorization hooks
  ["services"], // the API's methods, the token exchange among them
  ["transcode"], // the REST door
  ["server"], // the listener, the front door, the RPC doors, the call pipeline
  ["import"], // `trellis import`
  ["cli"], // the command line, `trellis serve` included
  ["sea", "main.ts"], // entry points: the single-file binary, bin/trellis.mjs
];

const rank = new Map<string, number>();
LAYERS.forEach((names, i) => {
  for (const name of names) rank.set(name, i);
});

/** The layer a file of src/ belongs to: its top folder, or itself at the top. */
function layerOf(file: string): string {
  return path.relative(SRC, file).split(path.sep)[0] as string;
}

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(full);
    return e.name.endsWith(".ts") ? [full] : [];
  });
}

const STATIC = /^[ \t]*(?:import|export)\b[^;]*?\bfrom\s*["']([^"']+)["']/gm;
const SIDE_EFFECT = /^[ \t]*import\s*["']([^"']+)["']/gm;
const DYNAMIC = /\bimport\s*\(\s*["']([^"']+)["']\s*\)/g;

/** The relative imports of one file, resolved to absolute .ts paths (or the JSON file named). */
function importsOf(file: string): string[] {
  const text = fs.readFileSync(file, "utf8");
  const specifiers = [...text.matchAll(STATIC), ...text.matchAll(SIDE_EFFECT), ...text.matchAll(DYNAMIC)].map((m) => m[1] as string);
  return specifiers.filter((s) => s.startsWith(".")).map((s) => path.resolve(path.dirname(file), s.endsWith(".js") ? `${s.slice(0, -3)}.ts` : s));
}

interface Edge {
  readonly from: string;
  readonly to: string;
}

function edges(): Edge[] {
  return sourceFiles(SRC).flatMap((from) => importsOf(from).map((to) => ({ from, to })));
}

/** Why an edge breaks the rule, or undefined when it runs down (or stays in its layer). */
function violation({ from, to }: Edge): string | undefined {
  if (!to.startsWith(SRC + path.sep)) return undefined; // gen/, package.json: below everything
  const a = layerOf(from);
  const b = layerOf(to);
  const ra = rank.get(a);
  const rb = rank.get(b);
  if (ra === undefined || rb === undefined) return `${a === undefined ? from : a}/${b}: not in LAYERS`;
  if (rb > ra) return `${path.relative(ROOT, from)} (${a}) imports ${path.relative(ROOT, to)} (${b}), a layer above it`;
  return undefined;
}

describe("import direction", () => {
  it("every top-level folder and file of src/ has a layer", () => {
    const unplaced = fs
      .readdirSync(SRC)
      .filter((name) => name.endsWith(".ts") || fs.statSync(path.join(SRC, name)).isDirectory())
      .filter((name) => !rank.has(name));
    expect(unplaced).toEqual([]);
  });

  it("no import in src/ runs back up a layer", () => {
    const all = edges();
    expect(all.length).toBeGreaterThan(500); // the scanner found the house, not nothing
    const problems = all.map(violation).filter((v): v is string => v !== undefined);
    expect(problems).toEqual([]);
  });

  it("the scanner sees every import esbuild resolves", async () => {
    const result = await build({
      entryPoints: sourceFiles(SRC),
      bundle: true,
      write: false,
      metafile: true,
      packages: "external",
      platform: "node",
      format: "esm",
      outdir: path.join(ROOT, "node_modules/.cache/import-direction"),
      logLevel: "silent",
      loader: { ".sql": "text" },
    });
    const seen = new Set(edges().map((e) => `${e.from} -> ${e.to}`));
    const missed: string[] = [];
    for (const [input, { imports }] of Object.entries(result.metafile.inputs)) {
      const from = path.resolve(ROOT, input);
      if (!from.startsWith(SRC + path.sep)) continue;
      for (const imp of imports) {
        if (imp.external || !imp.original?.startsWith(".")) continue;
        const to = path.resolve(ROOT, imp.path);
        if (!seen.has(`${from} -> ${to}`)) missed.push(`${input} -> ${imp.path}`);
      }
    }
    expect(missed).toEqual([]);
  });

  it("flags an import that runs back up", () => {
    const from = path.join(SRC, "store", "x.ts");
    expect(violation({ from, to: path.join(SRC, "services", "y.ts") })).toMatch(/a layer above it/);
    expect(violation({ from, to: path.join(SRC, "errors", "api-error.ts") })).toBeUndefined();
    expect(violation({ from, to: path.join(SRC, "store", "db.ts") })).toBeUndefined();
  });
});
