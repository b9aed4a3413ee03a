/**
 * Stands in, inside the single-file binary only, for drizzle's better-sqlite3 migrator, which
 * reads the migrations from a folder (src/store/sqlite/db.ts passes the one beside its source file,
 * which does not exist beside a binary). scripts/package.mjs swaps the module for imports from
 * src/store/ at bundle time: the embedded migrations are written to a private temporary folder,
 * drizzle's own migrator applies them from there, and the folder is removed.
 */
import type { MigrationConfig } from "drizzle-orm/migrator";
import { migrate as migrateFromFolder } from "drizzle-orm/better-sqlite3/migrator";
import { MIGRATIONS_ASSET, migrationFiles, withExtractedFiles } from "./assets.js";

export function migrate(db: Parameters<typeof migrateFromFolder>[0], config: MigrationConfig): void {
  withExtractedFiles(migrationFiles(MIGRATIONS_ASSET), (dir) => migrateFromFolder(db, { ...config, migrationsFolder: dir }));
}
