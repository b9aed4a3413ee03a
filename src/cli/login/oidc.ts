/**
 * The user's login at the identity provider, with `openid-client` (see docs/cli.md for why a
 * library): discovery, authorization code + PKCE (S256) through a loopback redirect, the
 * device-authorization fallback for machines without a browser, and refresh.
 *
 * Only the IdP's id_token leaves this module: the server's exchange accepts it as the bearer.
 */
import { spawn } from "node:child_process";
import http from "node:http";
import * as oidc from "openid-client";
import { authError, CliError, EXIT } from "../exit-codes.js";
import type { CachedToken } from "../token-cache.js";
import type { UserIdp } from "./exchange.js";

/** What a login or a refresh yields. */
export interface IdpTokens {
  readonly idToken: CachedToken;
  readonly refreshToken?: string;
}

/** How long the loopback listener waits for the browser to come back. */
export const LOGIN_TIMEOUT_MS = 5 * 60_000;

/**
 * The IdP's configuration from its own discovery document. Plain http is allowed only for a
 * loopback issuer (a developer's local IdP); anything else must be https.
 */
export async function idpConfiguration(idp: UserIdp): Promise<oidc.Configuration> {
  const issuer = new URL(idp.issuer);
  const execute = isLoopback(issuer) && issuer.protocol === "http:" ? [oidc.allowInsecureRequests] : [];
  try {
    return await oidc.discovery(issuer, idp.clientId, undefined, oidc.None(), { execute });
  } catch (err) {
    throw new CliError(`cannot read the identity provider's discovery at ${idp.issuer}: ${(err as Error).message}`, EXIT.failure);
  }
}

/** True when the IdP offers the device flow (RFC 8628), which `--device` needs. */
export function supportsDevice(config: oidc.Configuration): boolean {
  return typeof config.serverMetadata().device_authorization_endpoint === "string";
}

/**
 * The scopes a login asks for. `email`: Trellis reads the user's verified email (the
 * `email` and `email_verified` claims) at sign-in, and methods depend on it — an invite
 * naming an address, and LookupGroup, CheckEligibility and RequestGroupAccess, which find the
 * caller's organization by its email domain — and many IdPs put the claims in the id_token
 * only when the scope was asked for. Asked whenever the IdP lists it, or lists no scopes at
 * all (`email` is a standard OpenID Connect scope). A refresh token (`offline_access`) only
 * where the IdP says it can give one.
 */
export function loginScope(config: oidc.Configuration): string {
  const listed = config.serverMetadata().scopes_supported;
  const supported = listed ?? [];
  const scopes = ["openid"];
  if (listed === undefined || supported.includes("email")) scopes.push("email");
  if (supported.includes("offline_access")) scopes.push("offline_access");
  return scopes.join(" ");
}

/**
 * Authorization code + PKCE: a listener on 127.0.0.1 (random port) receives the redirect,
 * the system browser is opened when there is one and the URL is always printed to stderr.
 */
export async function browserLogin(
  config: oidc.Configuration,
  options: { openBrowser: boolean; offerDevice: boolean; log: (line: string) => void },
): Promise<IdpTokens> {
  const verifier = oidc.randomPKCECodeVerifier();
  const challenge = await oidc.calculatePKCECodeChallenge(verifier);
  const state = oidc.randomState();

  let settle!: { resolve: (u: URL) => void; reject: (e: Error) => void };
  const callback = new Promise<URL>((resolve, reject) => {
    settle = { resolve, reject };
  });
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    if (url.pathname !== "/callback") {
      res.writeHead(404).end();
      return;
    }
    const failed = url.searchParams.get("error");
    res.writeHead(failed ? 400 : 200, { "content-type": "text/plain; charset=utf-8" });
    res.end(failed ? `Login failed: ${failed}. Return to the terminal.\n` : "Logged in to Trellis. You can close this tab.\n");
    settle.resolve(url);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  const redirectUri = `http://127.0.0.1:${port}/callback`;
  const timer = setTimeout(() => settle.reject(authError("no answer from the browser within 5 minutes; run `trellis auth login` again")), LOGIN_TIMEOUT_MS);

  try {
    const authUrl = oidc.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: loginScope(config),
      code_challenge: challenge,
      code_challenge_method: "S256",
      state,
    });
    const opened = options.openBrowser && openBrowser(authUrl.href);
    options.log(opened ? "Opening your browser to log in. If it does not open, visit:" : "To log in, open this URL in a browser:");
    options.log(`  ${authUrl.href}`);
    // The loopback redirect needs a browser on this machine; the device flow does not.
    if (!opened && options.offerDevice) options.log("(No browser on this machine? Run `trellis auth login --device` instead.)");
    const returned = await callback;
    const error = returned.searchParams.get("error");
    if (error) {
      throw authError(`the identity provider refused the login: ${error} ${returned.searchParams.get("error_description") ?? ""}`.trim());
    }
    const currentUrl = new URL(`${returned.pathname}${returned.search}`, redirectUri);
    const tokens = await grant(() => oidc.authorizationCodeGrant(config, currentUrl, { pkceCodeVerifier: verifier, expectedState: state }));
    return toIdpTokens(tokens);
  } finally {
    clearTimeout(timer);
    server.close();
    server.closeAllConnections();
  }
}

/** Device authorization (RFC 8628): print a code and URL, then poll until the user approves. */
export async function deviceLogin(config: oidc.Configuration, log: (line: string) => void): Promise<IdpTokens> {
  const device = await grant(() => oidc.initiateDeviceAuthorization(config, { scope: loginScope(config) }));
  log(`To log in, visit ${device.verification_uri_complete ?? device.verification_uri} and enter the code ${device.user_code}`);
  return toIdpTokens(await grant(() => oidc.pollDeviceAuthorizationGrant(config, device)));
}

/** New tokens from a refresh token; an auth CliError when the IdP no longer accepts it. */
export async function refreshLogin(config: oidc.Configuration, refreshToken: string): Promise<IdpTokens> {
  const tokens = await grant(() => oidc.refreshTokenGrant(config, refreshToken));
  return toIdpTokens(tokens, refreshToken);
}

function toIdpTokens(tokens: oidc.TokenEndpointResponse & oidc.TokenEndpointResponseHelpers, previousRefresh?: string): IdpTokens {
  const claims = tokens.claims();
  if (!tokens.id_token || !claims) throw authError("the identity provider returned no id_token");
  return {
    idToken: { token: tokens.id_token, exp: claims.exp },
    // IdPs that do not rotate refresh tokens return none on refresh: keep the old one.
    refreshToken: tokens.refresh_token ?? previousRefresh,
  };
}

/** Runs one IdP request, turning the library's OAuth errors into auth errors. */
async function grant<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (err instanceof CliError) throw err;
    const e = err as { error?: string; error_description?: string; message: string };
    throw authError(`the identity provider refused the login: ${e.error ? `${e.error} ${e.error_description ?? ""}`.trim() : e.message}`);
  }
}

function isLoopback(url: URL): boolean {
  return url.hostname === "127.0.0.1" || url.hostname === "localhost" || url.hostname === "[::1]";
}

/**
 * Starts the system browser (open on macOS, xdg-open elsewhere) when a display is there;
 * false when there is none, so the caller just prints the URL.
 */
function openBrowser(url: string): boolean {
  const command = process.platform === "darwin" ? "open" : process.platform === "win32" ? undefined : "xdg-open";
  if (!command) return false;
  if (process.platform !== "darwin" && !process.env.DISPLAY && !process.env.WAYLAND_DISPLAY) return false;
  try {
    const child = spawn(command, [url], { stdio: "ignore", detached: true });
    child.on("error", () => {});
    child.unref();
    return true;
  } catch {
    return false;
  }
}
