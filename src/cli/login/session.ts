/**
 * A valid API token for a call, from the sources in order: `--token`, `TRELLIS_TOKEN`, then
 * the login cache, renewing a cached token that has expired:
 *
 * - user login: exchange the cached id_token again if it is still valid, else refresh it at
 *   the IdP with the refresh token and exchange the new one; without a refresh token the user
 *   is told to log in again (exit 3);
 * - assumed identity: read the identity-token file again (CI systems rotate it) and exchange.
 */
import fs from "node:fs";
import { authError } from "../exit-codes.js";
import { type CachedToken, isFresh, type Login, readLogin, writeLogin } from "../token-cache.js";
import { apiAudience, exchange } from "./exchange.js";

export type TokenSource = "flag" | "env" | "cache";

const now = () => Math.floor(Date.now() / 1000);

/** The bearer for API calls and where it came from, or undefined when there is none at all. */
export async function apiToken(
  api: string,
  flagToken: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ token: string; source: TokenSource } | undefined> {
  if (flagToken) return { token: flagToken, source: "flag" };
  if (env.TRELLIS_TOKEN) return { token: env.TRELLIS_TOKEN, source: "env" };
  const login = readLogin(api, env);
  if (!login) return undefined;
  return { token: (await tokenForAudience(api, login, apiAudience(api), env)).token, source: "cache" };
}

/**
 * A token for `audience` from the login cached for `api`: the cached one while fresh, else a
 * new exchange (cached in turn). Throws an auth CliError when the login cannot be renewed.
 */
export async function tokenForAudience(api: string, login: Login, audience: string, env: NodeJS.ProcessEnv = process.env): Promise<CachedToken> {
  const forApi = audience === apiAudience(api);
  const cached = forApi ? login.token : login.audiences?.[audience];
  if (isFresh(cached, now())) return cached;

  const { idpToken, source } = await freshIdpToken(login);
  const token = await exchange(api, idpToken, audience, source.kind === "identity" ? source.identity : undefined);
  const updated: Login = forApi ? { ...login, source, token } : { ...login, source, audiences: { ...login.audiences, [audience]: token } };
  writeLogin(api, updated, env);
  return token;
}

/** An IdP token to exchange, renewing the user's id_token with the refresh token if needed. */
async function freshIdpToken(login: Login): Promise<{ idpToken: string; source: Login["source"] }> {
  const source = login.source;
  if (source.kind === "identity") {
    let text: string;
    try {
      text = fs.readFileSync(source.tokenFile, "utf8").trim();
    } catch (err) {
      throw authError(`cannot read the identity token file ${source.tokenFile}: ${(err as Error).message}`);
    }
    if (!text) throw authError(`the identity token file ${source.tokenFile} is empty`);
    return { idpToken: text, source };
  }
  if (isFresh(source.idToken, now())) return { idpToken: source.idToken.token, source };
  if (!source.refreshToken) throw authError("your login has expired; run `trellis auth login` again");
  const { idpConfiguration, refreshLogin } = await import("./oidc.js");
  const config = await idpConfiguration({ issuer: source.issuer, clientId: source.clientId });
  const renewed = await refreshLogin(config, source.refreshToken);
  return { idpToken: renewed.idToken.token, source: { ...source, ...renewed } };
}
