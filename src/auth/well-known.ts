/**
 * The issuer's public documents, plain HTTP GETs on the API port:
 * - `/.well-known/jwks.json`: our token-verification keys (every key still verifying);
 * - `/.well-known/openid-configuration`: OIDC discovery, so anyone (the events receiver,
 *   go-oidc verifiers, the CLI) can find the JWKS. `trellis_user_idps` lists the trusted
 *   user identity providers that have a browser-login client id (contract with the CLI).
 */
import type http from "node:http";
import type http2 from "node:http2";
import type { TokenIssuer } from "./tokens.js";

type Req = http.IncomingMessage | http2.Http2ServerRequest;
type Res = http.ServerResponse | http2.Http2ServerResponse;

export const JWKS_PATH = "/.well-known/jwks.json";
export const DISCOVERY_PATH = "/.well-known/openid-configuration";

export interface UserIdpLink {
  readonly issuer: string;
  readonly client_id: string;
}

export function discoveryDocument(issuer: string, userIdps: readonly UserIdpLink[]) {
  return {
    issuer,
    jwks_uri: `${issuer}${JWKS_PATH}`,
    token_endpoint: `${issuer}/sts/exchange`,
    response_types_supported: ["id_token"],
    subject_types_supported: ["public"],
    id_token_signing_alg_values_supported: ["ES256"],
    trellis_user_idps: userIdps,
  };
}

/** Answers the two documents; returns false for any other request. */
export function createWellKnownHandler(issuer: () => TokenIssuer, userIdps: () => readonly UserIdpLink[]) {
  return (req: Req, res: Res): boolean => {
    const url = req.url ?? "/";
    const path = url.split("?", 1)[0];
    if (path !== JWKS_PATH && path !== DISCOVERY_PATH) return false;
    const method = (req.method ?? "GET").toUpperCase();
    if (method !== "GET" && method !== "HEAD") {
      (res as http.ServerResponse).writeHead(405, { allow: "GET, HEAD" });
      res.end();
      return true;
    }
    const i = issuer();
    const body = JSON.stringify(path === JWKS_PATH ? i.jwks() : discoveryDocument(i.issuer, userIdps()));
    (res as http.ServerResponse).writeHead(200, {
      "content-type": "application/json",
      "content-length": String(Buffer.byteLength(body)),
      // Verifiers may cache briefly; they refetch when a token names a kid they lack.
      "cache-control": "public, max-age=300",
    });
    if (method === "HEAD") res.end();
    else res.end(body);
    return true;
  };
}
