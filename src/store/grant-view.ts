/**
 * grant-view: the records, filters, orders and repository interface every engine shares (the SQLite
 * implementation is src/store/sqlite/grant-view.ts).
 */
import type { Grant } from "./role-bindings.js";

/** Synchronous reads for a guard running inside a write transaction. */
export interface GrantView {
  /** Each binding of the identity: its group and the bound role's capabilities. */
  grantsOf(identityUid: string): Grant[];
  /** A role's capability numbers, or undefined when it does not exist. */
  roleCapabilities(roleUid: string): readonly number[] | undefined;
  /** The groups where a role is bound (each once). */
  groupsBinding(roleUid: string): string[];
}
