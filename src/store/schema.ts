/**
 * Drizzle schema: the only description of the tables. `npm run db:generate` turns changes
 * into a committed SQL migration under src/store/migrations, applied at start-up.
 *
 * Conventions (kept portable for the PostgreSQL path in ../shared/reliability.md §6):
 * - uids are UIDP text; a row's ancestry is its uid prefix, so "descendants of P" is the key
 *   range `uid > 'P/' AND uid < 'P0'` ('/' is 0x2F, '0' is 0x30): index-friendly, no LIKE.
 * - timestamps are integer milliseconds since the epoch (UTC).
 * - parent references use ON DELETE RESTRICT as the backstop behind the explicit
 *   "not empty" checks, which run in the same BEGIN IMMEDIATE transaction as the delete.
 * - every list order has an index ending in uid, the unique tie-breaker of keyset paging.
 */
import { sql } from "drizzle-orm";
import { type AnySQLiteColumn, blob, index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

/** The group tree. A root (organization) has no parent. */
export const groups = sqliteTable(
  "groups",
  {
    uid: text("uid").primaryKey(),
    parentUid: text("parent_uid").references((): AnySQLiteColumn => groups.uid, { onDelete: "restrict" }),
    name: text("name").notNull(),
    description: text("description").notNull().default(""),
    verified: integer("verified", { mode: "boolean" }).notNull().default(false),
    /** OrgKind number; only meaningful on roots (children report their root's). */
    kind: integer("kind").notNull().default(0),
    createTime: integer("create_time").notNull(),
    updateTime: integer("update_time").notNull(),
  },
  (t) => [
    index("groups_parent_uid_idx").on(t.parentUid, t.uid),
    index("groups_name_uid_idx").on(t.name, t.uid),
    index("groups_create_time_uid_idx").on(t.createTime, t.uid),
    index("groups_update_time_uid_idx").on(t.updateTime, t.uid),
  ],
);

/**
 * Server secrets that must survive restarts and be shared by every process using this
 * database (page-token key now; token-signing keys later).
 */
export const serverKeys = sqliteTable("server_keys", {
  name: text("name").primaryKey(),
  value: blob("value", { mode: "buffer" }).notNull(),
  createTime: integer("create_time")
    .notNull()
    .default(sql`(unixepoch() * 1000)`),
});

export type GroupRow = typeof groups.$inferSelect;
