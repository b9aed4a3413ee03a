CREATE TABLE "child_counts" (
	"parent_uid" text COLLATE "C" NOT NULL,
	"kind" text COLLATE "C" NOT NULL,
	"stripe" smallint NOT NULL,
	"n" bigint NOT NULL,
	CONSTRAINT "child_counts_parent_uid_kind_stripe_pk" PRIMARY KEY("parent_uid","kind","stripe")
);

--> statement-breakpoint
-- The triggers that keep child_counts (schema.ts) equal to the rows, for every writer, then
-- the counts of the rows already there. One transaction (the migrator's): each CREATE TRIGGER
-- locks its table against writes until the commit, so a row committed before it is in the
-- backfill below and a row written after the commit fires the trigger; none is counted twice
-- or missed, even with an older replica writing during the upgrade.
-- Statement-level with transition tables: one upsert per statement and parent, not per row
-- (a `trellis db copy` batch of 500 rows is one). Each connection adds to its own stripe,
-- rows ordered by key, so two writers lock counter rows in one order. Counts only ever move by
-- the rows a statement wrote, so a count is exact whatever order triggers fire in (a cascaded
-- delete's may fire after its parent's); a stripe row back at zero is dropped by the writer
-- that holds it. A parent column that changes (no writer does today) moves the row's count; a
-- TRUNCATE empties the kind.
CREATE FUNCTION "trellis_count_groups_added"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "child_counts" AS c ("parent_uid", "kind", "stripe", "n")
  SELECT coalesce(r."parent_uid", ''), 'groups', (pg_backend_pid() % 32)::smallint, count(*) FROM added r GROUP BY 1, 2 ORDER BY 1, 2
  ON CONFLICT ("parent_uid", "kind", "stripe") DO UPDATE SET "n" = c."n" + excluded."n";
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "trellis_count_groups_added" AFTER INSERT ON "groups" REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION "trellis_count_groups_added"();
--> statement-breakpoint
CREATE FUNCTION "trellis_count_groups_removed"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "child_counts" AS c ("parent_uid", "kind", "stripe", "n")
  SELECT coalesce(r."parent_uid", ''), 'groups', (pg_backend_pid() % 32)::smallint, -count(*) FROM removed r GROUP BY 1, 2 ORDER BY 1, 2
  ON CONFLICT ("parent_uid", "kind", "stripe") DO UPDATE SET "n" = c."n" + excluded."n";
  -- This connection's stripe rows it brought to zero go (it holds their locks to commit).
  DELETE FROM "child_counts" c USING (SELECT DISTINCT coalesce(r."parent_uid", '') AS p, 'groups' AS k FROM removed r) g
    WHERE c."parent_uid" = g.p AND c."kind" = g.k AND c."stripe" = (pg_backend_pid() % 32)::smallint AND c."n" = 0;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "trellis_count_groups_removed" AFTER DELETE ON "groups" REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION "trellis_count_groups_removed"();
--> statement-breakpoint
CREATE FUNCTION "trellis_count_groups_moved"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "child_counts" AS c ("parent_uid", "kind", "stripe", "n")
  SELECT p, k, (pg_backend_pid() % 32)::smallint, d FROM (VALUES (coalesce(OLD."parent_uid", ''), 'groups', -1), (coalesce(NEW."parent_uid", ''), 'groups', 1)) AS m(p, k, d) ORDER BY 1, 2
  ON CONFLICT ("parent_uid", "kind", "stripe") DO UPDATE SET "n" = c."n" + excluded."n";
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "trellis_count_groups_moved" AFTER UPDATE OF "parent_uid" ON "groups" FOR EACH ROW WHEN (OLD."parent_uid" IS DISTINCT FROM NEW."parent_uid") EXECUTE FUNCTION "trellis_count_groups_moved"();
--> statement-breakpoint
CREATE FUNCTION "trellis_count_groups_truncated"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM "child_counts" WHERE "kind" = 'groups';
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "trellis_count_groups_truncated" AFTER TRUNCATE ON "groups" FOR EACH STATEMENT EXECUTE FUNCTION "trellis_count_groups_truncated"();
--> statement-breakpoint
CREATE FUNCTION "trellis_count_identities_added"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "child_counts" AS c ("parent_uid", "kind", "stripe", "n")
  SELECT coalesce(r."parent_uid", ''), 'identities', (pg_backend_pid() % 32)::smallint, count(*) FROM added r GROUP BY 1, 2 ORDER BY 1, 2
  ON CONFLICT ("parent_uid", "kind", "stripe") DO UPDATE SET "n" = c."n" + excluded."n";
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "trellis_count_identities_added" AFTER INSERT ON "identities" REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION "trellis_count_identities_added"();
--> statement-breakpoint
CREATE FUNCTION "trellis_count_identities_removed"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "child_counts" AS c ("parent_uid", "kind", "stripe", "n")
  SELECT coalesce(r."parent_uid", ''), 'identities', (pg_backend_pid() % 32)::smallint, -count(*) FROM removed r GROUP BY 1, 2 ORDER BY 1, 2
  ON CONFLICT ("parent_uid", "kind", "stripe") DO UPDATE SET "n" = c."n" + excluded."n";
  -- This connection's stripe rows it brought to zero go (it holds their locks to commit).
  DELETE FROM "child_counts" c USING (SELECT DISTINCT coalesce(r."parent_uid", '') AS p, 'identities' AS k FROM removed r) g
    WHERE c."parent_uid" = g.p AND c."kind" = g.k AND c."stripe" = (pg_backend_pid() % 32)::smallint AND c."n" = 0;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "trellis_count_identities_removed" AFTER DELETE ON "identities" REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION "trellis_count_identities_removed"();
--> statement-breakpoint
CREATE FUNCTION "trellis_count_identities_moved"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "child_counts" AS c ("parent_uid", "kind", "stripe", "n")
  SELECT p, k, (pg_backend_pid() % 32)::smallint, d FROM (VALUES (coalesce(OLD."parent_uid", ''), 'identities', -1), (coalesce(NEW."parent_uid", ''), 'identities', 1)) AS m(p, k, d) ORDER BY 1, 2
  ON CONFLICT ("parent_uid", "kind", "stripe") DO UPDATE SET "n" = c."n" + excluded."n";
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "trellis_count_identities_moved" AFTER UPDATE OF "parent_uid" ON "identities" FOR EACH ROW WHEN (OLD."parent_uid" IS DISTINCT FROM NEW."parent_uid") EXECUTE FUNCTION "trellis_count_identities_moved"();
--> statement-breakpoint
CREATE FUNCTION "trellis_count_identities_truncated"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM "child_counts" WHERE "kind" = 'identities';
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "trellis_count_identities_truncated" AFTER TRUNCATE ON "identities" FOR EACH STATEMENT EXECUTE FUNCTION "trellis_count_identities_truncated"();
--> statement-breakpoint
CREATE FUNCTION "trellis_count_repos_added"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "child_counts" AS c ("parent_uid", "kind", "stripe", "n")
  SELECT coalesce(r."parent_uid", ''), 'repos', (pg_backend_pid() % 32)::smallint, count(*) FROM added r GROUP BY 1, 2 ORDER BY 1, 2
  ON CONFLICT ("parent_uid", "kind", "stripe") DO UPDATE SET "n" = c."n" + excluded."n";
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "trellis_count_repos_added" AFTER INSERT ON "repos" REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION "trellis_count_repos_added"();
--> statement-breakpoint
CREATE FUNCTION "trellis_count_repos_removed"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "child_counts" AS c ("parent_uid", "kind", "stripe", "n")
  SELECT coalesce(r."parent_uid", ''), 'repos', (pg_backend_pid() % 32)::smallint, -count(*) FROM removed r GROUP BY 1, 2 ORDER BY 1, 2
  ON CONFLICT ("parent_uid", "kind", "stripe") DO UPDATE SET "n" = c."n" + excluded."n";
  -- This connection's stripe rows it brought to zero go (it holds their locks to commit).
  DELETE FROM "child_counts" c USING (SELECT DISTINCT coalesce(r."parent_uid", '') AS p, 'repos' AS k FROM removed r) g
    WHERE c."parent_uid" = g.p AND c."kind" = g.k AND c."stripe" = (pg_backend_pid() % 32)::smallint AND c."n" = 0;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "trellis_count_repos_removed" AFTER DELETE ON "repos" REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION "trellis_count_repos_removed"();
--> statement-breakpoint
CREATE FUNCTION "trellis_count_repos_moved"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "child_counts" AS c ("parent_uid", "kind", "stripe", "n")
  SELECT p, k, (pg_backend_pid() % 32)::smallint, d FROM (VALUES (coalesce(OLD."parent_uid", ''), 'repos', -1), (coalesce(NEW."parent_uid", ''), 'repos', 1)) AS m(p, k, d) ORDER BY 1, 2
  ON CONFLICT ("parent_uid", "kind", "stripe") DO UPDATE SET "n" = c."n" + excluded."n";
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "trellis_count_repos_moved" AFTER UPDATE OF "parent_uid" ON "repos" FOR EACH ROW WHEN (OLD."parent_uid" IS DISTINCT FROM NEW."parent_uid") EXECUTE FUNCTION "trellis_count_repos_moved"();
--> statement-breakpoint
CREATE FUNCTION "trellis_count_repos_truncated"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM "child_counts" WHERE "kind" = 'repos';
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "trellis_count_repos_truncated" AFTER TRUNCATE ON "repos" FOR EACH STATEMENT EXECUTE FUNCTION "trellis_count_repos_truncated"();
--> statement-breakpoint
CREATE FUNCTION "trellis_count_tags_added"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "child_counts" AS c ("parent_uid", "kind", "stripe", "n")
  SELECT coalesce(r."repo_uid", ''), 'tags.' || r."generated", (pg_backend_pid() % 32)::smallint, count(*) FROM added r GROUP BY 1, 2 ORDER BY 1, 2
  ON CONFLICT ("parent_uid", "kind", "stripe") DO UPDATE SET "n" = c."n" + excluded."n";
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "trellis_count_tags_added" AFTER INSERT ON "tags" REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION "trellis_count_tags_added"();
--> statement-breakpoint
CREATE FUNCTION "trellis_count_tags_removed"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "child_counts" AS c ("parent_uid", "kind", "stripe", "n")
  SELECT coalesce(r."repo_uid", ''), 'tags.' || r."generated", (pg_backend_pid() % 32)::smallint, -count(*) FROM removed r GROUP BY 1, 2 ORDER BY 1, 2
  ON CONFLICT ("parent_uid", "kind", "stripe") DO UPDATE SET "n" = c."n" + excluded."n";
  -- This connection's stripe rows it brought to zero go (it holds their locks to commit).
  DELETE FROM "child_counts" c USING (SELECT DISTINCT coalesce(r."repo_uid", '') AS p, 'tags.' || r."generated" AS k FROM removed r) g
    WHERE c."parent_uid" = g.p AND c."kind" = g.k AND c."stripe" = (pg_backend_pid() % 32)::smallint AND c."n" = 0;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "trellis_count_tags_removed" AFTER DELETE ON "tags" REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION "trellis_count_tags_removed"();
--> statement-breakpoint
CREATE FUNCTION "trellis_count_tags_moved"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "child_counts" AS c ("parent_uid", "kind", "stripe", "n")
  SELECT p, k, (pg_backend_pid() % 32)::smallint, d FROM (VALUES (coalesce(OLD."repo_uid", ''), 'tags.' || OLD."generated", -1), (coalesce(NEW."repo_uid", ''), 'tags.' || NEW."generated", 1)) AS m(p, k, d) ORDER BY 1, 2
  ON CONFLICT ("parent_uid", "kind", "stripe") DO UPDATE SET "n" = c."n" + excluded."n";
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "trellis_count_tags_moved" AFTER UPDATE OF "repo_uid", "generated" ON "tags" FOR EACH ROW WHEN (OLD."repo_uid" IS DISTINCT FROM NEW."repo_uid" OR OLD."generated" IS DISTINCT FROM NEW."generated") EXECUTE FUNCTION "trellis_count_tags_moved"();
--> statement-breakpoint
CREATE FUNCTION "trellis_count_tags_truncated"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM "child_counts" WHERE "kind" LIKE 'tags.%';
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "trellis_count_tags_truncated" AFTER TRUNCATE ON "tags" FOR EACH STATEMENT EXECUTE FUNCTION "trellis_count_tags_truncated"();
--> statement-breakpoint
CREATE FUNCTION "trellis_count_advisories_added"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "child_counts" AS c ("parent_uid", "kind", "stripe", "n")
  SELECT coalesce(r."parent_uid", ''), 'advisories', (pg_backend_pid() % 32)::smallint, count(*) FROM added r GROUP BY 1, 2 ORDER BY 1, 2
  ON CONFLICT ("parent_uid", "kind", "stripe") DO UPDATE SET "n" = c."n" + excluded."n";
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "trellis_count_advisories_added" AFTER INSERT ON "advisories" REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION "trellis_count_advisories_added"();
--> statement-breakpoint
CREATE FUNCTION "trellis_count_advisories_removed"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "child_counts" AS c ("parent_uid", "kind", "stripe", "n")
  SELECT coalesce(r."parent_uid", ''), 'advisories', (pg_backend_pid() % 32)::smallint, -count(*) FROM removed r GROUP BY 1, 2 ORDER BY 1, 2
  ON CONFLICT ("parent_uid", "kind", "stripe") DO UPDATE SET "n" = c."n" + excluded."n";
  -- This connection's stripe rows it brought to zero go (it holds their locks to commit).
  DELETE FROM "child_counts" c USING (SELECT DISTINCT coalesce(r."parent_uid", '') AS p, 'advisories' AS k FROM removed r) g
    WHERE c."parent_uid" = g.p AND c."kind" = g.k AND c."stripe" = (pg_backend_pid() % 32)::smallint AND c."n" = 0;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "trellis_count_advisories_removed" AFTER DELETE ON "advisories" REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION "trellis_count_advisories_removed"();
--> statement-breakpoint
CREATE FUNCTION "trellis_count_advisories_moved"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "child_counts" AS c ("parent_uid", "kind", "stripe", "n")
  SELECT p, k, (pg_backend_pid() % 32)::smallint, d FROM (VALUES (coalesce(OLD."parent_uid", ''), 'advisories', -1), (coalesce(NEW."parent_uid", ''), 'advisories', 1)) AS m(p, k, d) ORDER BY 1, 2
  ON CONFLICT ("parent_uid", "kind", "stripe") DO UPDATE SET "n" = c."n" + excluded."n";
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "trellis_count_advisories_moved" AFTER UPDATE OF "parent_uid" ON "advisories" FOR EACH ROW WHEN (OLD."parent_uid" IS DISTINCT FROM NEW."parent_uid") EXECUTE FUNCTION "trellis_count_advisories_moved"();
--> statement-breakpoint
CREATE FUNCTION "trellis_count_advisories_truncated"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM "child_counts" WHERE "kind" = 'advisories';
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "trellis_count_advisories_truncated" AFTER TRUNCATE ON "advisories" FOR EACH STATEMENT EXECUTE FUNCTION "trellis_count_advisories_truncated"();
--> statement-breakpoint
CREATE FUNCTION "trellis_count_role_bindings_added"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "child_counts" AS c ("parent_uid", "kind", "stripe", "n")
  SELECT coalesce(r."group_uid", ''), 'role_bindings', (pg_backend_pid() % 32)::smallint, count(*) FROM added r GROUP BY 1, 2 ORDER BY 1, 2
  ON CONFLICT ("parent_uid", "kind", "stripe") DO UPDATE SET "n" = c."n" + excluded."n";
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "trellis_count_role_bindings_added" AFTER INSERT ON "role_bindings" REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION "trellis_count_role_bindings_added"();
--> statement-breakpoint
CREATE FUNCTION "trellis_count_role_bindings_removed"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "child_counts" AS c ("parent_uid", "kind", "stripe", "n")
  SELECT coalesce(r."group_uid", ''), 'role_bindings', (pg_backend_pid() % 32)::smallint, -count(*) FROM removed r GROUP BY 1, 2 ORDER BY 1, 2
  ON CONFLICT ("parent_uid", "kind", "stripe") DO UPDATE SET "n" = c."n" + excluded."n";
  -- This connection's stripe rows it brought to zero go (it holds their locks to commit).
  DELETE FROM "child_counts" c USING (SELECT DISTINCT coalesce(r."group_uid", '') AS p, 'role_bindings' AS k FROM removed r) g
    WHERE c."parent_uid" = g.p AND c."kind" = g.k AND c."stripe" = (pg_backend_pid() % 32)::smallint AND c."n" = 0;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "trellis_count_role_bindings_removed" AFTER DELETE ON "role_bindings" REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION "trellis_count_role_bindings_removed"();
--> statement-breakpoint
CREATE FUNCTION "trellis_count_role_bindings_moved"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "child_counts" AS c ("parent_uid", "kind", "stripe", "n")
  SELECT p, k, (pg_backend_pid() % 32)::smallint, d FROM (VALUES (coalesce(OLD."group_uid", ''), 'role_bindings', -1), (coalesce(NEW."group_uid", ''), 'role_bindings', 1)) AS m(p, k, d) ORDER BY 1, 2
  ON CONFLICT ("parent_uid", "kind", "stripe") DO UPDATE SET "n" = c."n" + excluded."n";
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "trellis_count_role_bindings_moved" AFTER UPDATE OF "group_uid" ON "role_bindings" FOR EACH ROW WHEN (OLD."group_uid" IS DISTINCT FROM NEW."group_uid") EXECUTE FUNCTION "trellis_count_role_bindings_moved"();
--> statement-breakpoint
CREATE FUNCTION "trellis_count_role_bindings_truncated"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM "child_counts" WHERE "kind" = 'role_bindings';
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "trellis_count_role_bindings_truncated" AFTER TRUNCATE ON "role_bindings" FOR EACH STATEMENT EXECUTE FUNCTION "trellis_count_role_bindings_truncated"();
--> statement-breakpoint
INSERT INTO "child_counts" ("parent_uid", "kind", "stripe", "n") SELECT coalesce(r."parent_uid", ''), 'groups', 0, count(*) FROM "groups" r GROUP BY 1, 2;
--> statement-breakpoint
INSERT INTO "child_counts" ("parent_uid", "kind", "stripe", "n") SELECT coalesce(r."parent_uid", ''), 'identities', 0, count(*) FROM "identities" r GROUP BY 1, 2;
--> statement-breakpoint
INSERT INTO "child_counts" ("parent_uid", "kind", "stripe", "n") SELECT coalesce(r."parent_uid", ''), 'repos', 0, count(*) FROM "repos" r GROUP BY 1, 2;
--> statement-breakpoint
INSERT INTO "child_counts" ("parent_uid", "kind", "stripe", "n") SELECT coalesce(r."repo_uid", ''), 'tags.' || r."generated", 0, count(*) FROM "tags" r GROUP BY 1, 2;
--> statement-breakpoint
INSERT INTO "child_counts" ("parent_uid", "kind", "stripe", "n") SELECT coalesce(r."parent_uid", ''), 'advisories', 0, count(*) FROM "advisories" r GROUP BY 1, 2;
--> statement-breakpoint
INSERT INTO "child_counts" ("parent_uid", "kind", "stripe", "n") SELECT coalesce(r."group_uid", ''), 'role_bindings', 0, count(*) FROM "role_bindings" r GROUP BY 1, 2;
