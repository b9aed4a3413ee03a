/**
 * The operator's side of keys and revocations, done on the data directory rather than through
 * the API (`trellis keys rotate|list`, `trellis tokens revoke --local`): like `trellis auth
 * token --local`, only someone who can open the database file can do it, which is the same
 * trust as holding the data.
 *
 * It writes beside a running server the way `trellis import` does: its own connection, no
 * data-directory lock (the store opened "beside" the server), each change one write that
 * waits at most TOOL_LOCK_WAIT_MS for the server's write lock and then fails with a message
 * instead of waiting forever. The
 * running server sees the change on its next call (src/store/sqlite/shared-values.ts).
 */
import { describePageKeys, PAGE_KEYS_NAME, rotatePageKey, type PageKeyInfo } from "../pagination/page-keys.js";
import type { StoreEngine } from "../store/engine.js";
import { openStore, storeExists, storeFlag, storeLocation, type StoreTarget, TOOL_LOCK_WAIT_MS } from "../store/open.js";
import { storageFailureOf } from "../errors/storage-error.js";
import type { Revocation } from "../store/token-revocations.js";
import { loadSigningKeys, rotateSigningKey, SIGNING_KEYS_NAME } from "./signing-keys.js";
import { REVOCATION_RETENTION_MS } from "./token-lifetime.js";

/** One key as `trellis keys list` shows it. */
export interface KeyInfo {
  /** What the key is for: signing API tokens, or sealing page tokens. */
  readonly use: "token-signing" | "page-token";
  /** The signing key's `kid` (as in the JWKS); a page key's public id (a hash prefix). */
  readonly id: string;
  readonly createTime: number;
  /** active: signs/seals new tokens; retiring: still verifies/opens old ones; retired: no longer used, removed at the next rotation. */
  readonly status: "active" | "retiring" | "retired";
  /** When it stops (or stopped) verifying or opening tokens; absent on active keys. */
  readonly retireTime?: number;
}

export type RotateWhich = "all" | "signing" | "page-tokens";

export interface RotateOptions {
  readonly which?: RotateWhich;
  /** Drop every older key at once (a leaked key): tokens it signed fail from the next call. */
  readonly dropPrevious?: boolean;
}

/** Opens the store for a short operator write; `fn` runs with it. */
async function withStore<T>(target: StoreTarget, fn: (store: StoreEngine) => Promise<T>): Promise<T> {
  if (!storeExists(target)) throw new Error(`no Trellis database at ${storeLocation(target)}; start the server once with ${storeFlag(target)}`);
  let store: StoreEngine;
  try {
    store = await openStore({ ...target, access: "beside" });
  } catch (err) {
    throw busyOr(err, target);
  }
  try {
    if ((await store.serverValues.read(SIGNING_KEYS_NAME)) === undefined) {
      throw new Error(`the server has not started on ${storeLocation(target)} yet, so there are no keys; start it once`);
    }
    return await fn(store);
  } catch (err) {
    throw busyOr(err, target);
  } finally {
    await store.close();
  }
}

function busyOr(err: unknown, target: StoreTarget): unknown {
  if (storageFailureOf(err) === "busy") {
    return new Error(
      `cannot take the write lock on the database at ${storeLocation(target)}: another process is writing to it (still busy after ${TOOL_LOCK_WAIT_MS} ms). Nothing was changed; try again.`,
    );
  }
  return err;
}

async function describeAll(store: StoreEngine, now: number): Promise<KeyInfo[]> {
  const status = (retireTime: number | undefined) => (retireTime === undefined ? "active" : retireTime > now ? "retiring" : "retired");
  const signing = ((await loadSigningKeys(store.serverValues))?.all ?? []).map(
    (k): KeyInfo => ({
      use: "token-signing",
      id: k.kid,
      createTime: k.createTime,
      status: status(k.retireTime),
      ...(k.retireTime === undefined ? {} : { retireTime: k.retireTime }),
    }),
  );
  const page = ((await store.serverValues.read(PAGE_KEYS_NAME)) === undefined ? [] : await describePageKeys(store.serverValues)).map(
    (k: PageKeyInfo): KeyInfo => ({
      use: "page-token",
      id: k.id,
      createTime: k.createTime,
      status: status(k.retireTime),
      ...(k.retireTime === undefined ? {} : { retireTime: k.retireTime }),
    }),
  );
  return [...signing, ...page];
}

/** The keys of the store, newest first per use. */
export function listKeys(target: StoreTarget, now: number = Date.now()): Promise<KeyInfo[]> {
  return withStore(target, (store) => describeAll(store, now));
}

/** Rotates the signing key and/or the page-token key; returns the keys afterwards. */
export function rotateKeys(target: StoreTarget, options: RotateOptions = {}, now: number = Date.now()): Promise<KeyInfo[]> {
  const which = options.which ?? "all";
  return withStore(target, async (store) => {
    if (which !== "page-tokens") await rotateSigningKey(store.serverValues, now, options.dropPrevious ? 0 : undefined);
    if (which !== "signing") await rotatePageKey(store.serverValues, now, options.dropPrevious ? 0 : undefined);
    return describeAll(store, now);
  });
}

/** Records a revocation straight in the database (the operator's path when the API is not at hand). */
export function revokeLocally(target: StoreTarget, revocation: Revocation, now: number = Date.now()): Promise<void> {
  return withStore(target, (store) => store.repositories.tokenRevocations.revoke(revocation, now, REVOCATION_RETENTION_MS));
}
