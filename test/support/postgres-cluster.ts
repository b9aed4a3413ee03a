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
import pg from "pg";
import type { TestProject } from "vitest/node";
import { findServerBinaries, startCluster, stopCluster } from "../../scripts/pg-cluster.mjs";
import { createPool, migratePostgres } from "../../src/store/postgres/connection.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** Superuser URL of the run's cluster, or null when PostgreSQL is not installed here. */
    postgresUrl: string | null;
    /** A database of the cluster holding the committed migrations, to copy (see migratedTemplate). */
    postgresTemplate: string | null;
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
    project.provide("postgresTemplate", null);
    return undefined;
  }
  const cluster = await startCluster({ log: (line) => console.warn(line) });
  try {
    project.provide("postgresTemplate", await migratedTemplate(cluster.url));
  } catch (err) {
    await stopCluster(cluster.dir);
    throw err;
  }
  project.provide("postgresUrl", cluster.url);
  return () => stopCluster(cluster.dir);
}

/**
 * Every test server of the protocol suites gets a database of its own, and migrating an empty
 * one costs several times what copying a migrated one does (CREATE DATABASE … TEMPLATE copies
 * its files). So the committed migrations run once per test run, here, into a template that
 * newPostgresDatabase copies; the server's own start-up then finds them applied, as a replica
 * joining a running deployment does. No session may stay connected to a template while it is
 * copied, so connections to it are refused once it is made.
 */
async function migratedTemplate(clusterUrl: string): Promise<string> {
  const name = "trellis_migrated_template";
  const admin = new pg.Client({ connectionString: clusterUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
    const url = new URL(clusterUrl);
    url.pathname = `/${name}`;
    const pool = createPool({ url: url.toString(), poolSize: 1 });
    try {
      await migratePostgres(pool);
    } finally {
      await pool.end();
    }
    await admin.query(`ALTER DATABASE ${name} WITH IS_TEMPLATE true ALLOW_CONNECTIONS false`);
  } finally {
    await admin.end();
  }
  return name;
}
