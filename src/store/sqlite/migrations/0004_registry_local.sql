CREATE TABLE `eol_tags` (
	`tag_uid` text PRIMARY KEY NOT NULL,
	`main_package_name` text DEFAULT '' NOT NULL,
	`tag_status` integer DEFAULT 0 NOT NULL,
	`grace_status` integer DEFAULT 0 NOT NULL,
	`grace_period_expiry` integer,
	`main_package_version` text,
	`update_time` integer NOT NULL,
	FOREIGN KEY (`tag_uid`) REFERENCES `tags`(`uid`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `registry_settings` (
	`group_uid` text PRIMARY KEY NOT NULL,
	`unique_tags` integer DEFAULT false NOT NULL,
	`eol_grace_period` integer DEFAULT false NOT NULL,
	`update_time` integer NOT NULL,
	FOREIGN KEY (`group_uid`) REFERENCES `groups`(`uid`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `repo_deployments` (
	`repo_uid` text PRIMARY KEY NOT NULL,
	`charts` text DEFAULT '[]' NOT NULL,
	`create_time` integer NOT NULL,
	`update_time` integer NOT NULL,
	FOREIGN KEY (`repo_uid`) REFERENCES `repos`(`uid`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `repo_readmes` (
	`repo_uid` text PRIMARY KEY NOT NULL,
	`content` text NOT NULL,
	`update_time` integer NOT NULL,
	FOREIGN KEY (`repo_uid`) REFERENCES `repos`(`uid`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `tag_history` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`tag_uid` text NOT NULL,
	`digest` text NOT NULL,
	`move_time` integer NOT NULL,
	FOREIGN KEY (`tag_uid`) REFERENCES `tags`(`uid`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `tag_history_tag_time_idx` ON `tag_history` (`tag_uid`,`move_time`,`seq`);--> statement-breakpoint
INSERT INTO `tag_history` (`tag_uid`, `digest`, `move_time`) SELECT `uid`, `digest`, `update_time` FROM `tags` ORDER BY `uid`;