/**
 * chainguard.platform.iam.v2beta1.IdentityProvidersService: OIDC identity providers under a
 * group.
 *
 * Handlers validate, call the repository (src/store/identity-providers.ts), convert.
 * Decisions where the published surface is silent:
 * - `parent` must be an existing group's exact UIDP (no suffix or name lookup as CreateGroup
 *   has); a malformed one is INVALID_ARGUMENT `parent`, a missing group NOT_FOUND.
 * - `default_role` must be a built-in role or a custom role of the parent group or one of its
 *   ancestors, else INVALID_ARGUMENT `default_role` (missing and foreign roles alike).
 * - Anti-escalation (src/auth/grant-guard.ts): the default role is granted to the provider's
 *   users, so setting it (create, or update to another role) needs every capability of that
 *   role at the provider's group (PERMISSION_DENIED, PRIVILEGE_ESCALATION).
 * - `oidc` is required: it is the only configuration. `issuer` is an absolute https URL with
 *   no credentials, query or fragment (http only for loopback hosts, for local IdPs);
 *   `client_id` is required; `client_secret` is required unless `pkce_enabled`;
 *   `additional_scopes` holds at most 20 RFC 6749 scope tokens and never `openid` (always
 *   requested); CORRELATION_RULE_UNSPECIFIED is stored as SUB_EQUALS_EXTERNAL_ID.
 * - The client secret is write-only: every response shows it empty.
 * - Update (docs/published-api.md "Update masks"): mask paths are `name`, `description`, `default_role`, `oidc`
 *   (the whole configuration) or `oidc.<field>`; without a mask the set fields are used,
 *   descending into `oidc`. An empty client secret keeps the stored one unless
 *   `oidc.client_secret` is named in the mask, which clears it (valid only with PKCE).
 *   `correlation_rule` is immutable: unset or restated is a no-op, a different value is
 *   INVALID_ARGUMENT. `scim` is output only: ignored in the body, rejected in a mask.
 * - Delete of a missing provider is NOT_FOUND (AIP default; the protos say nothing).
 * - The SCIM RPCs (Generate/Regenerate/RevokeScimToken, SetScimEnabled) are in
 *   scim-tokens.ts. `scim` in responses reports the SCIM state: every field on Get, Create
 *   and Update; on List without `token_expire_time` and with credential_state UNSPECIFIED,
 *   as published.
 */
import { create } from "@bufbuild/protobuf";
import { defaultRoleGuard } from "../../auth/grant-guard.js";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  type IdentityProvider_OIDC,
  IdentityProvider_OIDC_CorrelationRule,
  IdentityProvider_OIDCSchema,
  IdentityProviderSchema,
  type IdentityProvidersService,
  ListIdentityProvidersRequestSchema,
} from "../../../gen/chainguard/platform/iam/v2beta1/identity_providers_pb.js";
import { type FieldViolation, invalidArgument, invalidField, notFound } from "../../errors/api-error.js";
import { resolveNestedUpdatePaths } from "../../fieldmask/update-mask.js";
import { listPage } from "../../pagination/page.js";
import { type IdentityProviderChanges, IDENTITY_PROVIDER_ORDERS, type OidcChange, type OidcSettings } from "../../store/identity-providers.js";
import type { ServiceContext } from "../context.js";
import { pageBinding, toUidpFilter } from "../list-request.js";
import { checkDescription, checkName, checkUidp, collect, requireValid } from "../validate.js";
import { identityProviderToProto, oidcFromProto } from "./convert-identity-providers.js";
import { visibleScopes } from "../../auth/visible-scopes.js";
import type { ScimState } from "../../store/scim-credentials.js";
import { createScimTokenMethods, scimToProto } from "./scim-tokens.js";

const OIDC_FIELDS = ["issuer", "client_id", "client_secret", "additional_scopes", "groups_claim", "pkce_enabled", "correlation_rule"] as const;
type OidcField = (typeof OIDC_FIELDS)[number];

const MASK_RULES = { mutable: ["name", "description", "default_role", "oidc"], nested: { oidc: OIDC_FIELDS } };

export const MAX_ADDITIONAL_SCOPES = 20;
const MAX_ISSUER = 2048;
const MAX_TOKEN = 4096;
/** RFC 6749 §3.3 scope-token: printable ASCII except space, `"` and `\`. */
const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]+$/;
/** Printable, no whitespace: client ids, secrets and claim names. */
const TOKEN = /^[^\s\p{Cc}]+$/u;

export function createIdentityProvidersService(ctx: ServiceContext): Partial<ServiceImpl<typeof IdentityProvidersService>> {
  const repo = ctx.store.identityProviders;
  const scim = ctx.store.scimCredentials;
  /** A provider as Get, Create and Update answer it: with its whole SCIM state. */
  const withScim = async (row: Parameters<typeof identityProviderToProto>[0]) =>
    identityProviderToProto(row, scimToProto(await scim.get(row.uid), ctx.now(), true));

  return {
    ...createScimTokenMethods(ctx),

    async getIdentityProvider(req) {
      requireValid(checkUidp("uid", req.uid));
      const row = await repo.get(req.uid);
      if (!row) throw notFound("identity provider", req.uid);
      return withScim(row);
    },

    async createIdentityProvider(req, context) {
      const idp = req.identityProvider;
      const oidc = idp?.configuration.case === "oidc" ? idp.configuration.value : undefined;
      const violations = collect(
        checkUidp("parent", req.parent),
        idp ? checkName("name", idp.name) : { field: "name", description: "name is required" },
        idp ? checkDescription("description", idp.description) : undefined,
        checkUidp("default_role", idp?.defaultRole ?? ""),
        ...(oidc
          ? [...OIDC_FIELDS.map((f) => checkOidcField(oidc, f)), checkSecretRule(oidc.clientSecret !== "", oidc.pkceEnabled)]
          : [{ field: "oidc", description: "is required: it is the only provider configuration" }]),
      );
      if (violations.length > 0 || !idp || !oidc) throw invalidArgument(violations);
      const row = await repo.create(
        {
          parentUid: req.parent,
          name: idp.name,
          description: idp.description,
          defaultRole: idp.defaultRole,
          oidc: oidcFromProto(oidc),
        },
        ctx.now(),
        defaultRoleGuard(context),
      );
      return withScim(row);
    },

    async updateIdentityProvider(req, context) {
      const idp = req.identityProvider;
      if (!idp) throw invalidField("identity_provider", "is required");
      requireValid(checkUidp("uid", idp.uid));
      const paths = resolveNestedUpdatePaths(IdentityProviderSchema, idp, req.updateMask, MASK_RULES);
      const given = idp.configuration.case === "oidc" ? idp.configuration.value : create(IdentityProvider_OIDCSchema);
      const oidcFields = new Set<OidcField>(paths.includes("oidc") ? OIDC_FIELDS : OIDC_FIELDS.filter((f) => paths.includes(`oidc.${f}`)));
      const changes: { -readonly [K in keyof IdentityProviderChanges]: IdentityProviderChanges[K] } = {};
      const violations: (FieldViolation | undefined)[] = [];
      for (const path of paths) {
        switch (path) {
          case "name":
            violations.push(checkName("name", idp.name));
            changes.name = idp.name;
            break;
          case "description":
            violations.push(checkDescription("description", idp.description));
            changes.description = idp.description;
            break;
          case "default_role":
            violations.push(checkUidp("default_role", idp.defaultRole));
            changes.defaultRole = idp.defaultRole;
            break;
          case "oidc":
            if (idp.configuration.case !== "oidc") violations.push({ field: "oidc", description: "is required" });
            break;
        }
      }
      for (const f of oidcFields) violations.push(checkOidcField(given, f));
      const found = collect(...violations);
      if (found.length > 0) throw invalidArgument(found);
      // An empty secret keeps the stored one unless the mask names oidc.client_secret itself.
      const secretNamed = (req.updateMask?.paths ?? []).some((p) => ["oidc.client_secret", "oidc.clientSecret"].includes(p.trim()));
      const row = await repo.update(
        idp.uid,
        (current) => (oidcFields.size === 0 ? changes : { ...changes, oidc: mergeOidc(current.oidc, given, oidcFields, secretNamed) }),
        ctx.now(),
        defaultRoleGuard(context),
      );
      return withScim(row);
    },

    async deleteIdentityProvider(req) {
      requireValid(checkUidp("uid", req.uid));
      await repo.delete(req.uid);
      return {};
    },

    async listIdentityProviders(req, context) {
      const filter = { uidp: toUidpFilter(req.uidp), name: req.name === "" ? undefined : req.name, within: visibleScopes(context) };
      const page = await listPage(
        req,
        {
          orders: IDENTITY_PROVIDER_ORDERS.spellings,
          defaultOrder: { key: "uid", desc: false },
          binding: pageBinding(context, ListIdentityProvidersRequestSchema, req),
          fetch: (q) => repo.list(filter, q),
          count: () => repo.count(filter),
          cursor: (row, order) => ({ value: IDENTITY_PROVIDER_ORDERS.value(row, order), uid: row.uid }),
        },
        ctx.pageTokens,
        ctx.now(),
      );
      const states = await scim.getMany(page.items.map((r) => r.uid));
      const now = ctx.now();
      return {
        identityProviders: page.items.map((r) => identityProviderToProto(r, scimToProto(states.get(r.uid) as ScimState, now, false))),
        nextPageToken: page.nextPageToken,
        totalCount: page.totalCount,
        skipped: page.skipped,
      };
    },
  };
}

/**
 * The stored settings with the named OIDC fields taken from `given`. Runs inside the update
 * transaction. @throws ApiError INVALID_ARGUMENT when the correlation rule would change or
 * the result has neither a client secret nor PKCE.
 */
function mergeOidc(current: OidcSettings, given: IdentityProvider_OIDC, fields: ReadonlySet<OidcField>, secretNamed: boolean): OidcChange {
  const { hasClientSecret, ...stored } = current;
  const next: { -readonly [K in keyof typeof stored]: (typeof stored)[K] } = { ...stored };
  let clientSecret: string | undefined;
  if (fields.has("issuer")) next.issuer = given.issuer;
  if (fields.has("client_id")) next.clientId = given.clientId;
  if (fields.has("additional_scopes")) next.additionalScopes = [...given.additionalScopes];
  if (fields.has("groups_claim")) next.groupsClaim = given.groupsClaim;
  if (fields.has("pkce_enabled")) next.pkceEnabled = given.pkceEnabled;
  if (fields.has("client_secret") && (given.clientSecret !== "" || secretNamed)) clientSecret = given.clientSecret;
  const violations = collect(
    fields.has("correlation_rule") &&
      given.correlationRule !== IdentityProvider_OIDC_CorrelationRule.UNSPECIFIED &&
      given.correlationRule !== current.correlationRule
      ? {
          field: "oidc.correlation_rule",
          description: `is immutable: it is CORRELATION_RULE_${IdentityProvider_OIDC_CorrelationRule[current.correlationRule]} for this provider; leave it unset or restate it`,
        }
      : undefined,
    checkSecretRule(clientSecret === undefined ? hasClientSecret : clientSecret !== "", next.pkceEnabled),
  );
  if (violations.length > 0) throw invalidArgument(violations);
  return clientSecret === undefined ? next : { ...next, clientSecret };
}

/** Format rules of one OIDC field as given (rules that need the stored values are in mergeOidc). */
function checkOidcField(oidc: IdentityProvider_OIDC, f: OidcField): FieldViolation | undefined {
  const field = `oidc.${f}`;
  switch (f) {
    case "issuer":
      return checkIssuer(field, oidc.issuer);
    case "client_id":
      return oidc.clientId === "" ? { field, description: "is required" } : checkToken(field, oidc.clientId);
    case "client_secret":
      return oidc.clientSecret === "" ? undefined : checkToken(field, oidc.clientSecret);
    case "groups_claim":
      return oidc.groupsClaim === "" ? undefined : checkToken(field, oidc.groupsClaim);
    case "additional_scopes":
      return checkScopes(field, oidc.additionalScopes);
    case "correlation_rule":
      return IdentityProvider_OIDC_CorrelationRule[oidc.correlationRule] === undefined ? { field, description: "must be a CorrelationRule value" } : undefined;
    case "pkce_enabled":
      return undefined;
  }
}

function checkSecretRule(hasSecret: boolean, pkceEnabled: boolean): FieldViolation | undefined {
  return hasSecret || pkceEnabled ? undefined : { field: "oidc.client_secret", description: "is required unless pkce_enabled is set" };
}

function checkIssuer(field: string, value: string): FieldViolation | undefined {
  if (value === "") return { field, description: "is required" };
  const bad = { field, description: "must be an absolute https URL without credentials, query or fragment (http only for loopback hosts)" };
  if (value.length > MAX_ISSUER || !/^https?:\/\/\S+$/i.test(value)) return bad;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return bad;
  }
  const loopback = url.hostname === "localhost" || url.hostname === "[::1]" || /^127(?:\.\d{1,3}){3}$/.test(url.hostname);
  if (url.protocol !== "https:" && !(url.protocol === "http:" && loopback)) return bad;
  if (url.username !== "" || url.password !== "" || url.search !== "" || url.hash !== "" || value.includes("#") || value.includes("?")) {
    return bad;
  }
  return undefined;
}

function checkScopes(field: string, scopes: readonly string[]): FieldViolation | undefined {
  if (scopes.length > MAX_ADDITIONAL_SCOPES) return { field, description: `must hold at most ${MAX_ADDITIONAL_SCOPES} scopes` };
  for (const [i, scope] of scopes.entries()) {
    if (scope === "openid") return { field: `${field}[${i}]`, description: "openid is always requested; do not list it" };
    if (!SCOPE_TOKEN.test(scope)) {
      return { field: `${field}[${i}]`, description: "must be a non-empty scope token without spaces, quotes or backslashes" };
    }
  }
  return undefined;
}

function checkToken(field: string, value: string): FieldViolation | undefined {
  return value.length <= MAX_TOKEN && TOKEN.test(value)
    ? undefined
    : { field, description: `must be at most ${MAX_TOKEN} characters with no whitespace or control characters` };
}
