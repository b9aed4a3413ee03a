/**
 * The login cache: one JSON file, `$XDG_CONFIG_HOME/trellis/credentials.json` (or
 * `~/.config/trellis/credentials.json`), keyed by API URL so logins to several servers live
 * side by side.
 *
 * It holds bearer credentials (API tokens, the IdP's id_token and refresh token), so the
 * directory is created 0700 and the file written 0600 through a temporary file and a rename:
 * a crash never leaves a half-written file and no other user can ever read it, even briefly.
 * Existing looser modes are tightened on every write.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { decodeJwt } from "jose";

/** A token with its expiry (seconds since the epoch, from the JWT's `exp`). */
export interface CachedToken {
  readonly token: string;
  readonly exp: number;
}

/** How the login was made, which decides how an expired API token is renewed. */
export type LoginSource =
  | {
      /** Browser or device login: renew with the refresh token, then exchange again. */
      readonly kind: "user";
      readonly issuer: string;
      readonly clientId: string;
      readonly idToken?: CachedToken;
      readonly refreshToken?: string;
    }
  | {
      /** Assumed identity: renew by reading the token file again (CI rotates it) and exchanging. */
      readonly kind: "identity";
      readonly identity: string;
      readonly tokenFile: string;
    };

/** Everything cached for one API URL. */
export interface Login {
  readonly source: LoginSource;
  /** The API token for the API itself (audience = the API URL). */
  readonly token: CachedToken;
  /** Tokens exchanged for other audiences (`auth token --audience HOST`), by audience. */
  readonly audiences?: Readonly<Record<string, CachedToken>>;
}

type CacheFile = { readonly version: 1; readonly logins: Record<string, Login> };

/** The config directory: $XDG_CONFIG_HOME/trellis, else ~/.config/trellis. */
export function configDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CONFIG_HOME || path.join(os.homedir(), ".config");
  return path.join(base, "trellis");
}

export function cacheFile(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(configDir(env), "credentials.json");
}

/** The cache key for an API URL: origin plus path without a trailing slash. */
export function apiKey(api: string): string {
  const u = new URL(api);
  return `${u.origin}${u.pathname.replace(/\/+$/, "")}`;
}

function readAll(env: NodeJS.ProcessEnv): CacheFile {
  let text: string;
  try {
    text = fs.readFileSync(cacheFile(env), "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return { version: 1, logins: {} };
    throw err;
  }
  try {
    const parsed = JSON.parse(text) as CacheFile;
    if (parsed?.version === 1 && parsed.logins && typeof parsed.logins === "object") return parsed;
  } catch {
    // A corrupt cache is as good as none: the user logs in again and it is rewritten.
  }
  return { version: 1, logins: {} };
}

function writeAll(env: NodeJS.ProcessEnv, data: CacheFile): void {
  const dir = configDir(env);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  fs.chmodSync(dir, 0o700);
  const file = cacheFile(env);
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, `${JSON.stringify(data, null, 2)}\n`, { mode: 0o600, flag: "w" });
  fs.chmodSync(tmp, 0o600);
  fs.renameSync(tmp, file);
}

export function readLogin(api: string, env: NodeJS.ProcessEnv = process.env): Login | undefined {
  return readAll(env).logins[apiKey(api)];
}

export function writeLogin(api: string, login: Login, env: NodeJS.ProcessEnv = process.env): void {
  const data = readAll(env);
  writeAll(env, { version: 1, logins: { ...data.logins, [apiKey(api)]: login } });
}

/** Forgets the login for `api`; true when there was one. */
export function removeLogin(api: string, env: NodeJS.ProcessEnv = process.env): boolean {
  const data = readAll(env);
  const key = apiKey(api);
  if (!(key in data.logins)) return false;
  const { [key]: _gone, ...rest } = data.logins;
  writeAll(env, { version: 1, logins: rest });
  return true;
}

/** Seconds of validity a cached token must still have to be used (clock skew, slow calls). */
export const EXPIRY_MARGIN_SECONDS = 60;

export function isFresh(t: CachedToken | undefined, nowSeconds: number): t is CachedToken {
  return t !== undefined && t.exp - EXPIRY_MARGIN_SECONDS > nowSeconds;
}

/** A JWT's `exp` claim, read without verifying (the server verifies; we only schedule renewal). */
export function jwtExp(token: string): number | undefined {
  try {
    return decodeJwt(token).exp;
  } catch {
    return undefined;
  }
}
