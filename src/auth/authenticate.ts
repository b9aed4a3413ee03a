/**
 * Authentication: the first before-call hook (src/server/call-pipeline.ts), identical on all
 * four doors because the REST door calls the same wrapped implementations.
 *
 * - The token comes from the `Authorization` request header only (gRPC metadata is the same
 *   header): `Bearer <jwt>`; on gRPC a bare `<jwt>` is accepted too, because the published
 *   Go SDK sends the token as-is there (docs/published-api.md "Credentials"). Anything else, two tokens (also
 *   as two Authorization headers: foldRepeatedAuthorization), or a token in the URL query
 *   is UNAUTHENTICATED.
 * - Methods whose IAM option is `disabled` (the token exchange, which verifies an IdP token
 *   itself) skip this hook; health and reflection never pass through the pipeline.
 * - The header value is never logged or echoed; errors say what is wrong, not what was sent.
 */
import type { DescMethod } from "@bufbuild/protobuf";
import { createContextKey, type HandlerContext } from "@connectrpc/connect";
import { CALLER } from "./caller.js";
import type { MethodPlans } from "./iam-plan.js";
import { type TokenIssuer, tokenRejected } from "./tokens.js";

/** Three base64url parts: the shape of a JWS compact token. */
const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;
const BEARER = /^Bearer +(\S+)$/i;

/**
 * Query parameters that carry credentials in other APIs. A request that puts a token in
 * the URL is refused outright (docs/published-api.md "Credentials"): URLs end up in proxy logs and browser history.
 */
const CREDENTIAL_PARAMS = new Set(["access_token", "token", "id_token", "jwt", "bearer", "authorization", "api_key"]);

/** The credential-looking query parameter in `url`, if any (case-insensitive name). */
export function credentialInQuery(url: string): string | undefined {
  const q = url.indexOf("?");
  if (q < 0) return undefined;
  for (const part of url.slice(q + 1).split("&")) {
    const eq = part.indexOf("=");
    let name = eq < 0 ? part : part.slice(0, eq);
    try {
      name = decodeURIComponent(name.replace(/\+/g, " "));
    } catch {
      // a malformed escape is no credential name
    }
    if (CREDENTIAL_PARAMS.has(name.toLowerCase())) return name;
  }
  return undefined;
}

/** UNAUTHENTICATED for a token offered in the URL. */
export function tokenInUrlError(param: string) {
  return tokenRejected("TOKEN_IN_URL", `credentials are accepted only in the Authorization header, not in the URL query (parameter "${param}")`);
}

/** Refuses a URL whose query carries a credential-looking parameter. @throws UNAUTHENTICATED. */
export function refuseCredentialInUrl(url: string): void {
  const param = credentialInQuery(url);
  if (param !== undefined) throw tokenInUrlError(param);
}

/**
 * Set in a call's context by a door that ran refuseCredentialInUrl on the request itself
 * before the call began: the REST door must, before an unknown query parameter could become a
 * 400. The hook then does not read the URL a second time, so each call's URL is checked once.
 * A context value, which only a door can set, never anything a client sends.
 */
export const URL_CHECKED = createContextKey(false, { description: "the door refused credentials in the URL already" });

/**
 * Makes a repeated Authorization header visible to every door. Node keeps only the first
 * value in `req.headers` (HTTP/1.1 discards later Authorization lines; h2 keeps the first
 * entry), and connect-node, the fast unary doors and the REST door all read `req.headers`,
 * so a second credential used to be dropped silently and the call ran as the first. Here
 * all the values are joined with ", ", as HTTP combines repeated fields and as the Fetch
 * `Headers` the doors build would show them, and bearerToken refuses that as two
 * credentials: UNAUTHENTICATED on every door, the token exchange included.
 *
 * Runs on every request before any door, so it only walks `rawHeaders` (a plain array on both
 * HTTP versions) comparing name lengths first; nothing is allocated unless the header repeats.
 */
export function foldRepeatedAuthorization(req: { readonly rawHeaders: string[]; readonly headers: Record<string, string | string[] | undefined> }): void {
  const raw = req.rawHeaders;
  let first = -1;
  let values: string[] | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    if (name.length !== 13 || name.toLowerCase() !== "authorization") continue;
    if (first < 0) first = i;
    else {
      values ??= [raw[first + 1] as string];
      values.push(raw[i + 1] as string);
    }
  }
  if (values) req.headers.authorization = values.join(", ");
}

/** The raw token from the Authorization header. @throws UNAUTHENTICATED. */
export function bearerToken(header: string | null, protocol: string): string {
  if (header === null || header.trim() === "") {
    throw tokenRejected("TOKEN_MISSING", "this method requires an API token in the Authorization header (Bearer)");
  }
  // A token never holds a comma; one here means two header values (foldRepeatedAuthorization).
  if (header.includes(",")) {
    throw tokenRejected("TOKEN_INVALID", "the Authorization header must carry exactly one credential, not several");
  }
  const m = BEARER.exec(header.trim());
  const token = m ? m[1] : protocol === "grpc" ? header.trim() : undefined;
  if (token === undefined || !JWT_SHAPE.test(token)) {
    throw tokenRejected("TOKEN_INVALID", 'the Authorization header must be "Bearer <token>" with one API token');
  }
  return token;
}

export function createAuthenticationHook(issuer: Pick<TokenIssuer, "verify">, plans: MethodPlans) {
  // Named: the name is the span name when tracing is on (src/observe/tracing-sdk.ts).
  return async function authenticate(method: DescMethod, context: HandlerContext): Promise<void> {
    if (!context.values.get(URL_CHECKED)) refuseCredentialInUrl(context.url);
    if (plans.get(method)?.kind === "disabled") return;
    const token = bearerToken(context.requestHeader.get("authorization"), context.protocolName);
    context.values.set(CALLER, await issuer.verify(token));
  };
}
