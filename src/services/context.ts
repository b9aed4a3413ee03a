/**
 * ServiceContext: everything a service implementation may use, built once at start-up by
 * src/server/create-app.ts through `createServiceContext` from the opened store engine (tests
 * build it with their own store and clock; the benchmark's grpc-js peer in bench/ builds it the same way).
 */
import { loadOrCreatePageKeys, PAGE_KEYS_NAME, parsePageKeyRing } from "../pagination/page-keys.js";
import { createPageTokenCodec, type PageTokenCodec } from "../pagination/page-token.js";
import type { StoreEngine, StoreRepositories } from "../store/engine.js";

export interface ServiceContext {
  /** Current time in ms since the epoch (injectable for tests). */
  readonly now: () => number;
  readonly store: StoreRepositories;
  readonly pageTokens: PageTokenCodec;
}

/** The store's repositories and the page-token codec keyed by the database's own secret. */
export async function createServiceContext(store: StoreEngine, now: () => number): Promise<ServiceContext> {
  // Read through the shared-values watcher: a rotation by `trellis keys rotate` (another
  // process) seals new tokens with the new key from the next List on, without a restart.
  const firstPageKeys = await loadOrCreatePageKeys(store.serverValues, now());
  const watchedPageKeys = store.serverValues.watch([PAGE_KEYS_NAME], ([value]) => parsePageKeyRing(value));
  return {
    now,
    store: store.repositories,
    pageTokens: createPageTokenCodec(() => watchedPageKeys() ?? firstPageKeys),
  };
}
