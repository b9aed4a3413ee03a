/**
 * Roles repository. STUB: filled in by the issue-4 work (see src/store/groups.ts for the
 * pattern: async functions, one BEGIN IMMEDIATE transaction per multi-row invariant,
 * ApiErrors, no proto types).
 */
import type { Db } from "./db.js";

// biome-ignore lint/suspicious/noEmptyInterface: filled in by the issue-4 work
export interface RolesRepository {}

export function createRolesRepository(_db: Db): RolesRepository {
  return {};
}

/**
 * Creates or refreshes the built-in roles (root-level, deterministic uids) so they exist in
 * every database from the first start. STUB until the issue-4 work.
 */
export async function ensureBuiltInRoles(_db: Db, _now: number): Promise<void> {}
