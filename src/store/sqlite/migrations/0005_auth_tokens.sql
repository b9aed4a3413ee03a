CREATE TABLE `refresh_tokens` (
	`token_hash` text PRIMARY KEY NOT NULL,
	`family_id` text NOT NULL,
	`identity_uid` text NOT NULL,
	`audiences` text NOT NULL,
	`capabilities` text,
	`scopes` text,
	`issue_time` integer NOT NULL,
	`expire_time` integer NOT NULL,
	`family_expire_time` integer NOT NULL,
	`used_time` integer,
	FOREIGN KEY (`identity_uid`) REFERENCES `identities`(`uid`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `refresh_tokens_family_idx` ON `refresh_tokens` (`family_id`);--> statement-breakpoint
CREATE INDEX `refresh_tokens_identity_idx` ON `refresh_tokens` (`identity_uid`);--> statement-breakpoint
CREATE INDEX `refresh_tokens_expire_idx` ON `refresh_tokens` (`expire_time`);--> statement-breakpoint
CREATE TABLE `scim_credentials` (
	`identity_provider_uid` text PRIMARY KEY NOT NULL,
	`enabled` integer DEFAULT false NOT NULL,
	`token_hash` text,
	`token_expire_time` integer,
	`previous_token_hash` text,
	`previous_token_expire_time` integer,
	`revoke_time` integer,
	`issued` integer DEFAULT false NOT NULL,
	`etag` text NOT NULL,
	`update_time` integer NOT NULL,
	FOREIGN KEY (`identity_provider_uid`) REFERENCES `identity_providers`(`uid`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `scim_credentials_token_idx` ON `scim_credentials` (`token_hash`);--> statement-breakpoint
CREATE INDEX `scim_credentials_previous_token_idx` ON `scim_credentials` (`previous_token_hash`);