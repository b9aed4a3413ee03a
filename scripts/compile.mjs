#!/usr/bin/env node
/**
 * `npm run compile`: src/, gen/ and bench/ to dist/ as plain ES modules, file by file (no
 * bundling; the `.js` import specifiers of the sources stay valid), with the committed
 * migrations (SQLite's and PostgreSQL's) beside the store and package.json at the top (`trellis --version` imports it
 * from src/cli/program.ts, two levels up in both trees). `npm start` and the bench targets
 * run this output.
 *
 * Why compile at all: tsx, which the CLI and the tests use, compiles with esbuild's
 * `keepNames`, which wraps every function created at run time in a call that defines its
 * `name` (~0.7 µs a closure; 10-25 % of a unary call, docs/performance.md). This runs the same
 * esbuild without it. Why esbuild rather than tsc: it is a runtime dependency (tsx's own), so
 * `npm start` also works after `npm ci --omit=dev`, and it takes well under a second.
 * Type-checking is `npm run build` (tsc), as before.
 */
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = fileURLToPath(new URL("..", import.meta.url));
const out = path.join(root, "dist");
const entryPoints = ["src", "gen", "bench"].flatMap((dir) =>
  fs
    .readdirSync(path.join(root, dir), { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(".ts") && !f.endsWith(".d.ts"))
    .map((f) => path.join(dir, f)),
);

// A fresh tree: a source deleted since the last compile must not linger as runnable code.
fs.rmSync(out, { recursive: true, force: true });
await build({
  absWorkingDir: root,
  entryPoints,
  outdir: out,
  outbase: ".",
  format: "esm",
  platform: "node",
  target: "node20.19", // engines; from 20.10 on, esbuild keeps the `with { type: "json" }` of an import
  sourcemap: true,
  logLevel: "warning",
});
fs.cpSync(path.join(root, "src/store/sqlite/migrations"), path.join(out, "src/store/sqlite/migrations"), { recursive: true });
fs.cpSync(path.join(root, "src/store/postgres/migrations"), path.join(out, "src/store/postgres/migrations"), { recursive: true });
fs.copyFileSync(path.join(root, "package.json"), path.join(out, "package.json"));
