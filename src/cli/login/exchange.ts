/**
 * The two HTTP calls the CLI makes to the Trellis server outside the RPC surface:
 *
 * - `GET {api}/.well-known/openid-configuration`: the server's discovery document, whose
 *   `trellis_user_idps: [{issuer, client_id}]` names the identity provider users log in with
 *   (the contract with the server's auth module).
 * - `GET {api}/sts/exchange?aud=...[&identity=...]` with `Authorization: Bearer <IdP token>`:
 *   trades an identity-provider token for an API token `{"token": ...}`. The IdP token goes in
 *   the header only, never the URL (docs/published-api.md "Credentials").
 */
import { authError, CliError, EXIT } from "../exit-codes.js";
import { httpGet } from "../network.js";
import { type CachedToken, jwtExp } from "../token-cache.js";

/** One user IdP the server trusts for browser login. */
export interface UserIdp {
  readonly issuer: string;
  readonly clientId: string;
}

/** The user IdPs from the server's discovery document; a CliError when there are none. */
export async function discoverUserIdps(api: string): Promise<UserIdp[]> {
  const url = new URL(".well-known/openid-configuration", withSlash(api));
  const res = await httpGet(url, {});
  if (!res.ok) {
    throw new CliError(`${url.href} answered HTTP ${res.status}: is ${api} a Trellis server?`, EXIT.failure);
  }
  const doc = (await res.json()) as { trellis_user_idps?: { issuer?: unknown; client_id?: unknown }[] };
  const idps = (doc.trellis_user_idps ?? []).flatMap((i) =>
    typeof i.issuer === "string" && typeof i.client_id === "string" ? [{ issuer: i.issuer, clientId: i.client_id }] : [],
  );
  if (idps.length === 0) {
    throw authError(`${api} trusts no user identity provider for browser login; use \`trellis auth login --identity UID --identity-token FILE\``);
  }
  return idps;
}

/** Exchanges an IdP token for an API token for `audience` (and an assumed identity if given). */
export async function exchange(api: string, idpToken: string, audience: string, identity?: string): Promise<CachedToken> {
  const url = new URL("sts/exchange", withSlash(api));
  url.searchParams.set("aud", audience);
  if (identity) url.searchParams.set("identity", identity);
  const res = await httpGet(url, { authorization: `Bearer ${idpToken}` });
  // Success is RawToken JSON; failure the AIP-193 Status body {code, message, details}.
  const body = (await res.json().catch(() => ({}))) as {
    token?: unknown;
    message?: unknown;
    details?: { reason?: unknown }[];
  };
  if (!res.ok || typeof body.token !== "string") {
    const why = typeof body.message === "string" ? body.message : "";
    const reason = body.details?.find((d) => typeof d?.reason === "string")?.reason as string | undefined;
    const text = `the token exchange at ${url.origin}${url.pathname} refused (HTTP ${res.status})${why ? `: ${why}` : ""}${reason ? `\n  reason: ${reason}` : ""}`;
    // As for RPCs: 401/403 (UNAUTHENTICATED, PERMISSION_DENIED) are auth errors, the rest failures.
    throw new CliError(text, res.status === 401 || res.status === 403 ? EXIT.auth : EXIT.failure);
  }
  return { token: body.token, exp: jwtExp(body.token) ?? Math.floor(Date.now() / 1000) + 3600 };
}

/** The API URL as the audience the server expects: no trailing slash. */
export function apiAudience(api: string): string {
  return api.replace(/\/+$/, "");
}

function withSlash(api: string): string {
  return api.endsWith("/") ? api : `${api}/`;
}
