/**
 * Page tokens: opaque, tamper-proof, bound to their query, expiring after 3 days (docs/published-api.md "Lists").
 *
 * A token is AES-256-GCM authenticated encryption (node:crypto) of a small JSON state, so it
 * is both unreadable (AIP-158: base64 is not obfuscation) and unforgeable: any change to a
 * byte fails the GCM tag. The keys live in the database (server_keys, page-keys.ts), so
 * tokens survive a restart and work across processes sharing the database; after a rotation
 * the newest key seals and every kept key still opens, so a List being paged through when
 * the key changes carries on.
 *
 * Layout: base64url( version:1 | iv:12 | ciphertext | tag:16 ).
 */
import { createCipheriv, createDecipheriv, randomFillSync } from "node:crypto";

/** What a token remembers between pages. */
export interface PageState {
  /** Fingerprint of the filters and order of the query (hex). */
  readonly fingerprint: string;
  /** Cursor: order value and uid of the last row returned. */
  readonly after: { readonly value: string | number; readonly uid: string };
  /** Results skipped so far in this chain. */
  readonly skipped: number;
  /** The `skip` value of the request that issued this token (see page.ts). */
  readonly lastSkip: number;
  /** total_count computed on the first page of the chain. */
  readonly total: number;
  /** Issue time, ms since the epoch. */
  readonly issuedAt: number;
}

export type DecodedToken = { readonly kind: "ok"; readonly state: PageState } | { readonly kind: "invalid" } | { readonly kind: "expired" };

/** Tokens older than this restart the query from the first page without an error. */
export const PAGE_TOKEN_LIFETIME_MS = 3 * 24 * 60 * 60 * 1000;

const VERSION = 1;
const VERSION_BYTE = Buffer.from([VERSION]);

/**
 * Random 96-bit GCM IVs, drawn from the CSPRNG 1 024 at a time: one randomBytes call per
 * token was a large share of encoding one (docs/performance.md), and every List page encodes
 * one. Each IV is still fresh random bytes, used once.
 */
const IV_POOL = Buffer.alloc(12 * 1024);
let ivOffset = IV_POOL.length;
function nextIv(): Buffer {
  if (ivOffset === IV_POOL.length) {
    randomFillSync(IV_POOL);
    ivOffset = 0;
  }
  // A copy: the pool is refilled in place later, and the IV is part of the token.
  const iv = Buffer.from(IV_POOL.subarray(ivOffset, ivOffset + 12));
  ivOffset += 12;
  return iv;
}

export interface PageTokenCodec {
  encode(state: PageState): string;
  decode(token: string, now: number): DecodedToken;
}

/** The keys a codec uses: `active` seals new tokens, each of `all` (newest first) opens. */
export interface PageTokenKeys {
  readonly active: Uint8Array;
  readonly all: readonly Uint8Array[];
}

/**
 * @param keys 32 secret bytes, or a reader of the current keys (called per token, so a
 *   rotation seen by the reader applies from the next token on)
 */
export function createPageTokenCodec(keys: Uint8Array | (() => PageTokenKeys)): PageTokenCodec {
  const fixed = keys instanceof Uint8Array ? { active: keys, all: [keys] } : undefined;
  const ring = fixed ? () => fixed : (keys as () => PageTokenKeys);
  if (fixed && fixed.active.length !== 32) throw new Error("page-token key must be 32 bytes");
  return {
    encode(state) {
      const iv = nextIv();
      const cipher = createCipheriv("aes-256-gcm", ring().active, iv);
      const body = cipher.update(JSON.stringify(compact(state)), "utf8");
      cipher.final(); // GCM is a stream mode: final() adds no bytes, it computes the tag
      return Buffer.concat([VERSION_BYTE, iv, body, cipher.getAuthTag()]).toString("base64url");
    },
    decode(token, now) {
      if (!/^[A-Za-z0-9_-]{30,2048}$/.test(token)) return { kind: "invalid" };
      const raw = Buffer.from(token, "base64url");
      if (raw.length < 1 + 12 + 16 + 2 || raw[0] !== VERSION) return { kind: "invalid" };
      let text: string | undefined;
      // Newest key first: nearly every token is sealed with it; an older one only opens
      // tokens issued before a rotation, and a forged token fails the tag under every key.
      for (const key of ring().all) {
        try {
          const decipher = createDecipheriv("aes-256-gcm", key, raw.subarray(1, 13));
          decipher.setAuthTag(raw.subarray(raw.length - 16));
          text = Buffer.concat([decipher.update(raw.subarray(13, raw.length - 16)), decipher.final()]).toString("utf8");
          break;
        } catch {
          // not sealed with this key
        }
      }
      if (text === undefined) return { kind: "invalid" };
      let state: PageState | undefined;
      try {
        state = expand(JSON.parse(text));
      } catch {
        return { kind: "invalid" };
      }
      if (!state) return { kind: "invalid" };
      if (now - state.issuedAt > PAGE_TOKEN_LIFETIME_MS || state.issuedAt > now + 60_000) return { kind: "expired" };
      return { kind: "ok", state };
    },
  };
}

type Compact = [string, string | number, string, number, number, number, number];

function compact(s: PageState): Compact {
  return [s.fingerprint, s.after.value, s.after.uid, s.skipped, s.lastSkip, s.total, s.issuedAt];
}

function expand(v: unknown): PageState | undefined {
  if (!Array.isArray(v) || v.length !== 7) return undefined;
  const [fingerprint, value, uid, skipped, lastSkip, total, issuedAt] = v as unknown[];
  if (typeof fingerprint !== "string" || typeof uid !== "string") return undefined;
  if (typeof value !== "string" && typeof value !== "number") return undefined;
  for (const n of [skipped, lastSkip, total, issuedAt]) if (typeof n !== "number" || !Number.isSafeInteger(n)) return undefined;
  return {
    fingerprint,
    after: { value, uid },
    skipped: skipped as number,
    lastSkip: lastSkip as number,
    total: total as number,
    issuedAt: issuedAt as number,
  };
}
