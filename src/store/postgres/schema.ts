/**
 * The PostgreSQL schema: src/store/sqlite/schema.ts (the SQLite one) table for table, column for
 * column, index for index, under the same names, so that one set of repository queries and
 * one row shape serve both engines, and `trellis db copy` moves rows across verbatim.
 * Its migrations are generated into src/store/postgres/migrations by
 * `npx drizzle-kit generate --config drizzle.postgres.config.ts` and committed.
 *
 * Where the two dialects differ, the choice keeps PostgreSQL's behaviour identical to SQLite's:
 * - every text column is `text COLLATE "C"`: SQLite compares text bytewise (BINARY), and the
 *   keyset pagination, the UIDP descendant ranges (`uid > 'P/' AND uid < 'P0'`) and every
 *   ORDER BY on a name must order the same on both engines, whatever collation the database
 *   was created with (a managed PostgreSQL is usually en_US.UTF-8, where 'B' < 'a' is false).
 * - timestamps stay integer milliseconds since the epoch (bigint, read as a JS number), the
 *   representation the repositories and page tokens use, not `timestamptz` (microseconds,
 *   a Date): nothing is converted, so nothing can round.
 * - SQLite's 0/1 boolean columns are `boolean`; blobs are `bytea` (both read as Buffer).
 * - tag_history.seq, SQLite's AUTOINCREMENT, is a bigint identity "by default", so a copy
 *   can insert the source's values (the copy then moves the sequence past them).
 */
import { sql } from "drizzle-orm";
import { type AnyPgColumn, bigint, boolean, customType, index, integer, pgTable, primaryKey, smallint, uniqueIndex } from "drizzle-orm/pg-core";

/** Text compared bytewise, as SQLite's default BINARY collation does (see the header). */
const ctext = customType<{ data: string; driverData: string }>({
  dataType: () => 'text COLLATE "C"',
});

/** Binary data as a Buffer (node-postgres returns bytea as a Buffer). */
const bytea = customType<{ data: Buffer; driverData: Buffer }>({
  dataType: () => "bytea",
});

/** A moment as integer milliseconds since the epoch (UTC), read as a JS number. */
const millis = (name: string) => bigint(name, { mode: "number" });

/** The group tree. A root (organization) has no parent. */
export const groups = pgTable(
  "groups",
  {
    uid: ctext("uid").primaryKey(),
    parentUid: ctext("parent_uid").references((): AnyPgColumn => groups.uid, { onDelete: "restrict" }),
    name: ctext("name").notNull(),
    description: ctext("description").notNull().default(""),
    verified: boolean("verified").notNull().default(false),
    /** OrgKind number; only meaningful on roots (children report their root's). */
    kind: integer("kind").notNull().default(0),
    createTime: millis("create_time").notNull(),
    updateTime: millis("update_time").notNull(),
  },
  (t) => [
    index("groups_parent_uid_idx").on(t.parentUid, t.uid),
    index("groups_name_uid_idx").on(t.name, t.uid),
    index("groups_create_time_uid_idx").on(t.createTime, t.uid),
    index("groups_update_time_uid_idx").on(t.updateTime, t.uid),
  ],
);

/**
 * Server secrets that must survive restarts and be shared by every process using this
 * database (page-token key now; token-signing keys later).
 */
export const serverKeys = pgTable("server_keys", {
  name: ctext("name").primaryKey(),
  value: bytea("value").notNull(),
  createTime: millis("create_time").notNull().default(sql`(floor(extract(epoch from clock_timestamp()) * 1000))::bigint`),
});

/**
 * Identities. Assumable identities live under a group (uid = group uid + "/" + 16 hex);
 * user identities are roots (parent null). The relationship (claim match, static keys, AWS
 * identity or service principal) is a JSON document of our own shape in `relationship`;
 * an exact claim-match issuer/subject is also kept in columns so the token exchange and
 * LookupIdentity find it by index.
 */
export const identities = pgTable(
  "identities",
  {
    uid: ctext("uid").primaryKey(),
    parentUid: ctext("parent_uid").references(() => groups.uid, { onDelete: "restrict" }),
    name: ctext("name").notNull(),
    description: ctext("description").notNull().default(""),
    email: ctext("email").notNull().default(""),
    emailUnverified: ctext("email_unverified").notNull().default(""),
    company: ctext("company").notNull().default(""),
    /**
     * JSON object of the caller-editable IdentityMetadata fields other than company (which
     * has its own column): UpdateIdentityMetadata's marketing/profile answers. Text fields
     * are strings, updates_opt_in and self_serve booleans; absent = unset.
     */
    metadata: ctext("metadata").notNull().default("{}"),
    /** RelationshipType number of the set relationship (0 for none). */
    relationshipType: integer("relationship_type").notNull().default(0),
    /** JSON of the relationship, in the store's own shape (see identities.ts). */
    relationship: ctext("relationship").notNull().default("{}"),
    claimIssuer: ctext("claim_issuer"),
    claimSubject: ctext("claim_subject"),
    lastSeenTime: millis("last_seen_time"),
    createTime: millis("create_time").notNull(),
    updateTime: millis("update_time").notNull(),
  },
  (t) => [
    index("identities_parent_uid_idx").on(t.parentUid, t.uid),
    index("identities_name_uid_idx").on(t.name, t.uid),
    index("identities_create_time_uid_idx").on(t.createTime, t.uid),
    index("identities_update_time_uid_idx").on(t.updateTime, t.uid),
    index("identities_claim_idx").on(t.claimIssuer, t.claimSubject),
  ],
);

/**
 * Roles. Built-in roles are roots (parent null, `builtIn` true) seeded at start-up; custom
 * roles live under a group. `capabilities` is a JSON array of Capability numbers.
 */
export const roles = pgTable(
  "roles",
  {
    uid: ctext("uid").primaryKey(),
    parentUid: ctext("parent_uid").references(() => groups.uid, { onDelete: "restrict" }),
    name: ctext("name").notNull(),
    description: ctext("description").notNull().default(""),
    capabilities: ctext("capabilities").notNull().default("[]"),
    builtIn: boolean("built_in").notNull().default(false),
    createTime: millis("create_time").notNull(),
    updateTime: millis("update_time").notNull(),
  },
  (t) => [
    index("roles_parent_uid_idx").on(t.parentUid, t.uid),
    index("roles_name_uid_idx").on(t.name, t.uid),
    index("roles_create_time_uid_idx").on(t.createTime, t.uid),
    index("roles_update_time_uid_idx").on(t.updateTime, t.uid),
  ],
);

/**
 * Role bindings: identity + role at a group (uid = group uid + "/" + 16 hex). A role cannot
 * be deleted while bound (RESTRICT); deleting an identity removes its bindings (CASCADE,
 * done explicitly in the identity delete transaction, with the FK as the backstop).
 */
export const roleBindings = pgTable(
  "role_bindings",
  {
    uid: ctext("uid").primaryKey(),
    groupUid: ctext("group_uid")
      .notNull()
      .references(() => groups.uid, { onDelete: "restrict" }),
    identityUid: ctext("identity_uid")
      .notNull()
      .references(() => identities.uid, { onDelete: "cascade" }),
    roleUid: ctext("role_uid")
      .notNull()
      .references(() => roles.uid, { onDelete: "restrict" }),
    createTime: millis("create_time").notNull(),
  },
  (t) => [
    uniqueIndex("role_bindings_unique_idx").on(t.groupUid, t.identityUid, t.roleUid),
    index("role_bindings_group_uid_idx").on(t.groupUid, t.uid),
    index("role_bindings_identity_idx").on(t.identityUid, t.uid),
    index("role_bindings_role_idx").on(t.roleUid, t.uid),
    index("role_bindings_create_time_uid_idx").on(t.createTime, t.uid),
  ],
);

/** Identity providers under a group. `oidc` is a JSON document; the secret never leaves the store on reads. */
export const identityProviders = pgTable(
  "identity_providers",
  {
    uid: ctext("uid").primaryKey(),
    parentUid: ctext("parent_uid")
      .notNull()
      .references(() => groups.uid, { onDelete: "restrict" }),
    name: ctext("name").notNull(),
    description: ctext("description").notNull().default(""),
    defaultRole: ctext("default_role").notNull(),
    oidc: ctext("oidc").notNull().default("{}"),
    createTime: millis("create_time").notNull(),
    updateTime: millis("update_time").notNull(),
  },
  (t) => [
    index("identity_providers_parent_uid_idx").on(t.parentUid, t.uid),
    index("identity_providers_name_uid_idx").on(t.name, t.uid),
    index("identity_providers_create_time_uid_idx").on(t.createTime, t.uid),
    index("identity_providers_update_time_uid_idx").on(t.updateTime, t.uid),
  ],
);

/** Account associations: at most one per group; its uid IS the group's uid. Provider blocks are JSON. */
export const accountAssociations = pgTable(
  "account_associations",
  {
    uid: ctext("uid")
      .primaryKey()
      .references(() => groups.uid, { onDelete: "restrict" }),
    name: ctext("name").notNull(),
    description: ctext("description").notNull().default(""),
    providers: ctext("providers").notNull().default("{}"),
    createTime: millis("create_time").notNull(),
    updateTime: millis("update_time").notNull(),
  },
  (t) => [index("account_associations_name_uid_idx").on(t.name, t.uid), index("account_associations_create_time_uid_idx").on(t.createTime, t.uid)],
);

/**
 * RequestGroupAccess: one row per (group, identity) that asked to join a verified
 * organization. The primary key is what makes a repeat request RESOURCE_EXHAUSTED. Rows go
 * with their group or identity (cascade): they are a record of interest, not a child resource
 * that should block a delete.
 */
export const groupAccessRequests = pgTable(
  "group_access_requests",
  {
    groupUid: ctext("group_uid")
      .notNull()
      .references(() => groups.uid, { onDelete: "cascade" }),
    identityUid: ctext("identity_uid")
      .notNull()
      .references(() => identities.uid, { onDelete: "cascade" }),
    createTime: millis("create_time").notNull(),
  },
  (t) => [primaryKey({ columns: [t.groupUid, t.identityUid] }), index("group_access_requests_identity_uid_idx").on(t.identityUid)],
);

/**
 * Group invites under a group. Only a hash of the code is stored; the code itself is shown
 * once, on create.
 */
export const groupInvites = pgTable(
  "group_invites",
  {
    uid: ctext("uid").primaryKey(),
    parentUid: ctext("parent_uid")
      .notNull()
      .references(() => groups.uid, { onDelete: "restrict" }),
    roleUid: ctext("role_uid")
      .notNull()
      .references(() => roles.uid, { onDelete: "restrict" }),
    email: ctext("email").notNull().default(""),
    singleUse: boolean("single_use").notNull().default(false),
    codeHash: ctext("code_hash").notNull(),
    keyId: ctext("key_id").notNull(),
    expirationTime: millis("expiration_time").notNull(),
    createTime: millis("create_time").notNull(),
    /** Who made it (src/auth/grant-guard.ts), judged again at every redemption; null on invites made before it was kept. */
    creator: ctext("creator"),
  },
  (t) => [
    index("group_invites_parent_uid_idx").on(t.parentUid, t.uid),
    index("group_invites_key_id_idx").on(t.keyId),
    index("group_invites_create_time_uid_idx").on(t.createTime, t.uid),
    index("group_invites_expiration_time_uid_idx").on(t.expirationTime, t.uid),
  ],
);

/**
 * Image repos under a group (uid = group uid + "/" + 16 hex). A repo name is unique within its
 * group (v1 CreateRepo updates "the group's repo of the same name"). List-valued fields are
 * JSON arrays of strings.
 */
export const repos = pgTable(
  "repos",
  {
    uid: ctext("uid").primaryKey(),
    parentUid: ctext("parent_uid")
      .notNull()
      .references(() => groups.uid, { onDelete: "restrict" }),
    name: ctext("name").notNull(),
    description: ctext("description").notNull().default(""),
    /** v2beta1 CatalogTier number. */
    catalogTier: integer("catalog_tier").notNull().default(0),
    bundles: ctext("bundles").notNull().default("[]"),
    aliases: ctext("aliases").notNull().default("[]"),
    activeTags: ctext("active_tags").notNull().default("[]"),
    createTime: millis("create_time").notNull(),
    updateTime: millis("update_time").notNull(),
  },
  (t) => [
    uniqueIndex("repos_parent_name_idx").on(t.parentUid, t.name),
    index("repos_parent_uid_idx").on(t.parentUid, t.uid),
    index("repos_name_uid_idx").on(t.name, t.uid),
    index("repos_create_time_uid_idx").on(t.createTime, t.uid),
    index("repos_update_time_uid_idx").on(t.updateTime, t.uid),
  ],
);

/**
 * Tags under a repo (uid = repo uid + "/" + 16 hex), unique by name within the repo (CreateTag
 * is an upsert). `generated` classifies build-system tags at write time (0 none, 1 referrer
 * "sha256-*", 2 dated "*-20yymmdd", 3 epoch "*-r<N>") so ListTags can leave them out with an
 * equality instead of pattern matching every row. Deleting a repo deletes its tags.
 */
export const tags = pgTable(
  "tags",
  {
    uid: ctext("uid").primaryKey(),
    repoUid: ctext("repo_uid")
      .notNull()
      .references(() => repos.uid, { onDelete: "cascade" }),
    name: ctext("name").notNull(),
    digest: ctext("digest").notNull(),
    deprecated: boolean("deprecated").notNull().default(false),
    bundles: ctext("bundles").notNull().default("[]"),
    generated: integer("generated").notNull().default(0),
    updateTime: millis("update_time").notNull(),
  },
  (t) => [
    uniqueIndex("tags_repo_name_idx").on(t.repoUid, t.name),
    index("tags_repo_uid_idx").on(t.repoUid, t.uid),
    index("tags_name_uid_idx").on(t.name, t.uid),
    index("tags_digest_uid_idx").on(t.digest, t.uid),
    index("tags_update_time_uid_idx").on(t.updateTime, t.uid),
  ],
);

/**
 * Each digest a tag has pointed at, from the time it moved there (v1 ListTagHistory). Written
 * by every tag writer in the same transaction as the tag (tags.ts `recordTagMove`): a new
 * tag and a tag whose digest changed get a row; deprecating or relabelling does not. `seq`
 * orders moves within the same millisecond. Goes with its tag.
 */
export const tagHistory = pgTable(
  "tag_history",
  {
    seq: bigint("seq", { mode: "number" }).primaryKey().generatedByDefaultAsIdentity(),
    tagUid: ctext("tag_uid")
      .notNull()
      .references(() => tags.uid, { onDelete: "cascade" }),
    digest: ctext("digest").notNull(),
    moveTime: millis("move_time").notNull(),
  },
  (t) => [index("tag_history_tag_time_idx").on(t.tagUid, t.moveTime, t.seq)],
);

/**
 * The README of a repo (Markdown, at most README_MAX_BYTES), one row per repo that has one;
 * kept out of `repos` so repo lists never read it. Goes with its repo.
 */
export const repoReadmes = pgTable("repo_readmes", {
  repoUid: ctext("repo_uid")
    .primaryKey()
    .references(() => repos.uid, { onDelete: "cascade" }),
  content: ctext("content").notNull(),
  updateTime: millis("update_time").notNull(),
});

/**
 * How a repo is deployed (v1 Deployment): its Helm charts as a JSON array of
 * {source?, repo, chart?}. At most one per repo; goes with its repo.
 */
export const repoDeployments = pgTable("repo_deployments", {
  repoUid: ctext("repo_uid")
    .primaryKey()
    .references(() => repos.uid, { onDelete: "cascade" }),
  charts: ctext("charts").notNull().default("[]"),
  createTime: millis("create_time").notNull(),
  updateTime: millis("update_time").notNull(),
});

/**
 * Registry defaults of an organization (v1 RegistrySettings). A missing row reads as the
 * defaults (both false). Goes with its group.
 */
export const registrySettings = pgTable("registry_settings", {
  groupUid: ctext("group_uid")
    .primaryKey()
    .references(() => groups.uid, { onDelete: "cascade" }),
  uniqueTags: boolean("unique_tags").notNull().default(false),
  eolGracePeriod: boolean("eol_grace_period").notNull().default(false),
  updateTime: millis("update_time").notNull(),
});

/**
 * End-of-life facts about a tag's main package (v1 ListEolTags), loaded by `trellis import`:
 * Trellis has no package feed of its own. `mainPackageVersion` is the v1 PackageVersion as
 * proto JSON, uninterpreted. Goes with its tag.
 */
export const eolTags = pgTable("eol_tags", {
  tagUid: ctext("tag_uid")
    .primaryKey()
    .references(() => tags.uid, { onDelete: "cascade" }),
  mainPackageName: ctext("main_package_name").notNull().default(""),
  tagStatus: integer("tag_status").notNull().default(0),
  graceStatus: integer("grace_status").notNull().default(0),
  gracePeriodExpiry: millis("grace_period_expiry"),
  mainPackageVersion: ctext("main_package_version"),
  updateTime: millis("update_time").notNull(),
});

/**
 * Vulnerability advisories under a group (uid = group uid + "/" + 16 hex), read-only over the
 * API and written by `trellis import`. One advisory is one (advisory_id, artifact_name) in a
 * group, which is the import's identity key. `aliases` and `severities` are JSON for output;
 * aliases are also rows of advisory_aliases so the `aliases` filter is an index lookup.
 * `latestEventType` is the EventTypeFilter number of the most recent APPROVED event (0 when
 * none), kept by the writer for the `latest_event_type` filter.
 */
export const advisories = pgTable(
  "advisories",
  {
    uid: ctext("uid").primaryKey(),
    parentUid: ctext("parent_uid")
      .notNull()
      .references(() => groups.uid, { onDelete: "restrict" }),
    advisoryId: ctext("advisory_id").notNull(),
    legacyAdvisoryId: ctext("legacy_advisory_id"),
    author: ctext("author").notNull().default(""),
    artifactName: ctext("artifact_name").notNull(),
    artifactType: ctext("artifact_type").notNull().default(""),
    artifactArchitecture: ctext("artifact_architecture").notNull().default(""),
    componentName: ctext("component_name").notNull().default(""),
    componentLocation: ctext("component_location").notNull().default(""),
    componentType: ctext("component_type").notNull().default(""),
    /** Origin package the artifact is built from (defaults to artifact_name). */
    origin: ctext("origin").notNull(),
    aliases: ctext("aliases").notNull().default("[]"),
    severities: ctext("severities").notNull().default("[]"),
    latestEventType: integer("latest_event_type").notNull().default(0),
    deleteTime: millis("delete_time"),
    createTime: millis("create_time").notNull(),
    updateTime: millis("update_time").notNull(),
  },
  (t) => [
    uniqueIndex("advisories_key_idx").on(t.parentUid, t.advisoryId, t.artifactName),
    index("advisories_parent_uid_idx").on(t.parentUid, t.uid),
    index("advisories_advisory_id_uid_idx").on(t.advisoryId, t.uid),
    index("advisories_legacy_id_idx").on(t.legacyAdvisoryId, t.uid),
    index("advisories_artifact_name_idx").on(t.artifactName, t.uid),
    index("advisories_artifact_type_idx").on(t.artifactType, t.uid),
    index("advisories_artifact_arch_idx").on(t.artifactArchitecture, t.uid),
    index("advisories_component_name_idx").on(t.componentName, t.uid),
    index("advisories_component_type_idx").on(t.componentType, t.uid),
    index("advisories_component_location_idx").on(t.componentLocation, t.uid),
    index("advisories_origin_idx").on(t.origin, t.uid),
    index("advisories_latest_event_type_idx").on(t.latestEventType, t.uid),
    index("advisories_create_time_uid_idx").on(t.createTime, t.uid),
    index("advisories_update_time_uid_idx").on(t.updateTime, t.uid),
  ],
);

/** One alias (CVE/GHSA id) of an advisory, for the `aliases` filter. */
export const advisoryAliases = pgTable(
  "advisory_aliases",
  {
    advisoryUid: ctext("advisory_uid")
      .notNull()
      .references(() => advisories.uid, { onDelete: "cascade" }),
    alias: ctext("alias").notNull(),
  },
  (t) => [uniqueIndex("advisory_aliases_pk").on(t.advisoryUid, t.alias), index("advisory_aliases_alias_idx").on(t.alias, t.advisoryUid)],
);

/**
 * Advisory events (uid = advisory uid + "/" + 16 hex), in `seq` order. `eventType` is the
 * EventTypeFilter number of the event's oneof member; `body` is the member's content as JSON
 * (the store does not interpret it); `findings` the raw findings bytes.
 */
export const advisoryEvents = pgTable(
  "advisory_events",
  {
    uid: ctext("uid").primaryKey(),
    advisoryUid: ctext("advisory_uid")
      .notNull()
      .references(() => advisories.uid, { onDelete: "cascade" }),
    seq: integer("seq").notNull(),
    author: ctext("author").notNull().default(""),
    reviewer: ctext("reviewer").notNull().default(""),
    reviewState: integer("review_state").notNull(),
    issue: ctext("issue"),
    eventType: integer("event_type").notNull().default(0),
    body: ctext("body").notNull().default("{}"),
    findings: bytea("findings"),
    createTime: millis("create_time").notNull(),
  },
  (t) => [
    uniqueIndex("advisory_events_seq_idx").on(t.advisoryUid, t.seq),
    index("advisory_events_author_idx").on(t.author, t.advisoryUid),
    index("advisory_events_reviewer_idx").on(t.reviewer, t.advisoryUid),
    index("advisory_events_state_idx").on(t.reviewState, t.advisoryUid),
    index("advisory_events_type_idx").on(t.eventType, t.advisoryUid),
  ],
);

/**
 * Refresh tokens (src/store/refresh-tokens.ts). Only a SHA-256 of each token is stored, so a
 * copy of the database cannot be used to refresh. A family is the chain of tokens rotated
 * from one exchange: each token is used once (`used_time`), and a used one presented again
 * revokes the whole family. Rows go with their identity (cascade).
 */
export const refreshTokens = pgTable(
  "refresh_tokens",
  {
    tokenHash: ctext("token_hash").primaryKey(),
    familyId: ctext("family_id").notNull(),
    identityUid: ctext("identity_uid")
      .notNull()
      .references(() => identities.uid, { onDelete: "cascade" }),
    /** JSON array of the audiences the family may ask for. */
    audiences: ctext("audiences").notNull(),
    /** JSON array of capability numbers, or null: the family's down-scoping (token-limits.ts). */
    capabilities: ctext("capabilities"),
    /** JSON array of group UIDPs, or null. */
    scopes: ctext("scopes"),
    issueTime: millis("issue_time").notNull(),
    expireTime: millis("expire_time").notNull(),
    /** No token of the family lives past this, however often it is rotated. */
    familyExpireTime: millis("family_expire_time").notNull(),
    usedTime: millis("used_time"),
  },
  (t) => [
    index("refresh_tokens_family_idx").on(t.familyId),
    index("refresh_tokens_identity_idx").on(t.identityUid),
    index("refresh_tokens_expire_idx").on(t.expireTime),
  ],
);

/**
 * SCIM state of an identity provider (src/store/scim-credentials.ts); no row = SCIM off and
 * no token ever issued. Tokens are stored as SHA-256 hashes only. `etag` changes with every
 * change of the row. Rows go with their provider (cascade).
 */
export const scimCredentials = pgTable(
  "scim_credentials",
  {
    identityProviderUid: ctext("identity_provider_uid")
      .primaryKey()
      .references(() => identityProviders.uid, { onDelete: "cascade" }),
    enabled: boolean("enabled").notNull().default(false),
    tokenHash: ctext("token_hash"),
    /** Null when the token never expires (or none is issued). */
    tokenExpireTime: millis("token_expire_time"),
    previousTokenHash: ctext("previous_token_hash"),
    previousTokenExpireTime: millis("previous_token_expire_time"),
    /** Set when the tokens were revoked (token_hash is then null). */
    revokeTime: millis("revoke_time"),
    /** True once any token was issued (tells NOT_ISSUED from REVOKED). */
    issued: boolean("issued").notNull().default(false),
    etag: ctext("etag").notNull(),
    updateTime: millis("update_time").notNull(),
  },
  (t) => [index("scim_credentials_token_idx").on(t.tokenHash), index("scim_credentials_previous_token_idx").on(t.previousTokenHash)],
);

/**
 * PostgreSQL only, derived: how many rows of each counted kind each parent has, so the first
 * page of a List of "the children of P" reads its total_count here instead of counting them
 * (src/store/postgres/child-counts.ts says which Lists, and why the answer is exact). Written
 * by triggers on the counted tables only (their migration holds the functions), never by a
 * repository, so every writer keeps it right: every repository, the importer, `trellis db
 * copy`, a cascaded delete, an older replica that knows nothing of it. Not in SQLite's schema
 * (SQLite remembers its counts in memory instead) and not copied by `trellis db copy`: the
 * triggers rebuild it from the rows copied.
 *
 * One parent's count of one kind is the sum of up to STRIPES rows: each writing connection
 * adds to its own stripe (its backend pid modulo STRIPES), so concurrent creates under one
 * parent rarely queue on one row lock held to commit. `parent_uid` is '' for the roots (a
 * null parent); a real uid is never empty. Parent first in the key, so a deleted parent's rows
 * go in one index range.
 */
export const childCounts = pgTable(
  "child_counts",
  {
    parentUid: ctext("parent_uid").notNull(),
    /** The counted table's name; tags add their generated class ("tags.0" … "tags.3"), which ListTags filters on. */
    kind: ctext("kind").notNull(),
    stripe: smallint("stripe").notNull(),
    /** This stripe's share of the count (a stripe may be negative: rows created on one connection, deleted on another). */
    n: bigint("n", { mode: "number" }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.parentUid, t.kind, t.stripe] })],
);
