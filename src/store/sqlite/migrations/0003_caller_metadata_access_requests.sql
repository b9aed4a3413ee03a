CREATE TABLE `group_access_requests` (
	`group_uid` text NOT NULL,
	`identity_uid` text NOT NULL,
	`create_time` integer NOT NULL,
	PRIMARY KEY(`group_uid`, `identity_uid`),
	FOREIGN KEY (`group_uid`) REFERENCES `groups`(`uid`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`identity_uid`) REFERENCES `identities`(`uid`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `group_access_requests_identity_uid_idx` ON `group_access_requests` (`identity_uid`);--> statement-breakpoint
ALTER TABLE `identities` ADD `metadata` text DEFAULT '{}' NOT NULL;