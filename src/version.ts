/**
 * This build's version: the `version` of the package.json named "trellis" found by walking up
 * from this module (src/ under tsx, dist/src/ when compiled), read once. The server reports
 * it at `GET /version`, and `trellis version` prints it for the client.
 */
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

let cached: string | undefined;

export function trellisVersion(): string {
  if (cached !== undefined) return cached;
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    try {
      const pkg = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")) as { name?: unknown; version?: unknown };
      if (pkg.name === "trellis" && typeof pkg.version === "string") return (cached = pkg.version);
    } catch {
      // No package.json here (or not ours): keep walking up.
    }
    const up = path.dirname(dir);
    if (up === dir) return (cached = "unknown");
    dir = up;
  }
}
