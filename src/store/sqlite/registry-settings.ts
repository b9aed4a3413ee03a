/**
 * Registry settings (v1 RegistrySettings): an organization's registry defaults, one row per
 * group that has changed them in `registry_settings`; a group without a row has the
 * defaults (both false). No proto types here.
 */
import { eq } from "drizzle-orm";
import type { Db } from "./db.js";
import { groupCommit } from "./group-commit.js";
import { requireGroup } from "./references.js";
import { registrySettings } from "./schema.js";
import { DEFAULT_REGISTRY_SETTINGS, type RegistrySettingsRepository } from "../registry-settings.js";

export function createRegistrySettingsRepository(db: Db): RegistrySettingsRepository {
  return {
    async get(groupUid) {
      requireGroup(db, groupUid);
      const row = db.select().from(registrySettings).where(eq(registrySettings.groupUid, groupUid)).get();
      return row ? { uniqueTags: row.uniqueTags, eolGracePeriod: row.eolGracePeriod } : DEFAULT_REGISTRY_SETTINGS;
    },

    async put(groupUid, settings, now) {
      return groupCommit(db, (tx) => {
        requireGroup(tx, groupUid);
        const values = { uniqueTags: settings.uniqueTags, eolGracePeriod: settings.eolGracePeriod };
        tx.insert(registrySettings)
          .values({ groupUid, ...values, updateTime: now })
          .onConflictDoUpdate({ target: registrySettings.groupUid, set: { ...values, updateTime: now } })
          .run();
        return values;
      });
    },
  };
}
