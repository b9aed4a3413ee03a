/**
 * Server secrets kept in the database so they survive restarts and are shared by every
 * process on the same database (page-token key now, token-signing keys later).
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
