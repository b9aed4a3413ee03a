/**
 * This build's version, from package.json. Imported (not read from disk) so that every form of
 * the program carries it: tsx from the sources, the compiled `dist/` (scripts/compile.mjs copies
 * package.json beside it) and the single-file binary, which has no package.json beside it. The
 * server reports it at `GET /version`, and `trellis version` / `--version` print it.
 */
import packageJson from "../package.json" with { type: "json" };

export function trellisVersion(): string {
  return packageJson.version;
}
