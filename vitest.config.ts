import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Servers start on port 0 with a fresh data dir per file; keep files parallel but bounded
    // for the 2-core CI machine.
    maxWorkers: 2,
    testTimeout: 20_000,
    hookTimeout: 30_000,
    passWithNoTests: false,
  },
});
