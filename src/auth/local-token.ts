/**
 * `trellis auth token --local`: an operator token minted straight from the database (the data
 * directory's SQLite file, or the PostgreSQL database of `--database`).
 *
 * Reads the signing keys and the issuer settings the server stored (signing-keys.ts,
 * issuer-settings.ts) through a separate READ-ONLY connection: it takes no data-directory
 * lock and no write lock, so it works while the server runs (WAL lets a reader in at any
 * time) and cannot disturb it. The server must have started once on this data directory,
 * so the key and the issuer URL exist.
 *
 * The token carries `trellis_operator: true` (tokens.ts OPERATOR_CLAIM), which authorization
 * treats as owner of everything. Only a holder of the signing key, i.e. someone who can read
 * the database file, can mint one: the same trust as having the data itself.
 */
import { openStore, storeExists, storeFlag, storeLocation, type StoreTarget } from "../store/open.js";
import { loadIssuerSettings } from "./issuer-settings.js";
import { loadSigningKeys } from "./signing-keys.js";
import { createTokenIssuer } from "./tokens.js";

/** Default lifetime of a local operator token (seconds). */
export const LOCAL_TOKEN_TTL_S = 60 * 60;

export interface LocalTokenOptions {
  readonly store: StoreTarget;
  /** Names the operator in `sub` (`operator:<subject>`) and so in logs of who did what. */
  readonly subject?: string;
  readonly ttlSeconds?: number;
  readonly now?: () => number;
}

/** Mints an operator token with the server's key. @throws Error with a message for the user. */
export async function mintLocalOperatorToken(options: LocalTokenOptions): Promise<string> {
  if (!storeExists(options.store)) {
    throw new Error(`no Trellis database at ${storeLocation(options.store)}; start the server once with ${storeFlag(options.store)}`);
  }
  const subject = options.subject ?? "operator";
  if (!/^[A-Za-z0-9._@-]{1,64}$/.test(subject)) throw new Error("--subject must be 1-64 characters of A-Z a-z 0-9 . _ @ -");
  const store = await openStore({ ...options.store, access: "read-only" });
  try {
    const keys = await loadSigningKeys(store.serverValues);
    const settings = await loadIssuerSettings(store.serverValues);
    if (!keys || !settings) throw new Error(`the server has not started on ${storeLocation(options.store)} yet, so there is no signing key; start it once`);
    const now = options.now ?? Date.now;
    const issuer = createTokenIssuer({ issuer: settings.issuer, audience: settings.audience, keys: () => keys, now });
    return await issuer.mint({
      subject: `operator:${subject}`,
      audience: settings.audience,
      ttlSeconds: options.ttlSeconds ?? LOCAL_TOKEN_TTL_S,
      operator: true,
    });
  } finally {
    await store.close();
  }
}
