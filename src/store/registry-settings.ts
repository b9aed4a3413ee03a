/**
 * registry-settings: the records, filters, orders and repository interface every engine shares (the SQLite
 * implementation is src/store/sqlite/registry-settings.ts).
 */

export interface RegistrySettingsRecord {
  readonly uniqueTags: boolean;
  readonly eolGracePeriod: boolean;
}

export const DEFAULT_REGISTRY_SETTINGS: RegistrySettingsRecord = { uniqueTags: false, eolGracePeriod: false };

export interface RegistrySettingsRepository {
  /** @throws NOT_FOUND (group). */
  get(groupUid: string): Promise<RegistrySettingsRecord>;
  /** Replaces the group's settings. @throws NOT_FOUND (group). */
  put(groupUid: string, settings: RegistrySettingsRecord, now: number): Promise<RegistrySettingsRecord>;
}
