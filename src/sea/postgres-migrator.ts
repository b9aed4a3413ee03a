/**
 * Stands in, inside the single-file binary only, for drizzle's node-postgres migrator, as
 * migrator.ts does for SQLite's: src/store/postgres/connection.ts names the migrations folder
 * beside its source file, which a binary does not have. scripts/package.mjs swaps the module
 * for imports from src/store/ at bundle time; the embedded PostgreSQL migrations are written
 * to a private temporary folder, drizzle's own migrator applies them from there (under the
 * caller's advisory lock, unchanged), and the folder is removed once it has finished.
 */
import type { MigrationConfig } from "drizzle-orm/migrator";
import { migrate as migrateFromFolder } from "drizzle-orm/node-postgres/migrator";
import { migrationFiles, POSTGRES_MIGRATIONS_ASSET, withExtractedFilesAsync } from "./assets.js";

export function migrate(db: Parameters<typeof migrateFromFolder>[0], config: MigrationConfig): Promise<void> {
  return withExtractedFilesAsync(migrationFiles(POSTGRES_MIGRATIONS_ASSET), (dir) => migrateFromFolder(db, { ...config, migrationsFolder: dir }));
}
