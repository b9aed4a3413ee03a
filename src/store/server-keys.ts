/**
 * Server secrets kept in the database so they survive restarts and are shared by every
 * process on the same database (the page-token key, the token-signing keys, the issuer settings).
 */
import { randomBytes } from "node:crypto";
import { eq } from "drizzle-orm";
import { type Db, writeTransaction } from "./db.js";
import { serverKeys } from "./schema.js";

/** Returns the secret called `name`, creating `size` random bytes the first time. */
export function getOrCreateSecret(db: Db, name: string, size: number): Buffer {
  return writeTransaction(db, (tx) => {
    const row = tx.select().from(serverKeys).where(eq(serverKeys.name, name)).get();
    if (row) return row.value;
    const value = randomBytes(size);
    tx.insert(serverKeys).values({ name, value, createTime: Date.now() }).run();
    return value;
  });
}

/** The value stored under `name`, or undefined. */
export function readServerValue(db: Db, name: string): Buffer | undefined {
  return db.select().from(serverKeys).where(eq(serverKeys.name, name)).get()?.value;
}

/**
 * Read-modify-write of the value under `name` in one BEGIN IMMEDIATE transaction (two
 * processes starting at once agree on one result). `update` gets the current value (or
 * undefined) and returns the value to store, or undefined to leave it as it is; `update`
 * must be synchronous. Returns the stored value.
 */
export function updateServerValue(
  db: Db,
  name: string,
  now: number,
  update: (current: Buffer | undefined) => Buffer | undefined,
): Buffer | undefined {
  return writeTransaction(db, (tx) => {
    const current = readServerValue(tx, name);
    const next = update(current);
    if (next === undefined) return current;
    if (current === undefined) tx.insert(serverKeys).values({ name, value: next, createTime: now }).run();
    else tx.update(serverKeys).set({ value: next }).where(eq(serverKeys.name, name)).run();
    return next;
  });
}
