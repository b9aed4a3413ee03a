/**
 * connect's protocol subpaths are building blocks, not its documented API (connect-internals.ts):
 * they are imported in that one module only, and the packages that carry them are pinned to an
 * exact version, so an upgrade is a deliberate step with one list to re-check
 * (docs/connect-upgrade.md).
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const SRC = path.resolve("src");
const files = (readdirSync(SRC, { recursive: true }) as string[]).filter((f) => f.endsWith(".ts")).map((f) => path.join(SRC, f));
const PRIVATE_IMPORT = /from\s+["']@connectrpc\/connect\/protocol[^"']*["']/;

describe("connect's protocol internals", () => {
  it("are imported by src/server/connect-internals.ts alone", () => {
    const importers = files.filter((f) => PRIVATE_IMPORT.test(readFileSync(f, "utf8"))).map((f) => path.relative(SRC, f));
    expect(importers).toEqual([path.join("server", "connect-internals.ts")]);
  });

  it("come from @connectrpc/connect and connect-node pinned exactly, at the installed version", () => {
    const pkg = JSON.parse(readFileSync("package.json", "utf8")) as { dependencies: Record<string, string> };
    for (const name of ["@connectrpc/connect", "@connectrpc/connect-node"]) {
      const pinned = pkg.dependencies[name];
      expect(pinned, name).toMatch(/^\d+\.\d+\.\d+$/);
      const installed = JSON.parse(readFileSync(path.join("node_modules", name, "package.json"), "utf8")) as { version: string };
      expect(installed.version, name).toBe(pinned);
    }
    // Both from one release: connect-node's conversions and connect's protocol helpers meet.
    expect(pkg.dependencies["@connectrpc/connect-node"]).toBe(pkg.dependencies["@connectrpc/connect"]);
  });
});
