/**
 * GroupInvites repository. STUB: filled in by the issue-4 work (see src/store/groups.ts for the
 * pattern: async functions, one BEGIN IMMEDIATE transaction per multi-row invariant,
 * ApiErrors, no proto types).
 */
import type { Db } from "./db.js";

// biome-ignore lint/suspicious/noEmptyInterface: filled in by the issue-4 work
export interface GroupInvitesRepository {}

export function createGroupInvitesRepository(_db: Db): GroupInvitesRepository {
  return {};
}
