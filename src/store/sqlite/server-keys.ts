/**
 * Server secrets kept in the database so they survive restarts and are shared by every
 * process on the same database (the page-token key, the token-signing keys, the issuer settings).
 */
import { eq } from "drizzle-orm";
import type { ServerValues, ServerValuesChange } from "../engine.js";
import { type Db, writeTransaction } from "./db.js";
import { sharedValuesFor } from "./shared-values.js";
import { serverKeys } from "./schema.js";

/** The value stored under `name`, or undefined. */
export function readServerValue(db: Db, name: string): Buffer | undefined {
  return db.select().from(serverKeys).where(eq(serverKeys.name, name)).get()?.value;
}

/**
 * The engine's ServerValues over `db`. `update` runs its change inside BEGIN IMMEDIATE
 * (writeTransaction): the start-up writes and the operator tools use it, never a request, so
 * SQLite's own busy wait is acceptable here.
 */
export function createServerValues(db: Db): ServerValues {
  return {
    async read(name) {
      return readServerValue(db, name);
    },
    async update(names, now, change: ServerValuesChange) {
      return writeTransaction(db, (tx) => {
        const rows = names.map((name) => tx.select().from(serverKeys).where(eq(serverKeys.name, name)).get());
        const next = change(
          rows.map((r) => r?.value),
          rows.map((r) => r?.createTime),
        );
        if (next === undefined) return rows.map((r) => r?.value);
        return names.map((name, i) => {
          const value = next[i];
          const row = rows[i];
          if (value === undefined) return row?.value;
          if (value === null) {
            if (row) tx.delete(serverKeys).where(eq(serverKeys.name, name)).run();
            return undefined;
          }
          if (row === undefined) tx.insert(serverKeys).values({ name, value, createTime: now }).run();
          else tx.update(serverKeys).set({ value }).where(eq(serverKeys.name, name)).run();
          return value;
        });
      });
    },
    watch(names, parse) {
      return sharedValuesFor(db).watch(names, parse);
    },
  };
}
