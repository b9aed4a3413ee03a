CREATE TABLE `advisories` (
	`uid` text PRIMARY KEY NOT NULL,
	`parent_uid` text NOT NULL,
	`advisory_id` text NOT NULL,
	`legacy_advisory_id` text,
	`author` text DEFAULT '' NOT NULL,
	`artifact_name` text NOT NULL,
	`artifact_type` text DEFAULT '' NOT NULL,
	`artifact_architecture` text DEFAULT '' NOT NULL,
	`component_name` text DEFAULT '' NOT NULL,
	`component_location` text DEFAULT '' NOT NULL,
	`component_type` text DEFAULT '' NOT NULL,
	`origin` text NOT NULL,
	`aliases` text DEFAULT '[]' NOT NULL,
	`severities` text DEFAULT '[]' NOT NULL,
	`latest_event_type` integer DEFAULT 0 NOT NULL,
	`delete_time` integer,
	`create_time` integer NOT NULL,
	`update_time` integer NOT NULL,
	FOREIGN KEY (`parent_uid`) REFERENCES `groups`(`uid`) ON UPDATE no action ON DELETE restrict
);
--> statement-breakpoint
CREATE UNIQUE INDEX `advisories_key_idx` ON `advisories` (`parent_uid`,`advisory_id`,`artifact_name`);--> statement-breakpoint
CREATE INDEX `advisories_parent_uid_idx` ON `advisories` (`parent_uid`,`uid`);--> statement-breakpoint
CREATE INDEX `advisories_advisory_id_uid_idx` ON `advisories` (`advisory_id`,`uid`);--> statement-breakpoint
CREATE INDEX `advisories_legacy_id_idx` ON `advisories` (`legacy_advisory_id`,`uid`);--> statement-breakpoint
CREATE INDEX `advisories_artifact_name_idx` ON `advisories` (`artifact_name`,`uid`);--> statement-breakpoint
CREATE INDEX `advisories_artifact_type_idx` ON `advisories` (`artifact_type`,`uid`);--> statement-breakpoint
CREATE INDEX `advisories_artifact_arch_idx` ON `advisories` (`artifact_architecture`,`uid`);--> statement-breakpoint
CREATE INDEX `advisories_component_name_idx` ON `advisories` (`component_name`,`uid`);--> statement-breakpoint
CREATE INDEX `advisories_component_type_idx` ON `advisories` (`component_type`,`uid`);--> statement-breakpoint
CREATE INDEX `advisories_component_location_idx` ON `advisories` (`component_location`,`uid`);--> statement-breakpoint
CREATE INDEX `advisories_origin_idx` ON `advisories` (`origin`,`uid`);--> statement-breakpoint
CREATE INDEX `advisories_latest_event_type_idx` ON `advisories` (`latest_event_type`,`uid`);--> statement-breakpoint
CREATE INDEX `advisories_create_time_uid_idx` ON `advisories` (`create_time`,`uid`);--> statement-breakpoint
CREATE INDEX `advisories_update_time_uid_idx` ON `advisories` (`update_time`,`uid`);--> statement-breakpoint
CREATE TABLE `advisory_aliases` (
	`advisory_uid` text NOT NULL,
	`alias` text NOT NULL,
	FOREIGN KEY (`advisory_uid`) REFERENCES `advisories`(`uid`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `advisory_aliases_pk` ON `advisory_aliases` (`advisory_uid`,`alias`);--> statement-breakpoint
CREATE INDEX `advisory_aliases_alias_idx` ON `advisory_aliases` (`alias`,`advisory_uid`);--> statement-breakpoint
CREATE TABLE `advisory_events` (
	`uid` text PRIMARY KEY NOT NULL,
	`advisory_uid` text NOT NULL,
	`seq` integer NOT NULL,
	`author` text DEFAULT '' NOT NULL,
	`reviewer` text DEFAULT '' NOT NULL,
	`review_state` integer NOT NULL,
	`issue` text,
	`event_type` integer DEFAULT 0 NOT NULL,
	`body` text DEFAULT '{}' NOT NULL,
	`findings` blob,
	`create_time` integer NOT NULL,
	FOREIGN KEY (`advisory_uid`) REFERENCES `advisories`(`uid`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `advisory_events_seq_idx` ON `advisory_events` (`advisory_uid`,`seq`);--> statement-breakpoint
CREATE INDEX `advisory_events_author_idx` ON `advisory_events` (`author`,`advisory_uid`);--> statement-breakpoint
CREATE INDEX `advisory_events_reviewer_idx` ON `advisory_events` (`reviewer`,`advisory_uid`);--> statement-breakpoint
CREATE INDEX `advisory_events_state_idx` ON `advisory_events` (`review_state`,`advisory_uid`);--> statement-breakpoint
CREATE INDEX `advisory_events_type_idx` ON `advisory_events` (`event_type`,`advisory_uid`);--> statement-breakpoint
CREATE TABLE `repos` (
	`uid` text PRIMARY KEY NOT NULL,
	`parent_uid` text NOT NULL,
	`name` text NOT NULL,
	`description` text DEFAULT '' NOT NULL,
	`catalog_tier` integer DEFAULT 0 NOT NULL,
	`bundles` text DEFAULT '[]' NOT NULL,
	`aliases` text DEFAULT '[]' NOT NULL,
	`active_tags` text DEFAULT '[]' NOT NULL,
	`create_time` integer NOT NULL,
	`update_time` integer NOT NULL,
	FOREIGN KEY (`parent_uid`) REFERENCES `groups`(`uid`) ON UPDATE no action ON DELETE restrict
);
--> statement-breakpoint
CREATE UNIQUE INDEX `repos_parent_name_idx` ON `repos` (`parent_uid`,`name`);--> statement-breakpoint
CREATE INDEX `repos_parent_uid_idx` ON `repos` (`parent_uid`,`uid`);--> statement-breakpoint
CREATE INDEX `repos_name_uid_idx` ON `repos` (`name`,`uid`);--> statement-breakpoint
CREATE INDEX `repos_create_time_uid_idx` ON `repos` (`create_time`,`uid`);--> statement-breakpoint
CREATE INDEX `repos_update_time_uid_idx` ON `repos` (`update_time`,`uid`);--> statement-breakpoint
CREATE TABLE `tags` (
	`uid` text PRIMARY KEY NOT NULL,
	`repo_uid` text NOT NULL,
	`name` text NOT NULL,
	`digest` text NOT NULL,
	`deprecated` integer DEFAULT false NOT NULL,
	`bundles` text DEFAULT '[]' NOT NULL,
	`generated` integer DEFAULT 0 NOT NULL,
	`update_time` integer NOT NULL,
	FOREIGN KEY (`repo_uid`) REFERENCES `repos`(`uid`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `tags_repo_name_idx` ON `tags` (`repo_uid`,`name`);--> statement-breakpoint
CREATE INDEX `tags_repo_uid_idx` ON `tags` (`repo_uid`,`uid`);--> statement-breakpoint
CREATE INDEX `tags_name_uid_idx` ON `tags` (`name`,`uid`);--> statement-breakpoint
CREATE INDEX `tags_digest_uid_idx` ON `tags` (`digest`,`uid`);--> statement-breakpoint
CREATE INDEX `tags_update_time_uid_idx` ON `tags` (`update_time`,`uid`);