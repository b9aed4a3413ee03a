/**
 * Stands in, inside the single-file binary only, for the `bindings` package through which
 * better-sqlite3 loads its native addon (`require("bindings")("better_sqlite3.node")`, used
 * whenever a Database is opened without a `nativeBinding`). scripts/package.mjs swaps the
 * module at bundle time, so every `new Database(...)` of the program, wherever it is, gets the
 * addon built for the embedded Node, and the sources keep opening the database as usual.
 *
 * A shared object can only be loaded from a file, so the asset is written to a private
 * temporary file, loaded with process.dlopen, and the file removed at once (the loaded copy
 * stays mapped). Loaded once per process.
 */
import { SQLITE_ADDON_ASSET, assetBytes, withExtractedFiles } from "./assets.js";

let addon: unknown;

export function loadEmbeddedSqliteAddon(name: string): unknown {
  if (name !== SQLITE_ADDON_ASSET) throw new Error(`no embedded native addon named ${name}`);
  addon ??= withExtractedFiles({ [SQLITE_ADDON_ASSET]: assetBytes(SQLITE_ADDON_ASSET) }, (dir) => {
    const module = { exports: {} };
    try {
      process.dlopen(module, `${dir}/${SQLITE_ADDON_ASSET}`);
    } catch (err) {
      // The usual cause on a hardened host: the temporary directory is mounted noexec.
      throw new Error(
        `could not load SQLite from the temporary directory ${dir} (${(err as Error).message}); ` +
          "if it is mounted noexec, set TMPDIR to a directory that allows loading libraries",
      );
    }
    return module.exports;
  });
  return addon;
}
