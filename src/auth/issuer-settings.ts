/**
 * Where the running server publishes who it is as a token issuer, for tools that mint
 * tokens from the data directory without talking to the server (`trellis auth token
 * --local`): the issuer URL and the API audience, stored under the server_keys name
 * `issuer_settings` at every start.
 */
import type { ServerValues } from "../store/engine.js";

const SETTINGS_NAME = "issuer_settings";

export interface IssuerSettings {
  /** `iss` of our tokens; also the base URL of the JWKS and discovery documents. */
  readonly issuer: string;
  /** `aud` API tokens must carry. */
  readonly audience: string;
}

export async function saveIssuerSettings(values: ServerValues, settings: IssuerSettings, now: number): Promise<void> {
  const value = Buffer.from(JSON.stringify({ issuer: settings.issuer, audience: settings.audience }), "utf8");
  await values.update([SETTINGS_NAME], now, ([current]) => (current?.equals(value) ? undefined : [value]));
}

export async function loadIssuerSettings(values: ServerValues): Promise<IssuerSettings | undefined> {
  const value = await values.read(SETTINGS_NAME);
  return value === undefined ? undefined : (JSON.parse(value.toString("utf8")) as IssuerSettings);
}

/** An issuer URL without a trailing slash (tokens compare `iss` as an exact string). */
export function normalizeIssuerUrl(url: string): string {
  const u = new URL(url);
  if (u.protocol !== "https:" && u.protocol !== "http:") throw new Error(`issuer URL must be http(s): ${url}`);
  if (u.search || u.hash) throw new Error(`issuer URL must not have a query or fragment: ${url}`);
  return u.toString().replace(/\/+$/, "");
}
