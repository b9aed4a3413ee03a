/**
 * Reading the server's database from a test through a separate read-only connection, to
 * prove that a rejected request left every table exactly as it was.
 */
import { createHash } from "node:crypto";
import Database from "better-sqlite3";

/** A digest of every row of every table (migration bookkeeping excluded). */
export function snapshotDb(file: string): string {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const tables = db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '__drizzle%' ORDER BY name")
      .all() as { name: string }[];
    const hash = createHash("sha256");
    for (const { name } of tables) {
      hash.update(`#${name}\n`);
      for (const row of db.prepare(`SELECT * FROM "${name}" ORDER BY rowid`).iterate()) {
        hash.update(JSON.stringify(row, (_k, v) => (Buffer.isBuffer(v) ? v.toString("hex") : v)));
      }
    }
    return hash.digest("hex");
  } finally {
    db.close();
  }
}

/** Runs `fn` and asserts it failed and left the database unchanged; returns the error. */
export async function expectRejectedAndUnchanged(file: string, fn: () => Promise<unknown>): Promise<unknown> {
  const before = snapshotDb(file);
  let error: unknown;
  try {
    await fn();
  } catch (err) {
    error = err;
  }
  if (error === undefined) throw new Error("expected the call to fail, but it succeeded");
  const after = snapshotDb(file);
  if (before !== after) throw new Error("a rejected call changed the database");
  return error;
}
