/**
 * Drizzle schema: the only description of the tables. `npm run db:generate` turns changes
 * into a committed SQL migration under src/store/migrations, applied at start-up.
 *
 * Conventions (kept portable for the PostgreSQL path in ../shared/reliability.md §6):
 * - uids are UIDP text; a row's ancestry is its uid prefix, so "descendants of P" is the key
 *   range `uid > 'P/' AND uid < 'P0'` ('/' is 0x2F, '0' is 0x30): index-friendly, no LIKE.
 * - timestamps are integer milliseconds since the epoch (UTC).
 * - parent references use ON DELETE RESTRICT as the backstop behind the explicit
 *   "not empty" checks, which run in the same BEGIN IMMEDIATE transaction as the delete.
 * - every list order has an index ending in uid, the unique tie-breaker of keyset paging.
 */
import { sql } from "drizzle-orm";
import { type AnySQLiteColumn, blob, index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

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
  createTime: integer("create_time")
    .notNull()
    .default(sql`(unixepoch() * 1000)`),
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
  (t) => [
    index("account_associations_name_uid_idx").on(t.name, t.uid),
    index("account_associations_create_time_uid_idx").on(t.createTime, t.uid),
  ],
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
  },
  (t) => [
    index("group_invites_parent_uid_idx").on(t.parentUid, t.uid),
    index("group_invites_key_id_idx").on(t.keyId),
    index("group_invites_create_time_uid_idx").on(t.createTime, t.uid),
    index("group_invites_expiration_time_uid_idx").on(t.expirationTime, t.uid),
  ],
);

export type GroupRow = typeof groups.$inferSelect;
export type IdentityRow = typeof identities.$inferSelect;
export type RoleRow = typeof roles.$inferSelect;
export type RoleBindingRow = typeof roleBindings.$inferSelect;
export type IdentityProviderRow = typeof identityProviders.$inferSelect;
export type AccountAssociationRow = typeof accountAssociations.$inferSelect;
export type GroupInviteRow = typeof groupInvites.$inferSelect;
