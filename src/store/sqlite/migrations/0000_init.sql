CREATE TABLE `groups` (
	`uid` text PRIMARY KEY NOT NULL,
	`parent_uid` text,
	`name` text NOT NULL,
	`description` text DEFAULT '' NOT NULL,
	`verified` integer DEFAULT false NOT NULL,
	`kind` integer DEFAULT 0 NOT NULL,
	`create_time` integer NOT NULL,
	`update_time` integer NOT NULL,
	FOREIGN KEY (`parent_uid`) REFERENCES `groups`(`uid`) ON UPDATE no action ON DELETE restrict
);
--> statement-breakpoint
CREATE INDEX `groups_parent_uid_idx` ON `groups` (`parent_uid`,`uid`);--> statement-breakpoint
CREATE INDEX `groups_name_uid_idx` ON `groups` (`name`,`uid`);--> statement-breakpoint
CREATE INDEX `groups_create_time_uid_idx` ON `groups` (`create_time`,`uid`);--> statement-breakpoint
CREATE INDEX `groups_update_time_uid_idx` ON `groups` (`update_time`,`uid`);--> statement-breakpoint
CREATE TABLE `server_keys` (
	`name` text PRIMARY KEY NOT NULL,
	`value` blob NOT NULL,
	`create_time` integer DEFAULT (unixepoch() * 1000) NOT NULL
);
