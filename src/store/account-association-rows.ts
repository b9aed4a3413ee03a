/**
 * How an account association is laid out in a row, the same on every engine: the provider
 * blocks as one JSON document in our own shape (`AccountProviders`), the uid its group's.
 */
import type { AccountAssociationRecord, AccountProviders } from "./account-associations.js";

/** An account-association row as every engine's table returns it. */
export interface StoredAccountAssociationRow {
  readonly uid: string;
  readonly name: string;
  readonly description: string;
  readonly providers: string;
  readonly createTime: number;
  readonly updateTime: number;
}

export function accountAssociationRecordOf(row: StoredAccountAssociationRow): AccountAssociationRecord {
  return {
    uid: row.uid,
    name: row.name,
    description: row.description,
    providers: JSON.parse(row.providers) as AccountProviders,
    createTime: row.createTime,
    updateTime: row.updateTime,
  };
}
