/**
 * How an account association is laid out in a row, the same on every engine: the provider
 * blocks as one JSON document in our own shape (`AccountProviders`), the uid its group's.
 */
import { alreadyExists, type ApiError } from "../errors/api-error.js";
import type { AccountAssociationChanges, AccountAssociationRecord, AccountProviders, NewAccountAssociation } from "./account-associations.js";

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

/** The row of a new association: its uid is its group's. */
export function newAccountAssociationRow(association: NewAccountAssociation, now: number): StoredAccountAssociationRow {
  return {
    uid: association.groupUid,
    name: association.name,
    description: association.description,
    providers: JSON.stringify(association.providers),
    createTime: now,
    updateTime: now,
  };
}

/** ALREADY_EXISTS: a group has one association at most (the uid is the group's). */
export function accountAssociationExists(groupUid: string): ApiError {
  return alreadyExists("account association", groupUid, `group ${groupUid} already has an account association`);
}

/** The columns an update writes: the changed fields, the providers as their JSON document, and update_time. */
export function accountAssociationUpdate(changes: AccountAssociationChanges, now: number): Partial<Omit<StoredAccountAssociationRow, "uid" | "createTime">> {
  const { providers, ...own } = changes;
  const set: { -readonly [K in keyof StoredAccountAssociationRow]?: StoredAccountAssociationRow[K] } = { ...own, updateTime: now };
  if (providers !== undefined) set.providers = JSON.stringify(providers);
  return set;
}
