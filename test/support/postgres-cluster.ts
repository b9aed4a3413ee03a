/**
 * vitest globalSetup of the `postgres` project (vitest.config.ts): one throwaway PostgreSQL
 * cluster per test run (scripts/pg-cluster.mjs), started only when a PostgreSQL test file is
 * in the run, stopped when the run ends. Test files reach it through `freshPostgresDatabase`
 * (postgres.ts), which gives each file a database of its own.
 *
 * Without the server binaries: under CI=true the run fails here, saying what is missing
 * (a CI that skipped every PostgreSQL test would pass having proven nothing); elsewhere the
 * PostgreSQL files are skipped with that same message printed once.
 */
import type { TestProject } from "vitest/node";
import { findServerBinaries, startCluster, stopCluster } from "../../scripts/pg-cluster.mjs";

declare module "vitest" {
  export interface ProvidedContext {
    /** Superuser URL of the run's cluster, or null when PostgreSQL is not installed here. */
    postgresUrl: string | null;
  }
}

export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  // As root, startCluster installs Debian's package when the binaries are missing (and PG_BIN unset).
  const canInstall = process.getuid?.() === 0 && !process.env.PG_BIN;
  if (!findServerBinaries() && !canInstall) {
    const message = "PostgreSQL server binaries are not installed (Debian: apt-get install postgresql, or set PG_BIN), so the PostgreSQL tests cannot run";
    if (process.env.CI === "true") throw new Error(message);
    console.warn(`postgres tests skipped: ${message}`);
    project.provide("postgresUrl", null);
    return undefined;
  }
  const cluster = await startCluster({ log: (line) => console.warn(line) });
  project.provide("postgresUrl", cluster.url);
  return () => stopCluster(cluster.dir);
}
