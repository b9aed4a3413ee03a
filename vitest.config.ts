import { configDefaults, defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    // Servers start on port 0 with a fresh data dir per file; keep files parallel but bounded
    // for the 2-core CI machine.
    maxWorkers: 2,
    testTimeout: 20_000,
    hookTimeout: 30_000,
    passWithNoTests: false,
    // Two projects so that the PostgreSQL cluster (a few seconds of a shared 2-core machine)
    // is started only when a file of test/postgres is in the run: vitest runs a project's
    // globalSetup only when that project has files to run.
    projects: [
      {
        extends: true,
        test: { name: "sqlite", include: ["test/**/*.test.ts"], exclude: [...configDefaults.exclude, "test/postgres/**"] },
      },
      {
        extends: true,
        test: { name: "postgres", include: ["test/postgres/**/*.test.ts"], globalSetup: ["test/support/postgres-cluster.ts"] },
      },
    ],
  },
});
