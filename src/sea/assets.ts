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
/** Asset key of the SQLite migrations: one JSON object, relative path → file text. */
export const MIGRATIONS_ASSET = "migrations.json";
/** Asset key of the PostgreSQL migrations, in the same form. */
export const POSTGRES_MIGRATIONS_ASSET = "postgres-migrations.json";

/** Runs `use` with `files` (relative path → content) written under a new private directory. */
export function withExtractedFiles<T>(files: Readonly<Record<string, string | Uint8Array>>, use: (dir: string) => T): T {
  const dir = extractFiles(files);
  try {
    return use(dir);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** The same for an asynchronous `use`: the directory is removed once its promise settles. */
export async function withExtractedFilesAsync<T>(files: Readonly<Record<string, string | Uint8Array>>, use: (dir: string) => Promise<T>): Promise<T> {
  const dir = extractFiles(files);
  try {
    return await use(dir);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function extractFiles(files: Readonly<Record<string, string | Uint8Array>>): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-"));
  try {
    for (const [relative, content] of Object.entries(files)) {
      const file = path.join(dir, relative);
      fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
      fs.writeFileSync(file, content, { mode: 0o600 });
    }
    return dir;
  } catch (err) {
    fs.rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

/** The migrations under asset `key` (relative path → file text, as scripts/package.mjs stores them). */
export function migrationFiles(key: string): Record<string, string> {
  return JSON.parse(new TextDecoder().decode(assetBytes(key))) as Record<string, string>;
}

/** The bytes of an asset; a clear error when the program is not the packaged binary. */
export function assetBytes(key: string): Uint8Array {
  if (!sea.isSea()) throw new Error(`asset ${key} is only embedded in the packaged trellis binary`);
  return new Uint8Array(sea.getAsset(key));
}
