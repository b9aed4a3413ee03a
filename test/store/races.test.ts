/**
 * Check-then-act races through the API. "Delete group G" and "create a
 * folder in G" sent together must never both succeed, and never leave an orphan: the
 * emptiness check and the delete run in one BEGIN IMMEDIATE transaction, with ON DELETE
 * RESTRICT foreign keys as the backstop.
 */
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "../support/app.js";
import { rest } from "../support/rest.js";

const ITERATIONS = 60;

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t.close());

describe("check-then-act races", () => {
  it("delete-group against create-child: never both, never an orphan", async () => {
    const org = (await rest(t.url, "POST", "/iam/v2beta1/groups", { name: "race root" })).body.uid as string;
    let deletedFirst = 0;
    let createdFirst = 0;
    for (let i = 0; i < ITERATIONS; i++) {
      const g = (await rest(t.url, "POST", `/iam/v2beta1/groups/${org}`, { name: `target ${i}` })).body.uid as string;
      // Alternate which request is sent first so both interleavings occur.
      const calls = [() => rest(t.url, "DELETE", `/iam/v2beta1/groups/${g}`), () => rest(t.url, "POST", `/iam/v2beta1/groups/${g}`, { name: "child" })];
      if (i % 2 === 1) calls.reverse();
      const [a, b] = await Promise.all(calls.map((c) => c()));
      const [del, create] = i % 2 === 1 ? [b, a] : [a, b];
      expect(del.status === 200 && create.status === 200, `iteration ${i}: both succeeded`).toBe(false);
      if (del.status === 200) {
        deletedFirst++;
        expect(create.status).toBe(404); // the parent is gone
      } else {
        createdFirst++;
        expect(create.status).toBe(200);
        expect(del.body.details[0].reason).toBe("FAILED_PRECONDITION");
      }
    }
    expect(deletedFirst + createdFirst).toBe(ITERATIONS);
    const db = new Database(t.dbFile, { readonly: true });
    try {
      expect(db.pragma("foreign_key_check")).toEqual([]);
      const orphans = db
        .prepare("SELECT uid FROM groups g WHERE parent_uid IS NOT NULL AND NOT EXISTS (SELECT 1 FROM groups p WHERE p.uid = g.parent_uid)")
        .all();
      expect(orphans).toEqual([]);
    } finally {
      db.close();
    }
  });
});
