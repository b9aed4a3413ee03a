/**
 * How an identity is laid out in a row, the same on every engine: the relationship as JSON
 * beside the columns that index it (its kind, and the exact issuer and subject when it has
 * them), the metadata as JSON. Each engine's repository reads and writes its own table through
 * these, so the layout cannot drift between engines.
 */
import {
  type ClaimMatchRelationship,
  type IdentityMetadataFields,
  type IdentityRecord,
  RELATIONSHIP_TYPES,
  type Relationship,
  type StringMatch,
  userIdentityUid,
} from "./identities.js";

/** An identity row as every engine's table returns it. */
export interface StoredIdentityRow {
  readonly uid: string;
  readonly parentUid: string | null;
  readonly name: string;
  readonly description: string;
  readonly email: string;
  readonly emailUnverified: string;
  readonly company: string;
  readonly metadata: string;
  readonly relationship: string;
  readonly lastSeenTime: number | null;
  readonly createTime: number;
  readonly updateTime: number;
}

/** The columns that hold a relationship. */
export function relationshipColumns(r: Relationship): {
  relationshipType: number;
  relationship: string;
  claimIssuer: string | null;
  claimSubject: string | null;
} {
  const exact = (m: StringMatch | undefined) => (m !== undefined && "exact" in m ? m.exact : null);
  return {
    relationshipType: RELATIONSHIP_TYPES[r.kind],
    relationship: JSON.stringify(r),
    claimIssuer: r.kind === "static_keys" ? r.issuer : r.kind === "claim_match" ? exact(r.issuer) : null,
    claimSubject: r.kind === "static_keys" ? r.subject : r.kind === "claim_match" ? exact(r.subject) : null,
  };
}

export function identityRecordOf(row: StoredIdentityRow): IdentityRecord {
  // "{}" (the column default) is a user identity without a relationship.
  const relationship = JSON.parse(row.relationship) as Partial<Relationship>;
  return {
    uid: row.uid,
    parentUid: row.parentUid,
    name: row.name,
    description: row.description,
    email: row.email,
    emailUnverified: row.emailUnverified,
    company: row.company,
    metadata: parseIdentityMetadata(row.metadata),
    ...(relationship.kind !== undefined && { relationship: relationship as Relationship }),
    ...(row.lastSeenTime !== null && { lastSeenTime: row.lastSeenTime }),
    createTime: row.createTime,
    updateTime: row.updateTime,
  };
}

/** The metadata column ("{}" by default): only string and boolean members are kept. */
export function parseIdentityMetadata(json: string): IdentityMetadataFields {
  const parsed = JSON.parse(json) as Record<string, unknown>;
  return Object.fromEntries(Object.entries(parsed).filter(([, v]) => typeof v === "string" || typeof v === "boolean")) as IdentityMetadataFields;
}

/** The row of a person's user identity at first sign-in: a root, matched exactly by its issuer and subject. */
export function newUserIdentityRow(user: { readonly issuer: string; readonly subject: string; readonly name: string; readonly email: string }, now: number) {
  const relationship: ClaimMatchRelationship = {
    kind: "claim_match",
    issuer: { exact: user.issuer },
    subject: { exact: user.subject },
    claims: {},
    claimPatterns: {},
  };
  return {
    uid: userIdentityUid(user.issuer, user.subject),
    parentUid: null,
    name: user.name,
    description: "",
    email: user.email,
    emailUnverified: "",
    company: "",
    metadata: "{}",
    ...relationshipColumns(relationship),
    lastSeenTime: now,
    createTime: now,
    updateTime: now,
  };
}
