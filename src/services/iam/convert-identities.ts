/**
 * Identity store records ⇄ proto messages.
 */
import { create } from "@bufbuild/protobuf";
import { timestampFromMs, timestampMs } from "@bufbuild/protobuf/wkt";
import {
  type Identity,
  Identity_AWSIdentitySchema,
  type Identity_ClaimMatch,
  Identity_ClaimMatchSchema,
  Identity_StaticKeysSchema,
  type IdentityMetadata,
  IdentityMetadataSchema,
  IdentitySchema,
  RelationshipType,
} from "../../../gen/chainguard/platform/iam/v2beta1/identities_pb.js";
import type { IdentityRecord, Relationship, RelationshipKind, StringMatch } from "../../store/identities.js";
import { stringMatchFromOneof } from "../../auth/claim-match.js";

/** Default and maximum lifetime of static keys (docs/published-api.md "Creates and deletes"). */
export const STATIC_KEYS_MAX_LIFETIME_MS = 365 * 24 * 60 * 60 * 1000;

/** The relationship kind a RelationshipType filter selects; undefined for UNSPECIFIED (all). */
export const KIND_OF_TYPE: Readonly<Partial<Record<RelationshipType, RelationshipKind>>> = {
  [RelationshipType.CLAIM_MATCH]: "claim_match",
  [RelationshipType.STATIC]: "static_keys",
  [RelationshipType.AWS_IDENTITY]: "aws_identity",
  [RelationshipType.SERVICE_PRINCIPAL]: "service_principal",
};

export function identityToProto(row: IdentityRecord): Identity {
  return create(IdentitySchema, {
    uid: row.uid,
    name: row.name,
    description: row.description,
    email: row.email,
    emailUnverified: row.emailUnverified,
    company: row.company,
    lastSeenTime: row.lastSeenTime === undefined ? undefined : timestampFromMs(row.lastSeenTime),
    createTime: timestampFromMs(row.createTime),
    updateTime: timestampFromMs(row.updateTime),
    relationship: row.relationship ? relationshipToProto(row.relationship) : { case: undefined },
  });
}

/**
 * The IdentityMetadata view of an identity: its name and company, and the stored profile
 * fields (snake_case keys) on their proto members. Trellis keeps no given/family name.
 */
export function identityMetadataToProto(row: IdentityRecord): IdentityMetadata {
  const out = create(IdentityMetadataSchema, { uid: row.uid, name: row.name, company: row.company });
  const target = out as unknown as Record<string, unknown>;
  for (const field of IdentityMetadataSchema.fields) {
    const value = row.metadata[field.name];
    if (value !== undefined && typeof value === typeof target[field.localName]) target[field.localName] = value;
  }
  return out;
}

function relationshipToProto(r: Relationship): Identity["relationship"] {
  switch (r.kind) {
    case "claim_match":
      return {
        case: "claimMatch",
        value: create(Identity_ClaimMatchSchema, {
          iss: oneof(r.issuer, "issuer", "issuerPattern"),
          sub: oneof(r.subject, "subject", "subjectPattern"),
          aud: r.audience ? oneof(r.audience, "audience", "audiencePattern") : { case: undefined },
          claims: { ...r.claims },
          claimPatterns: { ...r.claimPatterns },
        }),
      };
    case "static_keys":
      return {
        case: "staticKeys",
        value: create(Identity_StaticKeysSchema, {
          issuer: r.issuer,
          subject: r.subject,
          issuerKeys: r.issuerKeys,
          expirationTime: timestampFromMs(r.expirationTime),
          audiences: [...r.audiences],
        }),
      };
    case "aws_identity":
      return {
        case: "awsIdentity",
        value: create(Identity_AWSIdentitySchema, {
          awsAccount: r.awsAccount,
          awsArn: r.arn ? oneof(r.arn, "arn", "arnPattern") : { case: undefined },
          awsUserId: r.userId ? oneof(r.userId, "userId", "userIdPattern") : { case: undefined },
        }),
      };
    case "service_principal":
      return { case: "servicePrincipal", value: r.servicePrincipal };
  }
}

function oneof<E extends string, P extends string>(m: StringMatch, exact: E, pattern: P) {
  return "exact" in m ? { case: exact, value: m.exact } : { case: pattern, value: m.pattern };
}

/**
 * The store form of a relationship given on the wire, which the service has validated.
 * Static keys without an expiration_time expire STATIC_KEYS_MAX_LIFETIME_MS after `now`.
 */
export function relationshipFromProto(relationship: Identity["relationship"], now: number): Relationship {
  switch (relationship.case) {
    case "claimMatch":
      return claimMatchFromProto(relationship.value);
    case "staticKeys": {
      const sk = relationship.value;
      return {
        kind: "static_keys",
        issuer: sk.issuer,
        subject: sk.subject,
        issuerKeys: sk.issuerKeys,
        expirationTime: sk.expirationTime ? timestampMs(sk.expirationTime) : now + STATIC_KEYS_MAX_LIFETIME_MS,
        audiences: [...sk.audiences],
      };
    }
    case "awsIdentity": {
      const aws = relationship.value;
      const arn = stringMatchFromOneof(aws.awsArn);
      const userId = stringMatchFromOneof(aws.awsUserId);
      return { kind: "aws_identity", awsAccount: aws.awsAccount, ...(arn && { arn }), ...(userId && { userId }) };
    }
    case "servicePrincipal":
      return { kind: "service_principal", servicePrincipal: relationship.value };
    case undefined:
      throw new Error("relationshipFromProto: the relationship was not validated");
  }
}

function claimMatchFromProto(cm: Identity_ClaimMatch): Relationship {
  const audience = stringMatchFromOneof(cm.aud);
  return {
    kind: "claim_match",
    issuer: stringMatchFromOneof(cm.iss) as StringMatch,
    subject: stringMatchFromOneof(cm.sub) as StringMatch,
    ...(audience && { audience }),
    claims: { ...cm.claims },
    claimPatterns: { ...cm.claimPatterns },
  };
}
