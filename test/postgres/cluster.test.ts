/**
 * The test cluster itself (scripts/pg-cluster.mjs, test/support/postgres-cluster.ts): the
 * server the PostgreSQL engine is tested against is the one it is written for, with bytewise
 * collation, and each test file gets a database nobody else sees.
 */
import pg from "pg";
import { beforeAll, expect, it } from "vitest";
import { adminQuery, describePostgres, freshPostgresDatabase, postgresClusterUrl } from "../support/postgres.js";

describePostgres("test PostgreSQL cluster", () => {
  let url: string;
  beforeAll(async () => {
    url = await freshPostgresDatabase("cluster");
  });

  it("is PostgreSQL 15 or later, UTF-8, with the C collation the keyset order relies on", async () => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const { rows } = await client.query(
        "SELECT current_setting('server_version_num')::int AS version, current_setting('server_encoding') AS encoding, datcollate FROM pg_database WHERE datname = current_database()",
      );
      expect(rows[0].version).toBeGreaterThanOrEqual(150000);
      expect(rows[0].encoding).toBe("UTF8");
      expect(rows[0].datcollate).toBe("C");
    } finally {
      await client.end();
    }
  });

  it("gives this file a database of its own, separate from the cluster's default one", async () => {
    const own = new URL(url).pathname.slice(1);
    expect(own).toMatch(/^trellis_cluster_[0-9a-f]{12}$/);
    const { rows } = await adminQuery(postgresClusterUrl()!, `SELECT datname FROM pg_database WHERE datname = '${own}'`);
    expect(rows).toHaveLength(1);
  });

  it("refuses a wrong password (the cluster is not open to anyone on the machine)", async () => {
    const wrong = new URL(url);
    wrong.password = "not-the-password";
    const client = new pg.Client({ connectionString: wrong.toString() });
    await expect(client.connect()).rejects.toThrow(/password authentication failed/);
  });
});
