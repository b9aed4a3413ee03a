/**
 * IdentityProvider store records ⇄ proto messages.
 */
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import {
  type IdentityProvider,
  type IdentityProvider_OIDC,
  type IdentityProvider_SCIMSchema,
  IdentityProvider_OIDC_CorrelationRule,
  IdentityProviderSchema,
} from "../../../gen/chainguard/platform/iam/v2beta1/identity_providers_pb.js";
import type { IdentityProviderRecord, OidcInput } from "../../store/identity-providers.js";

/**
 * The proto form of a stored provider. `oidc.client_secret` is always empty: the secret is
 * write-only on every RPC (Get, List, Create and Update responses). `scim` is the SCIM state
 * the caller worked out (scim-tokens.ts scimToProto), or unset.
 */
export function identityProviderToProto(row: IdentityProviderRecord, scim?: MessageInitShape<typeof IdentityProvider_SCIMSchema>): IdentityProvider {
  const { hasClientSecret: _secretStays, ...oidc } = row.oidc;
  return create(IdentityProviderSchema, {
    uid: row.uid,
    name: row.name,
    description: row.description,
    defaultRole: row.defaultRole,
    configuration: { case: "oidc", value: { ...oidc, additionalScopes: [...oidc.additionalScopes], clientSecret: "" } },
    createTime: timestampFromMs(row.createTime),
    updateTime: timestampFromMs(row.updateTime),
    ...(scim ? { scim } : {}),
  });
}

/** The store form of OIDC settings given on the wire; UNSPECIFIED correlation means SUB_EQUALS_EXTERNAL_ID. */
export function oidcFromProto(oidc: IdentityProvider_OIDC): OidcInput {
  return {
    issuer: oidc.issuer,
    clientId: oidc.clientId,
    clientSecret: oidc.clientSecret,
    additionalScopes: [...oidc.additionalScopes],
    groupsClaim: oidc.groupsClaim,
    pkceEnabled: oidc.pkceEnabled,
    correlationRule: effectiveCorrelationRule(oidc.correlationRule),
  };
}

/** CORRELATION_RULE_UNSPECIFIED is treated as SUB_EQUALS_EXTERNAL_ID (docs/published-api.md "Creates and deletes"). */
export function effectiveCorrelationRule(rule: IdentityProvider_OIDC_CorrelationRule): IdentityProvider_OIDC_CorrelationRule {
  return rule === IdentityProvider_OIDC_CorrelationRule.UNSPECIFIED ? IdentityProvider_OIDC_CorrelationRule.SUB_EQUALS_EXTERNAL_ID : rule;
}
