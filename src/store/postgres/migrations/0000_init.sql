CREATE TABLE "account_associations" (
	"uid" text COLLATE "C" PRIMARY KEY NOT NULL,
	"name" text COLLATE "C" NOT NULL,
	"description" text COLLATE "C" DEFAULT '' NOT NULL,
	"providers" text COLLATE "C" DEFAULT '{}' NOT NULL,
	"create_time" bigint NOT NULL,
	"update_time" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "advisories" (
	"uid" text COLLATE "C" PRIMARY KEY NOT NULL,
	"parent_uid" text COLLATE "C" NOT NULL,
	"advisory_id" text COLLATE "C" NOT NULL,
	"legacy_advisory_id" text COLLATE "C",
	"author" text COLLATE "C" DEFAULT '' NOT NULL,
	"artifact_name" text COLLATE "C" NOT NULL,
	"artifact_type" text COLLATE "C" DEFAULT '' NOT NULL,
	"artifact_architecture" text COLLATE "C" DEFAULT '' NOT NULL,
	"component_name" text COLLATE "C" DEFAULT '' NOT NULL,
	"component_location" text COLLATE "C" DEFAULT '' NOT NULL,
	"component_type" text COLLATE "C" DEFAULT '' NOT NULL,
	"origin" text COLLATE "C" NOT NULL,
	"aliases" text COLLATE "C" DEFAULT '[]' NOT NULL,
	"severities" text COLLATE "C" DEFAULT '[]' NOT NULL,
	"latest_event_type" integer DEFAULT 0 NOT NULL,
	"delete_time" bigint,
	"create_time" bigint NOT NULL,
	"update_time" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "advisory_aliases" (
	"advisory_uid" text COLLATE "C" NOT NULL,
	"alias" text COLLATE "C" NOT NULL
);
--> statement-breakpoint
CREATE TABLE "advisory_events" (
	"uid" text COLLATE "C" PRIMARY KEY NOT NULL,
	"advisory_uid" text COLLATE "C" NOT NULL,
	"seq" integer NOT NULL,
	"author" text COLLATE "C" DEFAULT '' NOT NULL,
	"reviewer" text COLLATE "C" DEFAULT '' NOT NULL,
	"review_state" integer NOT NULL,
	"issue" text COLLATE "C",
	"event_type" integer DEFAULT 0 NOT NULL,
	"body" text COLLATE "C" DEFAULT '{}' NOT NULL,
	"findings" "bytea",
	"create_time" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "eol_tags" (
	"tag_uid" text COLLATE "C" PRIMARY KEY NOT NULL,
	"main_package_name" text COLLATE "C" DEFAULT '' NOT NULL,
	"tag_status" integer DEFAULT 0 NOT NULL,
	"grace_status" integer DEFAULT 0 NOT NULL,
	"grace_period_expiry" bigint,
	"main_package_version" text COLLATE "C",
	"update_time" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "group_access_requests" (
	"group_uid" text COLLATE "C" NOT NULL,
	"identity_uid" text COLLATE "C" NOT NULL,
	"create_time" bigint NOT NULL,
	CONSTRAINT "group_access_requests_group_uid_identity_uid_pk" PRIMARY KEY("group_uid","identity_uid")
);
--> statement-breakpoint
CREATE TABLE "group_invites" (
	"uid" text COLLATE "C" PRIMARY KEY NOT NULL,
	"parent_uid" text COLLATE "C" NOT NULL,
	"role_uid" text COLLATE "C" NOT NULL,
	"email" text COLLATE "C" DEFAULT '' NOT NULL,
	"single_use" boolean DEFAULT false NOT NULL,
	"code_hash" text COLLATE "C" NOT NULL,
	"key_id" text COLLATE "C" NOT NULL,
	"expiration_time" bigint NOT NULL,
	"create_time" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "groups" (
	"uid" text COLLATE "C" PRIMARY KEY NOT NULL,
	"parent_uid" text COLLATE "C",
	"name" text COLLATE "C" NOT NULL,
	"description" text COLLATE "C" DEFAULT '' NOT NULL,
	"verified" boolean DEFAULT false NOT NULL,
	"kind" integer DEFAULT 0 NOT NULL,
	"create_time" bigint NOT NULL,
	"update_time" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "identities" (
	"uid" text COLLATE "C" PRIMARY KEY NOT NULL,
	"parent_uid" text COLLATE "C",
	"name" text COLLATE "C" NOT NULL,
	"description" text COLLATE "C" DEFAULT '' NOT NULL,
	"email" text COLLATE "C" DEFAULT '' NOT NULL,
	"email_unverified" text COLLATE "C" DEFAULT '' NOT NULL,
	"company" text COLLATE "C" DEFAULT '' NOT NULL,
	"metadata" text COLLATE "C" DEFAULT '{}' NOT NULL,
	"relationship_type" integer DEFAULT 0 NOT NULL,
	"relationship" text COLLATE "C" DEFAULT '{}' NOT NULL,
	"claim_issuer" text COLLATE "C",
	"claim_subject" text COLLATE "C",
	"last_seen_time" bigint,
	"create_time" bigint NOT NULL,
	"update_time" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "identity_providers" (
	"uid" text COLLATE "C" PRIMARY KEY NOT NULL,
	"parent_uid" text COLLATE "C" NOT NULL,
	"name" text COLLATE "C" NOT NULL,
	"description" text COLLATE "C" DEFAULT '' NOT NULL,
	"default_role" text COLLATE "C" NOT NULL,
	"oidc" text COLLATE "C" DEFAULT '{}' NOT NULL,
	"create_time" bigint NOT NULL,
	"update_time" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "refresh_tokens" (
	"token_hash" text COLLATE "C" PRIMARY KEY NOT NULL,
	"family_id" text COLLATE "C" NOT NULL,
	"identity_uid" text COLLATE "C" NOT NULL,
	"audiences" text COLLATE "C" NOT NULL,
	"capabilities" text COLLATE "C",
	"scopes" text COLLATE "C",
	"issue_time" bigint NOT NULL,
	"expire_time" bigint NOT NULL,
	"family_expire_time" bigint NOT NULL,
	"used_time" bigint
);
--> statement-breakpoint
CREATE TABLE "registry_settings" (
	"group_uid" text COLLATE "C" PRIMARY KEY NOT NULL,
	"unique_tags" boolean DEFAULT false NOT NULL,
	"eol_grace_period" boolean DEFAULT false NOT NULL,
	"update_time" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "repo_deployments" (
	"repo_uid" text COLLATE "C" PRIMARY KEY NOT NULL,
	"charts" text COLLATE "C" DEFAULT '[]' NOT NULL,
	"create_time" bigint NOT NULL,
	"update_time" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "repo_readmes" (
	"repo_uid" text COLLATE "C" PRIMARY KEY NOT NULL,
	"content" text COLLATE "C" NOT NULL,
	"update_time" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "repos" (
	"uid" text COLLATE "C" PRIMARY KEY NOT NULL,
	"parent_uid" text COLLATE "C" NOT NULL,
	"name" text COLLATE "C" NOT NULL,
	"description" text COLLATE "C" DEFAULT '' NOT NULL,
	"catalog_tier" integer DEFAULT 0 NOT NULL,
	"bundles" text COLLATE "C" DEFAULT '[]' NOT NULL,
	"aliases" text COLLATE "C" DEFAULT '[]' NOT NULL,
	"active_tags" text COLLATE "C" DEFAULT '[]' NOT NULL,
	"create_time" bigint NOT NULL,
	"update_time" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "role_bindings" (
	"uid" text COLLATE "C" PRIMARY KEY NOT NULL,
	"group_uid" text COLLATE "C" NOT NULL,
	"identity_uid" text COLLATE "C" NOT NULL,
	"role_uid" text COLLATE "C" NOT NULL,
	"create_time" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "roles" (
	"uid" text COLLATE "C" PRIMARY KEY NOT NULL,
	"parent_uid" text COLLATE "C",
	"name" text COLLATE "C" NOT NULL,
	"description" text COLLATE "C" DEFAULT '' NOT NULL,
	"capabilities" text COLLATE "C" DEFAULT '[]' NOT NULL,
	"built_in" boolean DEFAULT false NOT NULL,
	"create_time" bigint NOT NULL,
	"update_time" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "scim_credentials" (
	"identity_provider_uid" text COLLATE "C" PRIMARY KEY NOT NULL,
	"enabled" boolean DEFAULT false NOT NULL,
	"token_hash" text COLLATE "C",
	"token_expire_time" bigint,
	"previous_token_hash" text COLLATE "C",
	"previous_token_expire_time" bigint,
	"revoke_time" bigint,
	"issued" boolean DEFAULT false NOT NULL,
	"etag" text COLLATE "C" NOT NULL,
	"update_time" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "server_keys" (
	"name" text COLLATE "C" PRIMARY KEY NOT NULL,
	"value" "bytea" NOT NULL,
	"create_time" bigint DEFAULT (floor(extract(epoch from clock_timestamp()) * 1000))::bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "tag_history" (
	"seq" bigint PRIMARY KEY GENERATED BY DEFAULT AS IDENTITY (sequence name "tag_history_seq_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"tag_uid" text COLLATE "C" NOT NULL,
	"digest" text COLLATE "C" NOT NULL,
	"move_time" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "tags" (
	"uid" text COLLATE "C" PRIMARY KEY NOT NULL,
	"repo_uid" text COLLATE "C" NOT NULL,
	"name" text COLLATE "C" NOT NULL,
	"digest" text COLLATE "C" NOT NULL,
	"deprecated" boolean DEFAULT false NOT NULL,
	"bundles" text COLLATE "C" DEFAULT '[]' NOT NULL,
	"generated" integer DEFAULT 0 NOT NULL,
	"update_time" bigint NOT NULL
);
--> statement-breakpoint
ALTER TABLE "account_associations" ADD CONSTRAINT "account_associations_uid_groups_uid_fk" FOREIGN KEY ("uid") REFERENCES "public"."groups"("uid") ON DELETE restrict ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "advisories" ADD CONSTRAINT "advisories_parent_uid_groups_uid_fk" FOREIGN KEY ("parent_uid") REFERENCES "public"."groups"("uid") ON DELETE restrict ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "advisory_aliases" ADD CONSTRAINT "advisory_aliases_advisory_uid_advisories_uid_fk" FOREIGN KEY ("advisory_uid") REFERENCES "public"."advisories"("uid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "advisory_events" ADD CONSTRAINT "advisory_events_advisory_uid_advisories_uid_fk" FOREIGN KEY ("advisory_uid") REFERENCES "public"."advisories"("uid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "eol_tags" ADD CONSTRAINT "eol_tags_tag_uid_tags_uid_fk" FOREIGN KEY ("tag_uid") REFERENCES "public"."tags"("uid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "group_access_requests" ADD CONSTRAINT "group_access_requests_group_uid_groups_uid_fk" FOREIGN KEY ("group_uid") REFERENCES "public"."groups"("uid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "group_access_requests" ADD CONSTRAINT "group_access_requests_identity_uid_identities_uid_fk" FOREIGN KEY ("identity_uid") REFERENCES "public"."identities"("uid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "group_invites" ADD CONSTRAINT "group_invites_parent_uid_groups_uid_fk" FOREIGN KEY ("parent_uid") REFERENCES "public"."groups"("uid") ON DELETE restrict ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "group_invites" ADD CONSTRAINT "group_invites_role_uid_roles_uid_fk" FOREIGN KEY ("role_uid") REFERENCES "public"."roles"("uid") ON DELETE restrict ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "groups" ADD CONSTRAINT "groups_parent_uid_groups_uid_fk" FOREIGN KEY ("parent_uid") REFERENCES "public"."groups"("uid") ON DELETE restrict ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "identities" ADD CONSTRAINT "identities_parent_uid_groups_uid_fk" FOREIGN KEY ("parent_uid") REFERENCES "public"."groups"("uid") ON DELETE restrict ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "identity_providers" ADD CONSTRAINT "identity_providers_parent_uid_groups_uid_fk" FOREIGN KEY ("parent_uid") REFERENCES "public"."groups"("uid") ON DELETE restrict ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "refresh_tokens" ADD CONSTRAINT "refresh_tokens_identity_uid_identities_uid_fk" FOREIGN KEY ("identity_uid") REFERENCES "public"."identities"("uid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "registry_settings" ADD CONSTRAINT "registry_settings_group_uid_groups_uid_fk" FOREIGN KEY ("group_uid") REFERENCES "public"."groups"("uid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "repo_deployments" ADD CONSTRAINT "repo_deployments_repo_uid_repos_uid_fk" FOREIGN KEY ("repo_uid") REFERENCES "public"."repos"("uid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "repo_readmes" ADD CONSTRAINT "repo_readmes_repo_uid_repos_uid_fk" FOREIGN KEY ("repo_uid") REFERENCES "public"."repos"("uid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "repos" ADD CONSTRAINT "repos_parent_uid_groups_uid_fk" FOREIGN KEY ("parent_uid") REFERENCES "public"."groups"("uid") ON DELETE restrict ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "role_bindings" ADD CONSTRAINT "role_bindings_group_uid_groups_uid_fk" FOREIGN KEY ("group_uid") REFERENCES "public"."groups"("uid") ON DELETE restrict ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "role_bindings" ADD CONSTRAINT "role_bindings_identity_uid_identities_uid_fk" FOREIGN KEY ("identity_uid") REFERENCES "public"."identities"("uid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "role_bindings" ADD CONSTRAINT "role_bindings_role_uid_roles_uid_fk" FOREIGN KEY ("role_uid") REFERENCES "public"."roles"("uid") ON DELETE restrict ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "roles" ADD CONSTRAINT "roles_parent_uid_groups_uid_fk" FOREIGN KEY ("parent_uid") REFERENCES "public"."groups"("uid") ON DELETE restrict ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "scim_credentials" ADD CONSTRAINT "scim_credentials_identity_provider_uid_identity_providers_uid_fk" FOREIGN KEY ("identity_provider_uid") REFERENCES "public"."identity_providers"("uid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tag_history" ADD CONSTRAINT "tag_history_tag_uid_tags_uid_fk" FOREIGN KEY ("tag_uid") REFERENCES "public"."tags"("uid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tags" ADD CONSTRAINT "tags_repo_uid_repos_uid_fk" FOREIGN KEY ("repo_uid") REFERENCES "public"."repos"("uid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "account_associations_name_uid_idx" ON "account_associations" USING btree ("name","uid");--> statement-breakpoint
CREATE INDEX "account_associations_create_time_uid_idx" ON "account_associations" USING btree ("create_time","uid");--> statement-breakpoint
CREATE UNIQUE INDEX "advisories_key_idx" ON "advisories" USING btree ("parent_uid","advisory_id","artifact_name");--> statement-breakpoint
CREATE INDEX "advisories_parent_uid_idx" ON "advisories" USING btree ("parent_uid","uid");--> statement-breakpoint
CREATE INDEX "advisories_advisory_id_uid_idx" ON "advisories" USING btree ("advisory_id","uid");--> statement-breakpoint
CREATE INDEX "advisories_legacy_id_idx" ON "advisories" USING btree ("legacy_advisory_id","uid");--> statement-breakpoint
CREATE INDEX "advisories_artifact_name_idx" ON "advisories" USING btree ("artifact_name","uid");--> statement-breakpoint
CREATE INDEX "advisories_artifact_type_idx" ON "advisories" USING btree ("artifact_type","uid");--> statement-breakpoint
CREATE INDEX "advisories_artifact_arch_idx" ON "advisories" USING btree ("artifact_architecture","uid");--> statement-breakpoint
CREATE INDEX "advisories_component_name_idx" ON "advisories" USING btree ("component_name","uid");--> statement-breakpoint
CREATE INDEX "advisories_component_type_idx" ON "advisories" USING btree ("component_type","uid");--> statement-breakpoint
CREATE INDEX "advisories_component_location_idx" ON "advisories" USING btree ("component_location","uid");--> statement-breakpoint
CREATE INDEX "advisories_origin_idx" ON "advisories" USING btree ("origin","uid");--> statement-breakpoint
CREATE INDEX "advisories_latest_event_type_idx" ON "advisories" USING btree ("latest_event_type","uid");--> statement-breakpoint
CREATE INDEX "advisories_create_time_uid_idx" ON "advisories" USING btree ("create_time","uid");--> statement-breakpoint
CREATE INDEX "advisories_update_time_uid_idx" ON "advisories" USING btree ("update_time","uid");--> statement-breakpoint
CREATE UNIQUE INDEX "advisory_aliases_pk" ON "advisory_aliases" USING btree ("advisory_uid","alias");--> statement-breakpoint
CREATE INDEX "advisory_aliases_alias_idx" ON "advisory_aliases" USING btree ("alias","advisory_uid");--> statement-breakpoint
CREATE UNIQUE INDEX "advisory_events_seq_idx" ON "advisory_events" USING btree ("advisory_uid","seq");--> statement-breakpoint
CREATE INDEX "advisory_events_author_idx" ON "advisory_events" USING btree ("author","advisory_uid");--> statement-breakpoint
CREATE INDEX "advisory_events_reviewer_idx" ON "advisory_events" USING btree ("reviewer","advisory_uid");--> statement-breakpoint
CREATE INDEX "advisory_events_state_idx" ON "advisory_events" USING btree ("review_state","advisory_uid");--> statement-breakpoint
CREATE INDEX "advisory_events_type_idx" ON "advisory_events" USING btree ("event_type","advisory_uid");--> statement-breakpoint
CREATE INDEX "group_access_requests_identity_uid_idx" ON "group_access_requests" USING btree ("identity_uid");--> statement-breakpoint
CREATE INDEX "group_invites_parent_uid_idx" ON "group_invites" USING btree ("parent_uid","uid");--> statement-breakpoint
CREATE INDEX "group_invites_key_id_idx" ON "group_invites" USING btree ("key_id");--> statement-breakpoint
CREATE INDEX "group_invites_create_time_uid_idx" ON "group_invites" USING btree ("create_time","uid");--> statement-breakpoint
CREATE INDEX "group_invites_expiration_time_uid_idx" ON "group_invites" USING btree ("expiration_time","uid");--> statement-breakpoint
CREATE INDEX "groups_parent_uid_idx" ON "groups" USING btree ("parent_uid","uid");--> statement-breakpoint
CREATE INDEX "groups_name_uid_idx" ON "groups" USING btree ("name","uid");--> statement-breakpoint
CREATE INDEX "groups_create_time_uid_idx" ON "groups" USING btree ("create_time","uid");--> statement-breakpoint
CREATE INDEX "groups_update_time_uid_idx" ON "groups" USING btree ("update_time","uid");--> statement-breakpoint
CREATE INDEX "identities_parent_uid_idx" ON "identities" USING btree ("parent_uid","uid");--> statement-breakpoint
CREATE INDEX "identities_name_uid_idx" ON "identities" USING btree ("name","uid");--> statement-breakpoint
CREATE INDEX "identities_create_time_uid_idx" ON "identities" USING btree ("create_time","uid");--> statement-breakpoint
CREATE INDEX "identities_update_time_uid_idx" ON "identities" USING btree ("update_time","uid");--> statement-breakpoint
CREATE INDEX "identities_claim_idx" ON "identities" USING btree ("claim_issuer","claim_subject");--> statement-breakpoint
CREATE INDEX "identity_providers_parent_uid_idx" ON "identity_providers" USING btree ("parent_uid","uid");--> statement-breakpoint
CREATE INDEX "identity_providers_name_uid_idx" ON "identity_providers" USING btree ("name","uid");--> statement-breakpoint
CREATE INDEX "identity_providers_create_time_uid_idx" ON "identity_providers" USING btree ("create_time","uid");--> statement-breakpoint
CREATE INDEX "identity_providers_update_time_uid_idx" ON "identity_providers" USING btree ("update_time","uid");--> statement-breakpoint
CREATE INDEX "refresh_tokens_family_idx" ON "refresh_tokens" USING btree ("family_id");--> statement-breakpoint
CREATE INDEX "refresh_tokens_identity_idx" ON "refresh_tokens" USING btree ("identity_uid");--> statement-breakpoint
CREATE INDEX "refresh_tokens_expire_idx" ON "refresh_tokens" USING btree ("expire_time");--> statement-breakpoint
CREATE UNIQUE INDEX "repos_parent_name_idx" ON "repos" USING btree ("parent_uid","name");--> statement-breakpoint
CREATE INDEX "repos_parent_uid_idx" ON "repos" USING btree ("parent_uid","uid");--> statement-breakpoint
CREATE INDEX "repos_name_uid_idx" ON "repos" USING btree ("name","uid");--> statement-breakpoint
CREATE INDEX "repos_create_time_uid_idx" ON "repos" USING btree ("create_time","uid");--> statement-breakpoint
CREATE INDEX "repos_update_time_uid_idx" ON "repos" USING btree ("update_time","uid");--> statement-breakpoint
CREATE UNIQUE INDEX "role_bindings_unique_idx" ON "role_bindings" USING btree ("group_uid","identity_uid","role_uid");--> statement-breakpoint
CREATE INDEX "role_bindings_group_uid_idx" ON "role_bindings" USING btree ("group_uid","uid");--> statement-breakpoint
CREATE INDEX "role_bindings_identity_idx" ON "role_bindings" USING btree ("identity_uid","uid");--> statement-breakpoint
CREATE INDEX "role_bindings_role_idx" ON "role_bindings" USING btree ("role_uid","uid");--> statement-breakpoint
CREATE INDEX "role_bindings_create_time_uid_idx" ON "role_bindings" USING btree ("create_time","uid");--> statement-breakpoint
CREATE INDEX "roles_parent_uid_idx" ON "roles" USING btree ("parent_uid","uid");--> statement-breakpoint
CREATE INDEX "roles_name_uid_idx" ON "roles" USING btree ("name","uid");--> statement-breakpoint
CREATE INDEX "roles_create_time_uid_idx" ON "roles" USING btree ("create_time","uid");--> statement-breakpoint
CREATE INDEX "roles_update_time_uid_idx" ON "roles" USING btree ("update_time","uid");--> statement-breakpoint
CREATE INDEX "scim_credentials_token_idx" ON "scim_credentials" USING btree ("token_hash");--> statement-breakpoint
CREATE INDEX "scim_credentials_previous_token_idx" ON "scim_credentials" USING btree ("previous_token_hash");--> statement-breakpoint
CREATE INDEX "tag_history_tag_time_idx" ON "tag_history" USING btree ("tag_uid","move_time","seq");--> statement-breakpoint
CREATE UNIQUE INDEX "tags_repo_name_idx" ON "tags" USING btree ("repo_uid","name");--> statement-breakpoint
CREATE INDEX "tags_repo_uid_idx" ON "tags" USING btree ("repo_uid","uid");--> statement-breakpoint
CREATE INDEX "tags_name_uid_idx" ON "tags" USING btree ("name","uid");--> statement-breakpoint
CREATE INDEX "tags_digest_uid_idx" ON "tags" USING btree ("digest","uid");--> statement-breakpoint
CREATE INDEX "tags_update_time_uid_idx" ON "tags" USING btree ("update_time","uid");