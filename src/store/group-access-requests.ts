/**
 * group-access-requests: the records, filters, orders and repository interface every engine shares (the SQLite
 * implementation is src/store/sqlite/group-access-requests.ts).
 */

export interface GroupAccessRequestsRepository {
  /**
   * Records the request. The caller resolved group and identity already; both are checked
   * again inside the transaction, so one deleted meanwhile (by another process on the
   * database) is NOT_FOUND rather than a foreign-key failure (INTERNAL).
   * @throws NOT_FOUND; RESOURCE_EXHAUSTED when it was recorded before.
   */
  record(groupUid: string, identityUid: string, now: number): Promise<void>;
  /** Whether the identity has asked to join the group. */
  has(groupUid: string, identityUid: string): Promise<boolean>;
}
