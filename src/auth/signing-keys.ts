/**
 * The token-signing keys: ES256 (P-256) key pairs kept in the database, so tokens survive a
 * restart, every process on the same database signs and verifies alike, and
 * `trellis auth token --local` can mint with the server's key without talking to it.
 *
 * Stored as one JSON document under the server_keys name `token_signing_keys` (no schema
 * change): `{"keys":[{"kid","privateJwk","createTime"}...]}`, newest last. The newest key
 * signs; every key listed verifies, so a rotation keeps tokens signed by the previous key
 * valid until they expire, and `pruneSigningKeys` drops keys retired longer than the longest
 * token lifetime.
 *
 * Key generation uses node:crypto synchronously because the read-create runs inside one
 * BEGIN IMMEDIATE transaction (two processes starting at once agree on one key).
 * The `kid` is the RFC 7638 JWK thumbprint of the public key.
 */
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, type JsonWebKey, type KeyObject } from "node:crypto";
import type { Db } from "../store/db.js";
import { readServerValue, updateServerValue } from "../store/server-keys.js";

const KEYS_NAME = "token_signing_keys";

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

function generate(now: number): StoredKey {
  const { privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const privateJwk = privateKey.export({ format: "jwk" });
  return { kid: thumbprint(privateJwk), privateJwk, createTime: now };
}

/** RFC 7638 thumbprint of an EC public key: SHA-256 over {crv,kty,x,y} in that order. */
function thumbprint(jwk: JsonWebKey): string {
  const canonical = JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y });
  return createHash("sha256").update(canonical).digest("base64url");
}

function toSigningKey(k: StoredKey): SigningKey {
  const privateKey = createPrivateKey({ key: k.privateJwk, format: "jwk" });
  const pub = createPublicKey(privateKey).export({ format: "jwk" });
  return {
    kid: k.kid,
    createTime: k.createTime,
    privateKey,
    publicJwk: { kty: "EC", crv: "P-256", x: pub.x as string, y: pub.y as string, kid: k.kid, alg: "ES256", use: "sig" },
  };
}

function toSet(keys: readonly StoredKey[]): SigningKeySet {
  const all = [...keys].sort((a, b) => b.createTime - a.createTime).map(toSigningKey);
  return { active: all[0] as SigningKey, all };
}

/** The stored keys, creating the first one if there is none (one transaction). */
export function loadOrCreateSigningKeys(db: Db, now: number): SigningKeySet {
  const stored = updateServerValue(db, KEYS_NAME, now, (current) =>
    parse(current).length > 0 ? undefined : serialize([generate(now)]),
  );
  return toSet(parse(stored));
}

/** The stored keys without creating any; undefined when the server has never started. */
export function loadSigningKeys(db: Db): SigningKeySet | undefined {
  const keys = parse(readServerValue(db, KEYS_NAME));
  return keys.length > 0 ? toSet(keys) : undefined;
}

/**
 * Adds a new signing key (it signs from now on) and drops keys that stopped signing more
 * than `retainMs` ago: tokens they signed have all expired by then.
 */
export function rotateSigningKey(db: Db, now: number, retainMs: number): SigningKeySet {
  const stored = updateServerValue(db, KEYS_NAME, now, (current) => {
    const next = [...parse(current), generate(now)].sort((a, b) => a.createTime - b.createTime);
    // A key retires when its successor is created.
    const kept = next.filter((_key, i) => {
      const successor = next[i + 1];
      return successor === undefined || now - successor.createTime <= retainMs;
    });
    return serialize(kept);
  });
  return toSet(parse(stored));
}
