/**
 * The page-token keys (AES-256-GCM, page-token.ts), rotated like the signing keys: stored in
 * server_keys row `page_token_keys` as `{"keys":[{"id","key","createTime"}...]}`; the newest
 * key seals new tokens, every stored key opens old ones. A key stops sealing when its
 * successor is created and is dropped by the first rotation PAGE_KEY_RETENTION_MS after
 * that: a page token lives three days, so one sealed by the old key has expired by then (it
 * would restart the List from the first page anyway).
 *
 * Databases made before rotation existed hold one raw key under `page_token_key`; the first
 * load moves it into the list (same transaction, the old row deleted), so tokens issued
 * before the upgrade stay readable.
 */
import { createHash, randomBytes } from "node:crypto";
import type { ServerValues } from "../store/engine.js";
import { PAGE_TOKEN_LIFETIME_MS } from "./page-token.js";

export const PAGE_KEYS_NAME = "page_token_keys";
const LEGACY_KEY_NAME = "page_token_key";

/** A page token's lifetime plus the minute of clock skew `decode` allows on `issuedAt`. */
export const PAGE_KEY_RETENTION_MS = PAGE_TOKEN_LIFETIME_MS + 60_000;

interface StoredPageKey {
  /** A short public name (hash prefix), for `trellis keys list`; never the key. */
  readonly id: string;
  /** 32 bytes, base64url. */
  readonly key: string;
  readonly createTime: number;
}

/** The keys as the codec uses them: `active` seals, each of `all` (newest first) opens. */
export interface PageKeyRing {
  readonly active: Uint8Array;
  readonly all: readonly Uint8Array[];
}

/** A key as `trellis keys list` shows it. */
export interface PageKeyInfo {
  readonly id: string;
  readonly createTime: number;
  /** When its tokens have all expired (ms); absent on the active key. */
  readonly retireTime?: number;
}

function parse(value: Buffer | undefined): StoredPageKey[] {
  if (value === undefined) return [];
  return [...((JSON.parse(value.toString("utf8")) as { keys?: StoredPageKey[] }).keys ?? [])].sort((a, b) => b.createTime - a.createTime);
}

function stored(key: Buffer, createTime: number): StoredPageKey {
  return { id: createHash("sha256").update(key).digest("hex").slice(0, 16), key: key.toString("base64url"), createTime };
}

/** The ring for the codec; undefined when there is no key yet. */
export function parsePageKeyRing(value: Buffer | undefined): PageKeyRing | undefined {
  const keys = parse(value);
  if (keys.length === 0) return undefined;
  const all = keys.map((k) => new Uint8Array(Buffer.from(k.key, "base64url")));
  return { active: all[0] as Uint8Array, all };
}

/** The keys with their status, newest first. */
export async function describePageKeys(values: ServerValues): Promise<PageKeyInfo[]> {
  const keys = parse(await values.read(PAGE_KEYS_NAME));
  return keys.map((k, i) => {
    const successor = keys[i - 1];
    return successor === undefined
      ? { id: k.id, createTime: k.createTime }
      : { id: k.id, createTime: k.createTime, retireTime: successor.createTime + PAGE_KEY_RETENTION_MS };
  });
}

function serialize(keys: readonly StoredPageKey[]): Buffer {
  return Buffer.from(JSON.stringify({ keys }), "utf8");
}

/** The stored ring, creating the first key (or adopting the pre-rotation one) in one transaction. */
export async function loadOrCreatePageKeys(values: ServerValues, now: number): Promise<PageKeyRing> {
  const [current] = await values.update([PAGE_KEYS_NAME, LEGACY_KEY_NAME], now, ([current, legacy], [, legacyCreateTime]) => {
    if (parse(current).length > 0) return undefined;
    const first = legacy ? stored(legacy, legacyCreateTime ?? now) : stored(randomBytes(32), now);
    return [serialize([first]), legacy ? null : undefined];
  });
  return parsePageKeyRing(current) as PageKeyRing;
}

/**
 * Adds a new page-token key (it seals from now on) and drops keys whose successor was made
 * more than `retainMs` ago. @returns the keys after the rotation, newest first.
 */
export async function rotatePageKey(values: ServerValues, now: number, retainMs: number = PAGE_KEY_RETENTION_MS): Promise<PageKeyInfo[]> {
  await loadOrCreatePageKeys(values, now);
  await values.update([PAGE_KEYS_NAME], now, ([current]) => {
    const keys = [stored(randomBytes(32), now), ...parse(current)];
    const kept = keys.filter((_k, i) => {
      const successor = keys[i - 1];
      return successor === undefined || now - successor.createTime < retainMs;
    });
    return [serialize(kept)];
  });
  return describePageKeys(values);
}
