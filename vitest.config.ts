import { configDefaults, defineConfig } from "vitest/config";

/**
 * The files the `on-postgres` project runs (each also runs on SQLite in `all`): the repository
 * suites, and the whole protocol matrix (every door, the auth suites, the CLI), whose test
 * servers then store in PostgreSQL (test/support/app.ts). Tests about SQLite itself stay in
 * these files, skipped in this project under a title that says why (test/cli/backup.test.ts).
 */
const POSTGRES_MATRIX = [
  "test/store/account-associations.test.ts",
  "test/store/advisories.test.ts",
  "test/store/group-invites.test.ts",
  "test/store/groups-list.test.ts",
  "test/store/iam-records.test.ts",
  "test/store/identities.test.ts",
  "test/store/list-statements.property.test.ts",
  "test/store/registry-lists.test.ts",
  "test/store/registry.test.ts",
  "test/store/role-bindings.test.ts",
  "test/store/roles.test.ts",
  "test/rpc/**/*.test.ts",
  "test/rest/**/*.test.ts",
  "test/auth/**/*.test.ts",
  "test/cli/**/*.test.ts",
  "test/observe/observability.test.ts",
  "test/observe/tracing.test.ts",
];

export default defineConfig({
  test: {
    // Servers start on port 0 with a fresh data dir per file; keep files parallel but bounded
    // for the 2-core CI machine.
    maxWorkers: 2,
    testTimeout: 20_000,
    hookTimeout: 30_000,
    passWithNoTests: false,
    // Three projects: everything on SQLite with the fast unary doors on (the server's
    // default); the RPC matrix again with them off, so every call goes through connect-node
    // and what the matrix proves holds on both paths (test/support/app.ts); and the
    // PostgreSQL files, apart so that their throwaway cluster (a few seconds of a shared
    // 2-core machine) starts only when one of them is in the run: vitest runs a project's
    // globalSetup only when that project has files to run.
    projects: [
      {
        extends: true,
        test: { name: "all", include: ["test/**/*.test.ts"], exclude: [...configDefaults.exclude, "test/postgres/**"] },
      },
      {
        extends: true,
        test: { name: "rpc-fast-path-off", include: ["test/rpc/**/*.test.ts"], env: { TRELLIS_TEST_FAST_UNARY: "off" } },
      },
      {
        extends: true,
        test: { name: "postgres", include: ["test/postgres/**/*.test.ts"], globalSetup: ["test/support/postgres-cluster.ts"] },
      },
      // The suites that hold every engine to one behaviour, run again on PostgreSQL
      // (POSTGRES_MATRIX; test/support/engines.ts and app.ts pick the engine from TRELLIS_TEST_ENGINE).
      {
        extends: true,
        test: {
          name: "on-postgres",
          include: POSTGRES_MATRIX,
          env: { TRELLIS_TEST_ENGINE: "postgres" },
          globalSetup: ["test/support/postgres-cluster.ts"],
        },
      },
    ],
  },
});
