/**
 * ServiceContext: everything a service implementation may use, built once at start-up by
 * src/server/create-app.ts (tests build it with their own database and clock).
 */
import type { PageTokenCodec } from "../pagination/page-token.js";
import type { GroupsRepository } from "../store/groups.js";

export interface ServiceContext {
  /** Current time in ms since the epoch (injectable for tests). */
  readonly now: () => number;
  readonly store: {
    readonly groups: GroupsRepository;
  };
  readonly pageTokens: PageTokenCodec;
}
