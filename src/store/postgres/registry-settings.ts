/**
 * Registry settings on PostgreSQL: the RegistrySettingsRepository contract
 * (src/store/registry-settings.ts), as SQLite's (src/store/sqlite/registry-settings.ts): one row
 * per group that changed its defaults. put locks the group FOR SHARE (iam-locks.ts: no settings
 * for a group being deleted; its delete takes them along by cascade) and writes with
 * INSERT … ON CONFLICT DO UPDATE, so two replicas writing one group's settings at once end with
 * one row, the last writer's.
 */
import { eq } from "drizzle-orm";
import { notFound } from "../../errors/api-error.js";
import { textEquals } from "../list-predicates.js";
import { DEFAULT_REGISTRY_SETTINGS, type RegistrySettingsRepository } from "../registry-settings.js";
import type { PgDb } from "./connection.js";
import { lockParentGroup } from "./iam-locks.js";
import { groups, registrySettings } from "./schema.js";
import { readSnapshot, writeTransaction } from "./transaction.js";

export function createPostgresRegistrySettingsRepository(db: PgDb): RegistrySettingsRepository {
  return {
    async get(groupUid) {
      return readSnapshot(db, async (tx) => {
        const [group] = await tx.select({ uid: groups.uid }).from(groups).where(textEquals(groups.uid, groupUid));
        if (!group) throw notFound("group", groupUid);
        const [row] = await tx.select().from(registrySettings).where(eq(registrySettings.groupUid, groupUid));
        return row ? { uniqueTags: row.uniqueTags, eolGracePeriod: row.eolGracePeriod } : DEFAULT_REGISTRY_SETTINGS;
      });
    },

    async put(groupUid, settings, now) {
      return writeTransaction(db, async (tx) => {
        await lockParentGroup(tx, groupUid);
        const values = { uniqueTags: settings.uniqueTags, eolGracePeriod: settings.eolGracePeriod };
        await tx
          .insert(registrySettings)
          .values({ groupUid, ...values, updateTime: now })
          .onConflictDoUpdate({ target: registrySettings.groupUid, set: { ...values, updateTime: now } });
        return values;
      });
    },
  };
}
