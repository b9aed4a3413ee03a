/**
 * Drizzle schema: the only description of the tables. `npm run db:generate` turns changes
 * into a committed SQL migration under src/store/migrations, applied at start-up.
 *
 * Conventions (kept portable, so that a PostgreSQL engine can use the same schema and queries):
 * - uids are UIDP text; a row's ancestry is its uid prefix, so "descendants of P" is the key
 *   range `uid > 'P/' AND uid < 'P0'` ('/' is 0x2F, '0' is 0x30): index-friendly, no LIKE.
 * - timestamps are integer milliseconds since the epoch (UTC).
 * - parent references use ON DELETE RESTRICT as the backstop behind the explicit
 *   "not empty" checks, which run in the same BEGIN IMMEDIATE transaction as the delete.
 * - every list order has an index ending in uid, the unique tie-breaker of keyset paging.
 */
import { sql } from "drizzle-orm";
import { type AnySQLiteColumn, blob, index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/** The group tree. A root (organization) has no parent. */
export const groups = sqliteTable(
  "groups",
  {
    uid: text("uid").primaryKey(),
    parentUid: text("parent_uid").references((): AnySQLiteColumn => groups.uid, { onDelete: "restrict" }),
    name: text("name").notNull(),
    description: text("description").notNull().default(""),
    verified: integer("verified", { mode: "boolean" }).notNull().default(false),
    /** OrgKind number; only meaningful on roots (children report their root's). */
    kind: integer("kind").notNull().default(0),
    createTime: integer("create_time").notNull(),
    updateTime: integer("update_time").notNull(),
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
export const serverKeys = sqliteTable("server_keys", {
  name: text("name").primaryKey(),
  value: blob("value", { mode: "buffer" }).notNull(),
  createTime: integer("create_time").notNull().default(sql`(unixepoch() * 1000)`),
});

/**
 * Identities. Assumable identities live under a group (uid = group uid + "/" + 16 hex);
 * user identities are roots (parent null). The relationship (claim match, static keys, AWS
 * identity or service principal) is a JSON document of our own shape in `relationship`;
 * an exact claim-match issuer/subject is also kept in columns so the token exchange and
 * LookupIdentity find it by index.
 */
export const identities = sqliteTable(
  "identities",
  {
    uid: text("uid").primaryKey(),
    parentUid: text("parent_uid").references(() => groups.uid, { onDelete: "restrict" }),
    name: text("name").notNull(),
    description: text("description").notNull().default(""),
    email: text("email").notNull().default(""),
    emailUnverified: text("email_unverified").notNull().default(""),
    company: text("company").notNull().default(""),
    /**
     * JSON object of the caller-editable IdentityMetadata fields other than company (which
     * has its own column): UpdateIdentityMetadata's marketing/profile answers. Text fields
     * are strings, updates_opt_in and self_serve booleans; absent = unset.
     */
    metadata: text("metadata").notNull().default("{}"),
    /** RelationshipType number of the set relationship (0 for none). */
    relationshipType: integer("relationship_type").notNull().default(0),
    /** JSON of the relationship, in the store's own shape (see identities.ts). */
    relationship: text("relationship").notNull().default("{}"),
    claimIssuer: text("claim_issuer"),
    claimSubject: text("claim_subject"),
    lastSeenTime: integer("last_seen_time"),
    createTime: integer("create_time").notNull(),
    updateTime: integer("update_time").notNull(),
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
export const roles = sqliteTable(
  "roles",
  {
    uid: text("uid").primaryKey(),
    parentUid: text("parent_uid").references(() => groups.uid, { onDelete: "restrict" }),
    name: text("name").notNull(),
    description: text("description").notNull().default(""),
    capabilities: text("capabilities").notNull().default("[]"),
    builtIn: integer("built_in", { mode: "boolean" }).notNull().default(false),
    createTime: integer("create_time").notNull(),
    updateTime: integer("update_time").notNull(),
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
export const roleBindings = sqliteTable(
  "role_bindings",
  {
    uid: text("uid").primaryKey(),
    groupUid: text("group_uid")
      .notNull()
      .references(() => groups.uid, { onDelete: "restrict" }),
    identityUid: text("identity_uid")
      .notNull()
      .references(() => identities.uid, { onDelete: "cascade" }),
    roleUid: text("role_uid")
      .notNull()
      .references(() => roles.uid, { onDelete: "restrict" }),
    createTime: integer("create_time").notNull(),
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
export const identityProviders = sqliteTable(
  "identity_providers",
  {
    uid: text("uid").primaryKey(),
    parentUid: text("parent_uid")
      .notNull()
      .references(() => groups.uid, { onDelete: "restrict" }),
    name: text("name").notNull(),
    description: text("description").notNull().default(""),
    defaultRole: text("default_role").notNull(),
    oidc: text("oidc").notNull().default("{}"),
    createTime: integer("create_time").notNull(),
    updateTime: integer("update_time").notNull(),
  },
  (t) => [
    index("identity_providers_parent_uid_idx").on(t.parentUid, t.uid),
    index("identity_providers_name_uid_idx").on(t.name, t.uid),
    index("identity_providers_create_time_uid_idx").on(t.createTime, t.uid),
    index("identity_providers_update_time_uid_idx").on(t.updateTime, t.uid),
  ],
);

/** Account associations: at most one per group; its uid IS the group's uid. Provider blocks are JSON. */
export const accountAssociations = sqliteTable(
  "account_associations",
  {
    uid: text("uid")
      .primaryKey()
      .references(() => groups.uid, { onDelete: "restrict" }),
    name: text("name").notNull(),
    description: text("description").notNull().default(""),
    providers: text("providers").notNull().default("{}"),
    createTime: integer("create_time").notNull(),
    updateTime: integer("update_time").notNull(),
  },
  (t) => [index("account_associations_name_uid_idx").on(t.name, t.uid), index("account_associations_create_time_uid_idx").on(t.createTime, t.uid)],
);

/**
 * RequestGroupAccess: one row per (group, identity) that asked to join a verified
 * organization. The primary key is what makes a repeat request RESOURCE_EXHAUSTED. Rows go
 * with their group or identity (cascade): they are a record of interest, not a child resource
 * that should block a delete.
 */
export const groupAccessRequests = sqliteTable(
  "group_access_requests",
  {
    groupUid: text("group_uid")
      .notNull()
      .references(() => groups.uid, { onDelete: "cascade" }),
    identityUid: text("identity_uid")
      .notNull()
      .references(() => identities.uid, { onDelete: "cascade" }),
    createTime: integer("create_time").notNull(),
  },
  (t) => [primaryKey({ columns: [t.groupUid, t.identityUid] }), index("group_access_requests_identity_uid_idx").on(t.identityUid)],
);

/**
 * Group invites under a group. Only a hash of the code is stored; the code itself is shown
 * once, on create.
 */
export const groupInvites = sqliteTable(
  "group_invites",
  {
    uid: text("uid").primaryKey(),
    parentUid: text("parent_uid")
      .notNull()
      .references(() => groups.uid, { onDelete: "restrict" }),
    roleUid: text("role_uid")
      .notNull()
      .references(() => roles.uid, { onDelete: "restrict" }),
    email: text("email").notNull().default(""),
    singleUse: integer("single_use", { mode: "boolean" }).notNull().default(false),
    codeHash: text("code_hash").notNull(),
    keyId: text("key_id").notNull(),
    expirationTime: integer("expiration_time").notNull(),
    createTime: integer("create_time").notNull(),
    /** Who made it (src/auth/grant-guard.ts), judged again at every redemption; null on invites made before it was kept. */
    creator: text("creator"),
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
export const repos = sqliteTable(
  "repos",
  {
    uid: text("uid").primaryKey(),
    parentUid: text("parent_uid")
      .notNull()
      .references(() => groups.uid, { onDelete: "restrict" }),
    name: text("name").notNull(),
    description: text("description").notNull().default(""),
    /** v2beta1 CatalogTier number. */
    catalogTier: integer("catalog_tier").notNull().default(0),
    bundles: text("bundles").notNull().default("[]"),
    aliases: text("aliases").notNull().default("[]"),
    activeTags: text("active_tags").notNull().default("[]"),
    createTime: integer("create_time").notNull(),
    updateTime: integer("update_time").notNull(),
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
export const tags = sqliteTable(
  "tags",
  {
    uid: text("uid").primaryKey(),
    repoUid: text("repo_uid")
      .notNull()
      .references(() => repos.uid, { onDelete: "cascade" }),
    name: text("name").notNull(),
    digest: text("digest").notNull(),
    deprecated: integer("deprecated", { mode: "boolean" }).notNull().default(false),
    bundles: text("bundles").notNull().default("[]"),
    generated: integer("generated").notNull().default(0),
    updateTime: integer("update_time").notNull(),
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
export const tagHistory = sqliteTable(
  "tag_history",
  {
    seq: integer("seq").primaryKey({ autoIncrement: true }),
    tagUid: text("tag_uid")
      .notNull()
      .references(() => tags.uid, { onDelete: "cascade" }),
    digest: text("digest").notNull(),
    moveTime: integer("move_time").notNull(),
  },
  (t) => [index("tag_history_tag_time_idx").on(t.tagUid, t.moveTime, t.seq)],
);

/**
 * The README of a repo (Markdown, at most README_MAX_BYTES), one row per repo that has one;
 * kept out of `repos` so repo lists never read it. Goes with its repo.
 */
export const repoReadmes = sqliteTable("repo_readmes", {
  repoUid: text("repo_uid")
    .primaryKey()
    .references(() => repos.uid, { onDelete: "cascade" }),
  content: text("content").notNull(),
  updateTime: integer("update_time").notNull(),
});

/**
 * How a repo is deployed (v1 Deployment): its Helm charts as a JSON array of
 * {source?, repo, chart?}. At most one per repo; goes with its repo.
 */
export const repoDeployments = sqliteTable("repo_deployments", {
  repoUid: text("repo_uid")
    .primaryKey()
    .references(() => repos.uid, { onDelete: "cascade" }),
  charts: text("charts").notNull().default("[]"),
  createTime: integer("create_time").notNull(),
  updateTime: integer("update_time").notNull(),
});

/**
 * Registry defaults of an organization (v1 RegistrySettings). A missing row reads as the
 * defaults (both false). Goes with its group.
 */
export const registrySettings = sqliteTable("registry_settings", {
  groupUid: text("group_uid")
    .primaryKey()
    .references(() => groups.uid, { onDelete: "cascade" }),
  uniqueTags: integer("unique_tags", { mode: "boolean" }).notNull().default(false),
  eolGracePeriod: integer("eol_grace_period", { mode: "boolean" }).notNull().default(false),
  updateTime: integer("update_time").notNull(),
});

/**
 * End-of-life facts about a tag's main package (v1 ListEolTags), loaded by `trellis import`:
 * Trellis has no package feed of its own. `mainPackageVersion` is the v1 PackageVersion as
 * proto JSON, uninterpreted. Goes with its tag.
 */
export const eolTags = sqliteTable("eol_tags", {
  tagUid: text("tag_uid")
    .primaryKey()
    .references(() => tags.uid, { onDelete: "cascade" }),
  mainPackageName: text("main_package_name").notNull().default(""),
  tagStatus: integer("tag_status").notNull().default(0),
  graceStatus: integer("grace_status").notNull().default(0),
  gracePeriodExpiry: integer("grace_period_expiry"),
  mainPackageVersion: text("main_package_version"),
  updateTime: integer("update_time").notNull(),
});

/**
 * Vulnerability advisories under a group (uid = group uid + "/" + 16 hex), read-only over the
 * API and written by `trellis import`. One advisory is one (advisory_id, artifact_name) in a
 * group, which is the import's identity key. `aliases` and `severities` are JSON for output;
 * aliases are also rows of advisory_aliases so the `aliases` filter is an index lookup.
 * `latestEventType` is the EventTypeFilter number of the most recent APPROVED event (0 when
 * none), kept by the writer for the `latest_event_type` filter.
 */
export const advisories = sqliteTable(
  "advisories",
  {
    uid: text("uid").primaryKey(),
    parentUid: text("parent_uid")
      .notNull()
      .references(() => groups.uid, { onDelete: "restrict" }),
    advisoryId: text("advisory_id").notNull(),
    legacyAdvisoryId: text("legacy_advisory_id"),
    author: text("author").notNull().default(""),
    artifactName: text("artifact_name").notNull(),
    artifactType: text("artifact_type").notNull().default(""),
    artifactArchitecture: text("artifact_architecture").notNull().default(""),
    componentName: text("component_name").notNull().default(""),
    componentLocation: text("component_location").notNull().default(""),
    componentType: text("component_type").notNull().default(""),
    /** Origin package the artifact is built from (defaults to artifact_name). */
    origin: text("origin").notNull(),
    aliases: text("aliases").notNull().default("[]"),
    severities: text("severities").notNull().default("[]"),
    latestEventType: integer("latest_event_type").notNull().default(0),
    deleteTime: integer("delete_time"),
    createTime: integer("create_time").notNull(),
    updateTime: integer("update_time").notNull(),
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
export const advisoryAliases = sqliteTable(
  "advisory_aliases",
  {
    advisoryUid: text("advisory_uid")
      .notNull()
      .references(() => advisories.uid, { onDelete: "cascade" }),
    alias: text("alias").notNull(),
  },
  (t) => [uniqueIndex("advisory_aliases_pk").on(t.advisoryUid, t.alias), index("advisory_aliases_alias_idx").on(t.alias, t.advisoryUid)],
);

/**
 * Advisory events (uid = advisory uid + "/" + 16 hex), in `seq` order. `eventType` is the
 * EventTypeFilter number of the event's oneof member; `body` is the member's content as JSON
 * (the store does not interpret it); `findings` the raw findings bytes.
 */
export const advisoryEvents = sqliteTable(
  "advisory_events",
  {
    uid: text("uid").primaryKey(),
    advisoryUid: text("advisory_uid")
      .notNull()
      .references(() => advisories.uid, { onDelete: "cascade" }),
    seq: integer("seq").notNull(),
    author: text("author").notNull().default(""),
    reviewer: text("reviewer").notNull().default(""),
    reviewState: integer("review_state").notNull(),
    issue: text("issue"),
    eventType: integer("event_type").notNull().default(0),
    body: text("body").notNull().default("{}"),
    findings: blob("findings", { mode: "buffer" }),
    createTime: integer("create_time").notNull(),
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
 * Refresh tokens (src/store/sqlite/refresh-tokens.ts). Only a SHA-256 of each token is stored, so a
 * copy of the database cannot be used to refresh. A family is the chain of tokens rotated
 * from one exchange: each token is used once (`used_time`), and a used one presented again
 * revokes the whole family. Rows go with their identity (cascade).
 */
export const refreshTokens = sqliteTable(
  "refresh_tokens",
  {
    tokenHash: text("token_hash").primaryKey(),
    familyId: text("family_id").notNull(),
    identityUid: text("identity_uid")
      .notNull()
      .references(() => identities.uid, { onDelete: "cascade" }),
    /** JSON array of the audiences the family may ask for. */
    audiences: text("audiences").notNull(),
    /** JSON array of capability numbers, or null: the family's down-scoping (token-limits.ts). */
    capabilities: text("capabilities"),
    /** JSON array of group UIDPs, or null. */
    scopes: text("scopes"),
    issueTime: integer("issue_time").notNull(),
    expireTime: integer("expire_time").notNull(),
    /** No token of the family lives past this, however often it is rotated. */
    familyExpireTime: integer("family_expire_time").notNull(),
    usedTime: integer("used_time"),
  },
  (t) => [
    index("refresh_tokens_family_idx").on(t.familyId),
    index("refresh_tokens_identity_idx").on(t.identityUid),
    index("refresh_tokens_expire_idx").on(t.expireTime),
  ],
);

/**
 * SCIM state of an identity provider (src/store/sqlite/scim-credentials.ts); no row = SCIM off and
 * no token ever issued. Tokens are stored as SHA-256 hashes only. `etag` changes with every
 * change of the row. Rows go with their provider (cascade).
 */
export const scimCredentials = sqliteTable(
  "scim_credentials",
  {
    identityProviderUid: text("identity_provider_uid")
      .primaryKey()
      .references(() => identityProviders.uid, { onDelete: "cascade" }),
    enabled: integer("enabled", { mode: "boolean" }).notNull().default(false),
    tokenHash: text("token_hash"),
    /** Null when the token never expires (or none is issued). */
    tokenExpireTime: integer("token_expire_time"),
    previousTokenHash: text("previous_token_hash"),
    previousTokenExpireTime: integer("previous_token_expire_time"),
    /** Set when the tokens were revoked (token_hash is then null). */
    revokeTime: integer("revoke_time"),
    /** True once any token was issued (tells NOT_ISSUED from REVOKED). */
    issued: integer("issued", { mode: "boolean" }).notNull().default(false),
    etag: text("etag").notNull(),
    updateTime: integer("update_time").notNull(),
  },
  (t) => [index("scim_credentials_token_idx").on(t.tokenHash), index("scim_credentials_previous_token_idx").on(t.previousTokenHash)],
);

export type GroupRow = typeof groups.$inferSelect;
export type IdentityRow = typeof identities.$inferSelect;
export type RoleRow = typeof roles.$inferSelect;
export type RoleBindingRow = typeof roleBindings.$inferSelect;
export type IdentityProviderRow = typeof identityProviders.$inferSelect;
export type AccountAssociationRow = typeof accountAssociations.$inferSelect;
export type GroupInviteRow = typeof groupInvites.$inferSelect;
export type RepoRow = typeof repos.$inferSelect;
export type TagRow = typeof tags.$inferSelect;
export type TagHistoryRow = typeof tagHistory.$inferSelect;
export type RepoDeploymentRow = typeof repoDeployments.$inferSelect;
export type RegistrySettingsRow = typeof registrySettings.$inferSelect;
export type EolTagRow = typeof eolTags.$inferSelect;
export type AdvisoryRow = typeof advisories.$inferSelect;
export type AdvisoryEventRow = typeof advisoryEvents.$inferSelect;
export type RefreshTokenRow = typeof refreshTokens.$inferSelect;
export type ScimCredentialRow = typeof scimCredentials.$inferSelect;
