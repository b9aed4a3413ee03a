/**
 * Identities repository: every read and write of the `identities` table.
 *
 * An assumable identity lives under a group (uid = group uid + "/" + 16 hex); user identities
 * (made at a user's first sign-in, docs/auth.md "The token exchange") are roots. The relationship (how a token proves it is this
 * identity) is one JSON column in the store's own shape (`Relationship`), with its
 * RelationshipType number in `relationship_type` for filtering, and the exact issuer/subject
 * of a claim match or static keys copied to `claim_issuer`/`claim_subject` (indexed, and read
 * by role-binding hydration). Every check-then-write runs in one BEGIN IMMEDIATE transaction;
 * errors are ApiErrors; no proto types enter here.
 */
import { createHash } from "node:crypto";
import { eq, sql } from "drizzle-orm";
import { notFound } from "../errors/api-error.js";
import type { Db } from "./db.js";
import { type GrantView, grantView, requireOwnersRemain } from "./grant-view.js";
import { groupCommit } from "./group-commit.js";
import { requireGroup } from "./references.js";
import {
  allOf,
  type Bind,
  type KeysetQuery,
  preparedLists,
  type UidpFilter,
  uidpConditions,
  uidpShape,
  withinConditions,
  withinShape,
} from "./list-query.js";
import { identities, type IdentityRow, roleBindings } from "./schema.js";
import { newUidp } from "./uidp.js";

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

export type Relationship =
  | ClaimMatchRelationship
  | StaticKeysRelationship
  | AwsIdentityRelationship
  | ServicePrincipalRelationship;
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
const ORDER_FIELDS = { uid: "uid", name: "name", create_time: "createTime", update_time: "updateTime" } as const;
export type IdentityOrder = keyof typeof ORDER_FIELDS;

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
   * The user identity (a root) of the person behind (issuer, subject), created on first use
   * with an exact claim match; its uid is `userIdentityUid(issuer, subject)`, so the same
   * person always gets the same identity. Sets last_seen_time. One transaction.
   */
  /**
   * Sets the identity's own metadata (company, and the given metadata fields over the
   * stored ones) and bumps update_time, in one transaction. @throws NOT_FOUND.
   */
  updateMetadata(uid: string, changes: IdentityMetadataChanges, now: number): Promise<IdentityRecord>;
  findOrCreateUser(user: { readonly issuer: string; readonly subject: string; readonly name: string; readonly email: string }, now: number): Promise<IdentityRecord>;
}

/**
 * The deterministic uid of a user identity: SHA-1 (20 bytes, the size of a root UID) of
 * issuer and subject. The published algorithm is unknown (docs/published-api.md "Not known"); this one only
 * has to be stable and collision-free in practice.
 */
export function userIdentityUid(issuer: string, subject: string): string {
  return createHash("sha1").update(`${issuer}\u0000${subject}`).digest("hex");
}

export function createIdentitiesRepository(db: Db): IdentitiesRepository {
  const getStmt = db.select().from(identities).where(eq(identities.uid, sql.placeholder("uid"))).prepare();
  const touchStmt = db
    .update(identities)
    .set({ lastSeenTime: sql.placeholder("now") as unknown as number })
    .where(eq(identities.uid, sql.placeholder("uid")))
    .prepare();

  const where = (f: IdentityListFilter, bind: Bind = (v) => v) =>
    allOf([
      ...uidpConditions(identities.uid, identities.parentUid, f.uidp, bind),
      f.name !== undefined ? eq(identities.name, bind(f.name) as string) : undefined,
      f.kind !== undefined ? eq(identities.relationshipType, bind(RELATIONSHIP_TYPES[f.kind]) as number) : undefined,
      withinConditions(identities.uid, f.within, bind),
    ]);
  // list and count run statements prepared once per query shape (list-query.ts preparedLists);
  // the shape must fix the SQL text that `where` produces.
  const filterShape = (f: IdentityListFilter) =>
    `${uidpShape(f.uidp)}|${f.name !== undefined ? "n" : ""}${f.kind !== undefined ? "k" : ""}|${withinShape(f.within)}`;
  const lists = preparedLists(db, identities, identities.uid, "identities");

  return {
    async get(uid) {
      const row = getStmt.get({ uid });
      return row && toRecord(row);
    },

    async create(identity, now) {
      return groupCommit(db, (tx) => {
        requireGroup(tx, identity.parentUid);
        const row: IdentityRow = {
          uid: newUidp(identity.parentUid),
          parentUid: identity.parentUid,
          name: identity.name,
          description: identity.description,
          email: "",
          emailUnverified: "",
          company: identity.company,
          metadata: "{}",
          ...relationshipColumns(identity.relationship),
          lastSeenTime: null,
          createTime: now,
          updateTime: now,
        };
        tx.insert(identities).values(row).run();
        return toRecord(row);
      });
    },

    async update(uid, plan, now) {
      return groupCommit(db, (tx) => {
        const existing = tx.select().from(identities).where(eq(identities.uid, uid)).get();
        if (!existing) throw notFound("identity", uid);
        const { relationship, ...own } = plan(toRecord(existing), grantView(tx));
        tx.update(identities)
          .set({ ...own, ...(relationship && relationshipColumns(relationship)), updateTime: now })
          .where(eq(identities.uid, uid))
          .run();
        return toRecord(tx.select().from(identities).where(eq(identities.uid, uid)).get() as IdentityRow);
      });
    },

    async delete(uid, guard) {
      await groupCommit(db, (tx) => {
        const existing = tx.select().from(identities).where(eq(identities.uid, uid)).get();
        if (!existing) throw notFound("identity", uid);
        guard?.(grantView(tx), toRecord(existing));
        const bindings = tx.select({ uid: roleBindings.uid }).from(roleBindings).where(eq(roleBindings.identityUid, uid)).all();
        requireOwnersRemain(
          tx,
          bindings.map((b) => b.uid),
        );
        tx.delete(roleBindings).where(eq(roleBindings.identityUid, uid)).run();
        tx.delete(identities).where(eq(identities.uid, uid)).run();
      });
    },

    async list(filter, page) {
      const rows = lists.page(filterShape(filter), (bind) => where(filter, bind), identities[ORDER_FIELDS[page.order]], page) as IdentityRow[];
      return rows.map(toRecord);
    },

    async count(filter) {
      return lists.count(filterShape(filter), (bind) => where(filter, bind));
    },

    async updateMetadata(uid, changes, now) {
      return groupCommit(db, (tx) => {
        const existing = tx.select().from(identities).where(eq(identities.uid, uid)).get();
        if (!existing) throw notFound("identity", uid);
        const metadata = { ...parseMetadata(existing.metadata), ...changes.metadata };
        const set = { metadata: JSON.stringify(metadata), ...(changes.company !== undefined && { company: changes.company }), updateTime: now };
        tx.update(identities).set(set).where(eq(identities.uid, uid)).run();
        return toRecord({ ...existing, ...set });
      });
    },

    async findOrCreateUser(user, now) {
      return groupCommit(db, (tx) => {
        const uid = userIdentityUid(user.issuer, user.subject);
        const existing = tx.select().from(identities).where(eq(identities.uid, uid)).get();
        if (existing) {
          tx.update(identities).set({ lastSeenTime: now }).where(eq(identities.uid, uid)).run();
          return toRecord({ ...existing, lastSeenTime: now });
        }
        const relationship: ClaimMatchRelationship = {
          kind: "claim_match",
          issuer: { exact: user.issuer },
          subject: { exact: user.subject },
          claims: {},
          claimPatterns: {},
        };
        const row: IdentityRow = {
          uid,
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
        tx.insert(identities).values(row).run();
        return toRecord(row);
      });
    },

    async touchLastSeen(uid, now) {
      // Through group commit like every API write: it waits for the lock without blocking reads.
      return groupCommit(db, () => touchStmt.run({ uid, now }).changes > 0);
    },
  };
}

/** The cursor value of a row for an order. */
export function identityOrderValue(row: IdentityRecord, order: IdentityOrder): string | number {
  return row[ORDER_FIELDS[order]];
}

/** The columns that hold a relationship. */
function relationshipColumns(r: Relationship): Pick<IdentityRow, "relationshipType" | "relationship" | "claimIssuer" | "claimSubject"> {
  const exact = (m: StringMatch | undefined) => (m !== undefined && "exact" in m ? m.exact : null);
  return {
    relationshipType: RELATIONSHIP_TYPES[r.kind],
    relationship: JSON.stringify(r),
    claimIssuer: r.kind === "static_keys" ? r.issuer : r.kind === "claim_match" ? exact(r.issuer) : null,
    claimSubject: r.kind === "static_keys" ? r.subject : r.kind === "claim_match" ? exact(r.subject) : null,
  };
}

function toRecord(row: IdentityRow): IdentityRecord {
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
    metadata: parseMetadata(row.metadata),
    ...(relationship.kind !== undefined && { relationship: relationship as Relationship }),
    ...(row.lastSeenTime !== null && { lastSeenTime: row.lastSeenTime }),
    createTime: row.createTime,
    updateTime: row.updateTime,
  };
}

/** The metadata column ("{}" by default): only string and boolean members are kept. */
function parseMetadata(json: string): IdentityMetadataFields {
  const parsed = JSON.parse(json) as Record<string, unknown>;
  return Object.fromEntries(Object.entries(parsed).filter(([, v]) => typeof v === "string" || typeof v === "boolean")) as IdentityMetadataFields;
}
