/**
 * The token-signing keys: ES256 (P-256) key pairs kept in the database, so tokens survive a
 * restart, every process on the same database signs and verifies alike, and
 * `trellis auth token --local` can mint with the server's key without talking to it.
 *
 * Stored as one JSON document under the server_keys name `token_signing_keys` (no schema
 * change): `{"keys":[{"kid","privateJwk","createTime"}...]}`, newest last. The newest key
 * signs; every key listed verifies, so a rotation keeps tokens signed by the previous key
 * valid until they expire. A key stops signing when its successor is created and retires
 * SIGNING_KEY_RETENTION_MS later, when every token it signed has expired (every minting path
 * stays within MAX_API_TOKEN_TTL_S, token-lifetime.ts): from then on it neither verifies nor
 * appears in the JWKS, and the next rotation removes it from the database.
 *
 * Key generation uses node:crypto synchronously because the read-create runs inside one
 * BEGIN IMMEDIATE transaction (two processes starting at once agree on one key).
 * The `kid` is the RFC 7638 JWK thumbprint of the public key.
 */
import { createECDH, createHash, createPrivateKey, createPublicKey, type JsonWebKey, type KeyObject } from "node:crypto";
import type { ServerValues } from "../store/engine.js";
import { CLOCK_TOLERANCE_S, MAX_API_TOKEN_TTL_S } from "./token-lifetime.js";

export const SIGNING_KEYS_NAME = "token_signing_keys";
const KEYS_NAME = SIGNING_KEYS_NAME;

/**
 * How long a key keeps verifying after it stops signing: the longest lifetime of anything
 * it signed (MAX_API_TOKEN_TTL_S) plus the clock tolerance
 * verification allows past `exp`.
 */
export const SIGNING_KEY_RETENTION_MS = (MAX_API_TOKEN_TTL_S + CLOCK_TOLERANCE_S) * 1000;

/** One stored key pair. */
interface StoredKey {
  readonly kid: string;
  readonly privateJwk: JsonWebKey;
  /** When it was created (ms); a key stops signing when a newer one exists. */
  readonly createTime: number;
}

/** A usable key: id, private key for signing, public JWK for the key set. */
export interface SigningKey {
  readonly kid: string;
  readonly createTime: number;
  /** When it stops verifying (ms): its successor's createTime + retention; absent on the active key. */
  readonly retireTime?: number;
  readonly privateKey: KeyObject;
  readonly publicJwk: { kty: string; crv: string; x: string; y: string; kid: string; alg: "ES256"; use: "sig" };
}

export interface SigningKeySet {
  /** The key that signs new tokens (the newest). */
  readonly active: SigningKey;
  /** Every key that verifies, newest first. */
  readonly all: readonly SigningKey[];
}

function parse(value: Buffer | undefined): StoredKey[] {
  if (value === undefined) return [];
  return (JSON.parse(value.toString("utf8")) as { keys?: StoredKey[] }).keys ?? [];
}

function serialize(keys: readonly StoredKey[]): Buffer {
  return Buffer.from(JSON.stringify({ keys }), "utf8");
}

/** P-256's field and scalar size in bytes. */
const P256_BYTES = 32;

/**
 * A new P-256 private key as a JWK (x, y and d), built from the raw numbers OpenSSL's EC key
 * generation gives. Not generateKeyPair(Sync) + export: on Node 20 exporting the key that a
 * key-generation job made can deadlock the process, when a garbage collection during the export
 * destroys that job, which waits for the key's lock the export holds (seen in CI: every thread
 * parked, the main one in ~KeyGenJob under ExportJWK). ECDH's generator involves neither.
 * The tests make their P-256 keys here too (test/support/test-keys.ts).
 */
export function newP256PrivateJwk(): JsonWebKey {
  const ecdh = createECDH("prime256v1");
  ecdh.generateKeys();
  // Uncompressed point: 0x04, then x and y, each 32 bytes.
  const point = ecdh.getPublicKey();
  // The private scalar may come back shorter than 32 bytes (leading zeros); a JWK's d may not.
  const scalar = ecdh.getPrivateKey();
  const d = Buffer.concat([Buffer.alloc(P256_BYTES - scalar.length), scalar]);
  const privateJwk: JsonWebKey = {
    kty: "EC",
    crv: "P-256",
    x: point.subarray(1, 1 + P256_BYTES).toString("base64url"),
    y: point.subarray(1 + P256_BYTES).toString("base64url"),
    d: d.toString("base64url"),
  };
  // Refuses a malformed key at once, rather than at the first signature.
  createPrivateKey({ key: privateJwk, format: "jwk" });
  return privateJwk;
}

function generate(now: number): StoredKey {
  const privateJwk = newP256PrivateJwk();
  return { kid: thumbprint(privateJwk), privateJwk, createTime: now };
}

/** RFC 7638 thumbprint of an EC public key: SHA-256 over {crv,kty,x,y} in that order. */
function thumbprint(jwk: JsonWebKey): string {
  const canonical = JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y });
  return createHash("sha256").update(canonical).digest("base64url");
}

function toSigningKey(k: StoredKey, retireTime: number | undefined): SigningKey {
  const privateKey = createPrivateKey({ key: k.privateJwk, format: "jwk" });
  const pub = createPublicKey(privateKey).export({ format: "jwk" });
  return {
    kid: k.kid,
    createTime: k.createTime,
    ...(retireTime === undefined ? {} : { retireTime }),
    privateKey,
    publicJwk: { kty: "EC", crv: "P-256", x: pub.x as string, y: pub.y as string, kid: k.kid, alg: "ES256", use: "sig" },
  };
}

function toSet(keys: readonly StoredKey[]): SigningKeySet {
  const sorted = [...keys].sort((a, b) => b.createTime - a.createTime);
  // Newest first: each key retires a retention after the key before it in this order was made.
  const all = sorted.map((k, i) => {
    const successor = sorted[i - 1];
    return toSigningKey(k, successor === undefined ? undefined : successor.createTime + SIGNING_KEY_RETENTION_MS);
  });
  return { active: all[0] as SigningKey, all };
}

/** The keys of `set` that still verify at `now` (ms): the active one and those not yet retired. */
export function verifyingKeys(set: SigningKeySet, now: number): SigningKey[] {
  return set.all.filter((k) => k.retireTime === undefined || k.retireTime > now);
}

/** Parses the stored row (for the shared-values watcher); undefined when there is no key yet. */
export function parseSigningKeySet(value: Buffer | undefined): SigningKeySet | undefined {
  const keys = parse(value);
  return keys.length > 0 ? toSet(keys) : undefined;
}

/** The stored keys, creating the first one if there is none (one transaction). */
export async function loadOrCreateSigningKeys(values: ServerValues, now: number): Promise<SigningKeySet> {
  const [stored] = await values.update([KEYS_NAME], now, ([current]) => (parse(current).length > 0 ? undefined : [serialize([generate(now)])]));
  return toSet(parse(stored));
}

/** The stored keys without creating any; undefined when the server has never started. */
export async function loadSigningKeys(values: ServerValues): Promise<SigningKeySet | undefined> {
  const keys = parse(await values.read(KEYS_NAME));
  return keys.length > 0 ? toSet(keys) : undefined;
}

/**
 * Adds a new signing key (it signs from now on) and drops keys that stopped signing more
 * than `retainMs` ago (default SIGNING_KEY_RETENTION_MS: tokens they signed have all expired
 * by then). `retainMs` 0 drops every older key at once: for a key that leaked, at the price
 * of every token it signed.
 */
export async function rotateSigningKey(values: ServerValues, now: number, retainMs: number = SIGNING_KEY_RETENTION_MS): Promise<SigningKeySet> {
  const [stored] = await values.update([KEYS_NAME], now, ([current]) => {
    const next = [...parse(current), generate(now)].sort((a, b) => a.createTime - b.createTime);
    // A key stops signing when its successor is created and is kept for `retainMs` after.
    const kept = next.filter((_key, i) => {
      const successor = next[i + 1];
      return successor === undefined || now - successor.createTime < retainMs;
    });
    return [serialize(kept)];
  });
  return toSet(parse(stored));
}
