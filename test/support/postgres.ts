/**
 * PostgreSQL for a test file: a database of its own on the run's throwaway cluster
 * (postgres-cluster.ts), so files run in parallel without seeing each other's rows.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, describe, inject } from "vitest";

/** The run's cluster URL, or null when PostgreSQL is not installed (never null under CI=true). */
export function postgresClusterUrl(): string | null {
  // undefined outside the postgres project (its globalSetup provides the value)
  const url = inject("postgresUrl") ?? null;
  if (url === null && process.env.CI === "true") {
    // Under CI the setup fails when it cannot start a cluster, so this is a file outside
    // test/postgres/: it would be skipped silently, proving nothing.
    throw new Error("PostgreSQL tests must live in test/postgres/ (the vitest project that starts the cluster)");
  }
  return url;
}

/**
 * The storage engine this test run is for: "postgres" in the vitest project that runs the
 * repository and protocol suites again on PostgreSQL (vitest.config.ts), else "sqlite".
 */
export const TEST_ENGINE: "sqlite" | "postgres" = process.env.TRELLIS_TEST_ENGINE === "postgres" ? "postgres" : "sqlite";

/** `describe`, skipped (visibly, as skipped tests) only where the cluster could not exist. */
export const describePostgres = ((...args: Parameters<typeof describe>) =>
  // Decided when called, not when this module loads: files of every project import it.
  (postgresClusterUrl() === null ? describe.skip : describe)(...args)) as typeof describe;

/** `url` with its database replaced by `database`. */
export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

/**
 * A fresh database on the run's cluster, named after `label`; drop it with dropPostgresDatabase.
 * Empty, or with `{ migrated: true }` a copy of the run's migrated template (postgres-cluster.ts):
 * what a test server's start-up would make of an empty one, made for a fraction of the cost.
 */
export async function newPostgresDatabase(label = "t", options: { migrated?: boolean } = {}): Promise<{ url: string; name: string }> {
  const cluster = postgresClusterUrl();
  if (cluster === null) throw new Error("no PostgreSQL cluster in this run (see test/support/postgres-cluster.ts)");
  const name = `trellis_${label
    .replace(/[^a-z0-9_]/gi, "_")
    .toLowerCase()
    .slice(0, 30)}_${randomBytes(6).toString("hex")}`;
  const template = options.migrated ? inject("postgresTemplate") : null;
  await adminQuery(cluster, template ? `CREATE DATABASE ${name} TEMPLATE ${template}` : `CREATE DATABASE ${name}`);
  return { url: withDatabase(cluster, name), name };
}

/** Drops a database newPostgresDatabase made (connections still on it are ended). */
export async function dropPostgresDatabase(name: string): Promise<void> {
  const cluster = postgresClusterUrl();
  if (cluster === null) return;
  await adminQuery(cluster, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
}

/**
 * Creates an empty database for the calling file and returns its URL; it is dropped after the
 * file's tests. Call it in `beforeAll`.
 */
export async function freshPostgresDatabase(label = "t"): Promise<string> {
  const { url, name } = await newPostgresDatabase(label);
  afterAll(() => dropPostgresDatabase(name));
  return url;
}

/** One statement on the cluster's `postgres` database, on a connection of its own. */
export async function adminQuery(url: string, sql: string): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await client.query(sql);
  } finally {
    await client.end();
  }
}
