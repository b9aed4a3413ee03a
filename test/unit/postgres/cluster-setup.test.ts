/**
 * The PostgreSQL tests' global setup (test/support/postgres-cluster.ts) where the server
 * binaries are missing: under CI=true it fails the run saying what to install (a CI that
 * skipped the PostgreSQL tests would pass having proven nothing); elsewhere it lets the files
 * be reported as skipped. The binaries are made "missing" with PG_BIN pointing at an empty
 * directory, which also keeps the setup from installing anything.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, expect, it, vi } from "vitest";
import type { TestProject } from "vitest/node";
import setup from "../../support/postgres-cluster.js";

let empty: string;
beforeEach(() => {
  empty = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-no-pg-"));
  vi.stubEnv("PG_BIN", empty);
});
afterEach(() => {
  vi.unstubAllEnvs();
  fs.rmSync(empty, { recursive: true, force: true });
});

function fakeProject(): { project: TestProject; provided: Record<string, unknown> } {
  const provided: Record<string, unknown> = {};
  return { project: { provide: (key: string, value: unknown) => (provided[key] = value) } as unknown as TestProject, provided };
}

it("fails the run under CI=true when the PostgreSQL binaries are missing, naming what to install", async () => {
  vi.stubEnv("CI", "true");
  const { project, provided } = fakeProject();
  await expect(setup(project)).rejects.toThrow(/PostgreSQL server binaries .*apt-get install postgresql/);
  expect(provided).toEqual({});
});

it("outside CI, provides no cluster (the files report their tests as skipped) and says why", async () => {
  vi.stubEnv("CI", "");
  const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
  const { project, provided } = fakeProject();
  try {
    await expect(setup(project)).resolves.toBeUndefined();
    expect(provided).toEqual({ postgresUrl: null, postgresTemplate: null });
    expect(warn).toHaveBeenCalledWith(expect.stringMatching(/^postgres tests skipped: PostgreSQL server binaries are not installed/));
  } finally {
    warn.mockRestore();
  }
});
