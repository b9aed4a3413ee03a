/**
 * The trust configuration file (`--config trellis.yaml`, env TRELLIS_CONFIG): which outside
 * identity providers the token exchange trusts, and the registry audience.
 *
 *   registry_audience: registry.example.com   # optional: `aud` of registry tokens
 *   identity_providers:
 *     - issuer: https://accounts.google.com    # exact `iss`; https (http only on loopback)
 *       jwks_uri: https://www.googleapis.com/oauth2/v3/certs   # optional; else discovery
 *       users: true                             # its users may sign in as themselves
 *       client_id: 1234.apps.googleusercontent.com  # browser login; also the `aud` required
 *                                               # of its tokens at user sign-in
 *
 * Unknown keys are errors (a typo must not silently drop a trust setting).
 */
import fs from "node:fs";
import { parse } from "yaml";
import { checkIssuerUrl } from "./claim-match.js";

export interface TrustedIdp {
  readonly issuer: string;
  readonly jwksUri?: string;
  /** Its users may exchange its tokens for their own API token (user sign-in). */
  readonly users: boolean;
  readonly clientId?: string;
}

export interface TrustConfig {
  readonly registryAudience?: string;
  readonly identityProviders: readonly TrustedIdp[];
}

export const EMPTY_TRUST: TrustConfig = { identityProviders: [] };

function fail(file: string, what: string): never {
  throw new Error(`${file}: ${what}`);
}

/** Validates a parsed document. @throws Error naming the file and the bad key. */
export function toTrustConfig(doc: unknown, file = "config"): TrustConfig {
  if (doc === null || doc === undefined) return EMPTY_TRUST;
  if (typeof doc !== "object" || Array.isArray(doc)) fail(file, "must be a mapping");
  const top = doc as Record<string, unknown>;
  for (const k of Object.keys(top)) if (k !== "registry_audience" && k !== "identity_providers") fail(file, `unknown key "${k}"`);
  const registryAudience = top.registry_audience;
  if (registryAudience !== undefined && (typeof registryAudience !== "string" || registryAudience === "")) {
    fail(file, "registry_audience must be a non-empty string");
  }
  const list = top.identity_providers ?? [];
  if (!Array.isArray(list)) fail(file, "identity_providers must be a list");
  const identityProviders = list.map((entry, i): TrustedIdp => {
    const at = `identity_providers[${i}]`;
    if (entry === null || typeof entry !== "object" || Array.isArray(entry)) fail(file, `${at} must be a mapping`);
    const e = entry as Record<string, unknown>;
    for (const k of Object.keys(e)) if (!["issuer", "jwks_uri", "users", "client_id"].includes(k)) fail(file, `${at}: unknown key "${k}"`);
    const urlProblem = (field: string, v: unknown) => (typeof v === "string" ? checkIssuerUrl(field, v) : { description: "must be a string" });
    const issuerProblem = urlProblem("issuer", e.issuer);
    if (issuerProblem) fail(file, `${at}.issuer ${issuerProblem.description}`);
    if (e.jwks_uri !== undefined) {
      const p = urlProblem("jwks_uri", e.jwks_uri);
      if (p) fail(file, `${at}.jwks_uri ${p.description}`);
    }
    if (e.users !== undefined && typeof e.users !== "boolean") fail(file, `${at}.users must be true or false`);
    if (e.client_id !== undefined && (typeof e.client_id !== "string" || e.client_id === "")) fail(file, `${at}.client_id must be a non-empty string`);
    return {
      issuer: e.issuer as string,
      ...(e.jwks_uri !== undefined && { jwksUri: e.jwks_uri as string }),
      users: e.users === true,
      ...(e.client_id !== undefined && { clientId: e.client_id as string }),
    };
  });
  const seen = new Set<string>();
  for (const idp of identityProviders) {
    if (seen.has(idp.issuer)) fail(file, `issuer ${idp.issuer} is listed twice`);
    seen.add(idp.issuer);
  }
  return { ...(registryAudience !== undefined && { registryAudience: registryAudience as string }), identityProviders };
}

/** Reads and validates the YAML file. @throws Error with a message for the operator. */
export function loadTrustConfig(file: string): TrustConfig {
  return toTrustConfig(readConfigFile(file), file);
}

/** The config file's YAML document, parsed. @throws Error with a message for the operator. */
export function readConfigFile(file: string): unknown {
  let text: string;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch (err) {
    throw new Error(`cannot read config ${file}: ${(err as Error).message}`);
  }
  let doc: unknown;
  try {
    doc = parse(text);
  } catch (err) {
    throw new Error(`${file} is not valid YAML: ${(err as Error).message}`);
  }
  return doc;
}
