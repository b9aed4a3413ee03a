/**
 * Files the single-file binary carries as SEA assets (scripts/package.mjs puts them there) and
 * that a library can only take from the file system: each use writes them to a fresh private
 * directory (mkdtemp, mode 0700, so no other user can swap a file between our write and its
 * load) and removes it as soon as the library has read them, so nothing is left behind.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import sea from "node:sea";

/** Asset key of better-sqlite3's native addon, built for the embedded Node's ABI. */
export const SQLITE_ADDON_ASSET = "better_sqlite3.node";
/** Asset key of the migrations: one JSON object, relative path → file text. */
export const MIGRATIONS_ASSET = "migrations.json";

/** Runs `use` with `files` (relative path → content) written under a new private directory. */
export function withExtractedFiles<T>(files: Readonly<Record<string, string | Uint8Array>>, use: (dir: string) => T): T {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-"));
  try {
    for (const [relative, content] of Object.entries(files)) {
      const file = path.join(dir, relative);
      fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
      fs.writeFileSync(file, content, { mode: 0o600 });
    }
    return use(dir);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** The bytes of an asset; a clear error when the program is not the packaged binary. */
export function assetBytes(key: string): Uint8Array {
  if (!sea.isSea()) throw new Error(`asset ${key} is only embedded in the packaged trellis binary`);
  return new Uint8Array(sea.getAsset(key));
}
