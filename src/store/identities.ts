/**
 * identities: the records, filters, orders and repository interface every engine shares (the SQLite
 * implementation is src/store/sqlite/identities.ts).
 */
import { createHash } from "node:crypto";
import type { GrantView } from "./grant-view.js";
import type { KeysetQuery, UidpFilter } from "./lists.js";
import { defineOrders } from "./orders.js";

/** A value matched exactly, or by an RE2 pattern that must match the whole value. */
export type StringMatch = { readonly exact: string } | { readonly pattern: string };

/** OIDC claim matching: issuer and subject required, audience optional. */
export interface ClaimMatchRelationship {
  readonly kind: "claim_match";
  readonly issuer: StringMatch;
  readonly subject: StringMatch;
  readonly audience?: StringMatch;
  /** Claim name → exact value. */
  readonly claims: Readonly<Record<string, string>>;
  /** Claim name → RE2 pattern (full match). */
  readonly claimPatterns: Readonly<Record<string, string>>;
}

/** Tokens signed by pre-registered keys. */
export interface StaticKeysRelationship {
  readonly kind: "static_keys";
  readonly issuer: string;
  readonly subject: string;
  /** The JWKS JSON document, as given. */
  readonly issuerKeys: string;
  /** ms since the epoch. */
  readonly expirationTime: number;
  /** At most one; when set it replaces the server's allowed audiences. */
  readonly audiences: readonly string[];
}

/** An AWS IAM principal. */
export interface AwsIdentityRelationship {
  readonly kind: "aws_identity";
  /** 12 digits. */
  readonly awsAccount: string;
  readonly arn?: StringMatch;
  readonly userId?: StringMatch;
}

/** Reserved for a platform service. */
export interface ServicePrincipalRelationship {
  readonly kind: "service_principal";
  /** ServicePrincipal number (never UNSPECIFIED). */
  readonly servicePrincipal: number;
}

export type Relationship = ClaimMatchRelationship | StaticKeysRelationship | AwsIdentityRelationship | ServicePrincipalRelationship;
export type RelationshipKind = Relationship["kind"];

/** The `relationship_type` column: the RelationshipType number of each kind (0 = none). */
export const RELATIONSHIP_TYPES: Readonly<Record<RelationshipKind, number>> = {
  claim_match: 1,
  static_keys: 2,
  aws_identity: 3,
  service_principal: 4,
};

export interface IdentityRecord {
  readonly uid: string;
  /** null for a user identity (a root). */
  readonly parentUid: string | null;
  readonly name: string;
  readonly description: string;
  /** Verified email, set by login. */
  readonly email: string;
  readonly emailUnverified: string;
  readonly company: string;
  /**
   * The caller-editable profile fields other than company (UpdateIdentityMetadata), keyed by
   * their proto field name; absent = never set.
   */
  readonly metadata: IdentityMetadataFields;
  /** Absent for a user identity that has none. */
  readonly relationship?: Relationship;
  /** ms since the epoch; absent until the identity is first used. */
  readonly lastSeenTime?: number;
  readonly createTime: number;
  readonly updateTime: number;
}

export interface NewIdentity {
  readonly parentUid: string;
  readonly name: string;
  readonly description: string;
  readonly company: string;
  readonly relationship: Relationship;
}

/** Fields an update may change (each the complete new value). */
export interface IdentityChanges {
  readonly name?: string;
  readonly description?: string;
  readonly company?: string;
  readonly relationship?: Relationship;
}

/** Profile answers an identity gives about itself: text or yes/no, by field name. */
export type IdentityMetadataFields = Readonly<Record<string, string | boolean>>;

/** What UpdateIdentityMetadata changes: company, and metadata fields merged over the stored ones. */
export interface IdentityMetadataChanges {
  readonly company?: string;
  readonly metadata?: IdentityMetadataFields;
}

/** Each order an identity list can take → its record field, also its column's key on the table. */
/** The orders a identities list takes (orders.ts). */
export const IDENTITY_ORDERS = defineOrders<IdentityRecord>()({ uid: "uid", name: "name", create_time: "createTime", update_time: "updateTime" });
export type IdentityOrder = (typeof IDENTITY_ORDERS.keys)[number];

export interface IdentityListFilter {
  readonly uidp: UidpFilter;
  /** Exact, case-sensitive name. */
  readonly name?: string;
  /** Only identities with this kind of relationship. */
  readonly kind?: RelationshipKind;
  /** Authorization's visible scopes (list-query.ts withinConditions); undefined = all. */
  readonly within?: readonly string[];
}

export interface IdentitiesRepository {
  get(uid: string): Promise<IdentityRecord | undefined>;
  /** Inserts an identity with a fresh uid under its group. @throws NOT_FOUND when the group does not exist. */
  create(identity: NewIdentity, now: number): Promise<IdentityRecord>;
  /**
   * Reads the identity, asks `plan` for the changes (it may throw an ApiError, e.g. when the
   * change would leave no relationship, or when the anti-escalation guard reading `view`
   * refuses it) and writes them, in one transaction; bumps update_time.
   * @throws NOT_FOUND.
   */
  update(uid: string, plan: (current: IdentityRecord, view: GrantView) => IdentityChanges, now: number): Promise<IdentityRecord>;
  /**
   * Deletes the identity and its role bindings in one transaction, after `guard` (the
   * caller's anti-escalation check). @throws NOT_FOUND; FAILED_PRECONDITION LAST_OWNER when
   * one of its bindings is an organization's last owner binding (grant-view.ts).
   */
  delete(uid: string, guard?: (view: GrantView, current: IdentityRecord) => void): Promise<void>;
  list(filter: IdentityListFilter, page: KeysetQuery<IdentityOrder>): Promise<IdentityRecord[]>;
  count(filter: IdentityListFilter): Promise<number>;
  /**
   * Records that the identity was just used (token exchange, login): sets last_seen_time,
   * leaving update_time alone since the resource did not change. Returns false when there is
   * no such identity.
   */
  touchLastSeen(uid: string, now: number): Promise<boolean>;
  /**
   * Sets the identity's own metadata (company, and the given metadata fields over the
   * stored ones) and bumps update_time, in one transaction. @throws NOT_FOUND.
   */
  updateMetadata(uid: string, changes: IdentityMetadataChanges, now: number): Promise<IdentityRecord>;
  /**
   * The user identity (a root) of the person behind (issuer, subject), created on first use
   * with an exact claim match; its uid is `userIdentityUid(issuer, subject)`, so the same
   * person always gets the same identity. Sets last_seen_time. One transaction.
   */
  findOrCreateUser(
    user: { readonly issuer: string; readonly subject: string; readonly name: string; readonly email: string },
    now: number,
  ): Promise<IdentityRecord>;
}

/**
 * The deterministic uid of a user identity: SHA-1 (20 bytes, the size of a root UID) of
 * issuer and subject. The published algorithm is unknown (docs/published-api.md "Not known"); this one only
 * has to be stable and collision-free in practice.
 */
export function userIdentityUid(issuer: string, subject: string): string {
  return createHash("sha1").update(`${issuer}\u0000${subject}`).digest("hex");
}
