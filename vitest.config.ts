import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    // Servers start on port 0 with a fresh data dir per file; keep files parallel but bounded
    // for the 2-core CI machine.
    maxWorkers: 2,
    testTimeout: 20_000,
    hookTimeout: 30_000,
    passWithNoTests: false,
    projects: [
      // Everything, with the fast unary doors on (the server's default).
      { extends: true, test: { name: "all", include: ["test/**/*.test.ts"] } },
      // The RPC matrix again with the fast unary doors off, so every call goes through
      // connect-node: what the matrix proves holds on both paths (test/support/app.ts).
      {
        extends: true,
        test: { name: "rpc-fast-path-off", include: ["test/rpc/**/*.test.ts"], env: { TRELLIS_TEST_FAST_UNARY: "off" } },
      },
    ],
  },
});
