/**
 * Key pairs for the tests' identity providers and attackers, made without ever holding a
 * KeyObject that a key-generation job made: on Node 20 exporting such a key while a garbage
 * collection destroys its job can deadlock the whole test worker (see newP256PrivateJwk in
 * src/auth/signing-keys.ts). Each key here starts as a JWK or encoded bytes and becomes a
 * KeyObject through createPrivateKey, which no job owns (exporting that one is safe).
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from "node:crypto";
import type { JWK } from "jose";
import { newP256PrivateJwk } from "../../src/auth/signing-keys.js";

export interface TestKeyPair {
  /** For signing (jose's SignJWT takes it as it is). */
  readonly privateKey: KeyObject;
  /** The public half as a JWK, for a JWKS or a `jwk` header (no kid, alg or use: add your own). */
  readonly publicJwk: JWK;
}

/** A fresh P-256 (ES256) key pair, from ECDH's raw numbers as the server's signing keys are. */
export function newEs256KeyPair(): TestKeyPair {
  const privateJwk = newP256PrivateJwk();
  const { kty, crv, x, y } = privateJwk;
  return { privateKey: createPrivateKey({ key: privateJwk, format: "jwk" }), publicJwk: { kty, crv, x, y } as JWK };
}

/**
 * A fresh 2048-bit RSA (RS256) key pair. RSA has no generator outside the key-generation job,
 * so the job is asked for an encoded key (PKCS#8 DER): it encodes its own key while it runs
 * and hands back bytes, so no KeyObject of the job outlives it to be exported later.
 */
export function newRs256KeyPair(): TestKeyPair {
  const { privateKey: der } = generateKeyPairSync("rsa", {
    modulusLength: 2048,
    publicKeyEncoding: { type: "spki", format: "der" },
    privateKeyEncoding: { type: "pkcs8", format: "der" },
  });
  const privateKey = createPrivateKey({ key: der, format: "der", type: "pkcs8" });
  return { privateKey, publicJwk: createPublicKey(privateKey).export({ format: "jwk" }) as JWK };
}
