CREATE TABLE `account_associations` (
	`uid` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`description` text DEFAULT '' NOT NULL,
	`providers` text DEFAULT '{}' NOT NULL,
	`create_time` integer NOT NULL,
	`update_time` integer NOT NULL,
	FOREIGN KEY (`uid`) REFERENCES `groups`(`uid`) ON UPDATE no action ON DELETE restrict
);
--> statement-breakpoint
CREATE INDEX `account_associations_name_uid_idx` ON `account_associations` (`name`,`uid`);--> statement-breakpoint
CREATE INDEX `account_associations_create_time_uid_idx` ON `account_associations` (`create_time`,`uid`);--> statement-breakpoint
CREATE TABLE `group_invites` (
	`uid` text PRIMARY KEY NOT NULL,
	`parent_uid` text NOT NULL,
	`role_uid` text NOT NULL,
	`email` text DEFAULT '' NOT NULL,
	`single_use` integer DEFAULT false NOT NULL,
	`code_hash` text NOT NULL,
	`key_id` text NOT NULL,
	`expiration_time` integer NOT NULL,
	`create_time` integer NOT NULL,
	FOREIGN KEY (`parent_uid`) REFERENCES `groups`(`uid`) ON UPDATE no action ON DELETE restrict,
	FOREIGN KEY (`role_uid`) REFERENCES `roles`(`uid`) ON UPDATE no action ON DELETE restrict
);
--> statement-breakpoint
CREATE INDEX `group_invites_parent_uid_idx` ON `group_invites` (`parent_uid`,`uid`);--> statement-breakpoint
CREATE INDEX `group_invites_key_id_idx` ON `group_invites` (`key_id`);--> statement-breakpoint
CREATE INDEX `group_invites_create_time_uid_idx` ON `group_invites` (`create_time`,`uid`);--> statement-breakpoint
CREATE INDEX `group_invites_expiration_time_uid_idx` ON `group_invites` (`expiration_time`,`uid`);--> statement-breakpoint
CREATE TABLE `identities` (
	`uid` text PRIMARY KEY NOT NULL,
	`parent_uid` text,
	`name` text NOT NULL,
	`description` text DEFAULT '' NOT NULL,
	`email` text DEFAULT '' NOT NULL,
	`email_unverified` text DEFAULT '' NOT NULL,
	`company` text DEFAULT '' NOT NULL,
	`relationship_type` integer DEFAULT 0 NOT NULL,
	`relationship` text DEFAULT '{}' NOT NULL,
	`claim_issuer` text,
	`claim_subject` text,
	`last_seen_time` integer,
	`create_time` integer NOT NULL,
	`update_time` integer NOT NULL,
	FOREIGN KEY (`parent_uid`) REFERENCES `groups`(`uid`) ON UPDATE no action ON DELETE restrict
);
--> statement-breakpoint
CREATE INDEX `identities_parent_uid_idx` ON `identities` (`parent_uid`,`uid`);--> statement-breakpoint
CREATE INDEX `identities_name_uid_idx` ON `identities` (`name`,`uid`);--> statement-breakpoint
CREATE INDEX `identities_create_time_uid_idx` ON `identities` (`create_time`,`uid`);--> statement-breakpoint
CREATE INDEX `identities_update_time_uid_idx` ON `identities` (`update_time`,`uid`);--> statement-breakpoint
CREATE INDEX `identities_claim_idx` ON `identities` (`claim_issuer`,`claim_subject`);--> statement-breakpoint
CREATE TABLE `identity_providers` (
	`uid` text PRIMARY KEY NOT NULL,
	`parent_uid` text NOT NULL,
	`name` text NOT NULL,
	`description` text DEFAULT '' NOT NULL,
	`default_role` text NOT NULL,
	`oidc` text DEFAULT '{}' NOT NULL,
	`create_time` integer NOT NULL,
	`update_time` integer NOT NULL,
	FOREIGN KEY (`parent_uid`) REFERENCES `groups`(`uid`) ON UPDATE no action ON DELETE restrict
);
--> statement-breakpoint
CREATE INDEX `identity_providers_parent_uid_idx` ON `identity_providers` (`parent_uid`,`uid`);--> statement-breakpoint
CREATE INDEX `identity_providers_name_uid_idx` ON `identity_providers` (`name`,`uid`);--> statement-breakpoint
CREATE INDEX `identity_providers_create_time_uid_idx` ON `identity_providers` (`create_time`,`uid`);--> statement-breakpoint
CREATE INDEX `identity_providers_update_time_uid_idx` ON `identity_providers` (`update_time`,`uid`);--> statement-breakpoint
CREATE TABLE `role_bindings` (
	`uid` text PRIMARY KEY NOT NULL,
	`group_uid` text NOT NULL,
	`identity_uid` text NOT NULL,
	`role_uid` text NOT NULL,
	`create_time` integer NOT NULL,
	FOREIGN KEY (`group_uid`) REFERENCES `groups`(`uid`) ON UPDATE no action ON DELETE restrict,
	FOREIGN KEY (`identity_uid`) REFERENCES `identities`(`uid`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`role_uid`) REFERENCES `roles`(`uid`) ON UPDATE no action ON DELETE restrict
);
--> statement-breakpoint
CREATE UNIQUE INDEX `role_bindings_unique_idx` ON `role_bindings` (`group_uid`,`identity_uid`,`role_uid`);--> statement-breakpoint
CREATE INDEX `role_bindings_group_uid_idx` ON `role_bindings` (`group_uid`,`uid`);--> statement-breakpoint
CREATE INDEX `role_bindings_identity_idx` ON `role_bindings` (`identity_uid`,`uid`);--> statement-breakpoint
CREATE INDEX `role_bindings_role_idx` ON `role_bindings` (`role_uid`,`uid`);--> statement-breakpoint
CREATE INDEX `role_bindings_create_time_uid_idx` ON `role_bindings` (`create_time`,`uid`);--> statement-breakpoint
CREATE TABLE `roles` (
	`uid` text PRIMARY KEY NOT NULL,
	`parent_uid` text,
	`name` text NOT NULL,
	`description` text DEFAULT '' NOT NULL,
	`capabilities` text DEFAULT '[]' NOT NULL,
	`built_in` integer DEFAULT false NOT NULL,
	`create_time` integer NOT NULL,
	`update_time` integer NOT NULL,
	FOREIGN KEY (`parent_uid`) REFERENCES `groups`(`uid`) ON UPDATE no action ON DELETE restrict
);
--> statement-breakpoint
CREATE INDEX `roles_parent_uid_idx` ON `roles` (`parent_uid`,`uid`);--> statement-breakpoint
CREATE INDEX `roles_name_uid_idx` ON `roles` (`name`,`uid`);--> statement-breakpoint
CREATE INDEX `roles_create_time_uid_idx` ON `roles` (`create_time`,`uid`);--> statement-breakpoint
CREATE INDEX `roles_update_time_uid_idx` ON `roles` (`update_time`,`uid`);