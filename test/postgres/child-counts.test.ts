/**
 * total_count on PostgreSQL from the counters kept with the rows (child_counts, kept by
 * triggers; src/store/postgres/child-counts.ts), through the real protocols (every door:
 * gRPC, gRPC-web, Connect, REST): right after creates, deletes (cascaded ones too), an
 * import, on two servers writing under one parent at once, and from a database migrated
 * with rows already in it. A first page of "the children of P" reads the counter and any
 * other filter counts the rows: proven by a counter row the test falsifies, which the one
 * shows and the other does not.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { DescMessage, DescMethodUnary, MessageInitShape } from "@bufbuild/protobuf";
import { drizzle } from "drizzle-orm/node-postgres";
import { migrate } from "drizzle-orm/node-postgres/migrator";
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { AdvisoriesService } from "../../gen/chainguard/platform/vulnerabilities/v2beta1/advisories_pb.js";
import { GroupsService } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { IdentitiesService } from "../../gen/chainguard/platform/iam/v2beta1/identities_pb.js";
import { RoleBindingsService } from "../../gen/chainguard/platform/iam/v2beta1/role_bindings_pb.js";
import { ReposService } from "../../gen/chainguard/platform/registry/v2beta1/repos_pb.js";
import { TagsService } from "../../gen/chainguard/platform/registry/v2beta1/tags_pb.js";
import { listInputFiles } from "../../src/import/read-records.js";
import { importFiles } from "../../src/import/run-import.js";
import { builtInRoleUid } from "../../src/store/builtin-roles.js";
import { openPostgres, POSTGRES_MIGRATIONS_DIR } from "../../src/store/postgres/connection.js";
import { createPostgresGroupsRepository } from "../../src/store/postgres/groups.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { createUserIdentity, identityToken } from "../support/auth.js";
import { bodyOf, type CallToken, callDoors } from "../support/call-method.js";
import { checkChildCounts } from "../support/child-counts.js";
import { describePostgres, freshPostgresDatabase } from "../support/postgres.js";
import { storeOfTestApp } from "../support/store-target.js";
import { closeGrpcClients } from "../support/transports.js";

const FIXTURES = path.join(import.meta.dirname, "../fixtures");
const DIGEST = `sha256:${"ab".repeat(32)}`;
/** A stripe no connection writes to (pg_backend_pid() % 32 is below 32): the test's own counter row. */
const FALSE_STRIPE = 99;

// Two real servers on a shared 2-core machine.
describePostgres("counts kept with the rows on PostgreSQL", { timeout: 60_000 }, () => {
  let url: string;
  let a: TestApp;
  let b: TestApp;
  let sql: pg.Pool;

  beforeAll(async () => {
    url = await freshPostgresDatabase("counts");
    a = await startTestApp({ databaseUrl: url });
    b = await startTestApp({ databaseUrl: url });
    sql = new pg.Pool({ connectionString: url, max: 2 });
  }, 60_000);
  afterAll(async () => {
    closeGrpcClients();
    await sql?.end();
    await a?.close();
    await b?.close();
  });

  /** A call on `app` (REST's door or an RPC transport's) that must succeed. */
  const call = async <M extends DescMessage>(
    app: TestApp,
    method: DescMethodUnary<M>,
    request: MessageInitShape<M>,
    door = callDoors[callDoors.length - 1]!,
    token: CallToken = undefined,
  ) => bodyOf(await door.call(app.url, token, method, request));

  /** total_count of a first page, the same on every door (it fails naming the door that differs). */
  const totalOnEveryDoor = async <M extends DescMessage>(method: DescMethodUnary<M>, request: MessageInitShape<M>, token: CallToken = undefined) => {
    const totals: Record<string, number> = {};
    for (const door of callDoors) totals[door.name] = Number((await call(a, method, request, door, token)).totalCount ?? 0);
    const values = new Set(Object.values(totals));
    expect(values.size, JSON.stringify(totals)).toBe(1);
    return [...values][0]!;
  };
  const rowCount = async (query: string, params: unknown[]) => Number((await sql.query(query, params)).rows[0].n);
  const expectCountersRight = async () => {
    const check = await checkChildCounts(sql);
    expect(check.mismatches).toEqual([]);
    return check;
  };
  const falsify = (parent: string, kind: string, by: number) =>
    sql.query("INSERT INTO child_counts (parent_uid, kind, stripe, n) VALUES ($1, $2, $3, $4)", [parent, kind, FALSE_STRIPE, by]);
  const restore = () => sql.query("DELETE FROM child_counts WHERE stripe = $1", [FALSE_STRIPE]);

  it("a first page of children_of (or in_root) reads the counter; any other filter counts the rows", async () => {
    const org = String((await call(a, GroupsService.method.createGroup, { group: { name: "counted org" } })).uid);
    const folders: string[] = [];
    for (const name of ["one", "two", "three"]) folders.push(String((await call(a, GroupsService.method.createGroup, { parent: org, group: { name } })).uid));
    await call(a, GroupsService.method.createGroup, { parent: folders[0]!, group: { name: "deeper" } });
    const roots = await rowCount("SELECT count(*) AS n FROM groups WHERE parent_uid IS NULL", []);
    expect(await totalOnEveryDoor(GroupsService.method.listGroups, { uidp: { childrenOf: org } })).toBe(3);
    expect(await totalOnEveryDoor(GroupsService.method.listGroups, { uidp: { inRoot: true } })).toBe(roots);

    await falsify(org, "groups", 1000);
    await falsify("", "groups", 500);
    try {
      // The counter is what these pages report...
      expect(await totalOnEveryDoor(GroupsService.method.listGroups, { uidp: { childrenOf: org } })).toBe(1003);
      expect(await totalOnEveryDoor(GroupsService.method.listGroups, { uidp: { inRoot: true } })).toBe(roots + 500);
      // ...and a filter that narrows the rows counts them.
      expect(await totalOnEveryDoor(GroupsService.method.listGroups, { uidp: { childrenOf: org }, name: "two" })).toBe(1);
      expect(await totalOnEveryDoor(GroupsService.method.listGroups, { uidp: { descendantsOf: org } })).toBe(4);
      expect(await totalOnEveryDoor(GroupsService.method.listGroups, { uidp: { childrenOf: org, ids: [folders[1]!] } })).toBe(1);
      expect(await totalOnEveryDoor(GroupsService.method.listGroups, { uidp: { childrenOf: org, inRoot: true } })).toBe(0);

      // A caller who sees one folder only may list the children of that folder (all of which
      // it sees: the counter answers); the children of the organization it lists too, but
      // only the one it sees (its folder), counted, never the organization's counter.
      const narrow = await createUserIdentity(a.dataDir, "narrow-reader");
      await call(a, RoleBindingsService.method.createRoleBinding, {
        parent: folders[0]!,
        roleBinding: { identityUid: narrow, roleUid: builtInRoleUid("viewer") },
      });
      const narrowToken = await identityToken(a.app, narrow);
      await falsify(folders[0]!, "groups", 7);
      expect(await totalOnEveryDoor(GroupsService.method.listGroups, { uidp: { childrenOf: folders[0]! } }, narrowToken)).toBe(8);
      expect(await totalOnEveryDoor(GroupsService.method.listGroups, { uidp: { childrenOf: org } }, narrowToken)).toBe(1);
      // Its restriction narrows the roots: they are counted (none of them is its folder).
      expect(await totalOnEveryDoor(GroupsService.method.listGroups, { uidp: { inRoot: true } }, narrowToken)).toBe(0);
      // A restriction that does not cover the parent is counted, not dropped.
      const engine = await openPostgres({ url, poolSize: 1 });
      try {
        const groupsRepo = createPostgresGroupsRepository(engine.db);
        expect(await groupsRepo.count({ uidp: { childrenOf: org }, within: [folders[1]!] })).toBe(1);
        expect(await groupsRepo.count({ uidp: { childrenOf: org }, within: [folders[1]!, org] })).toBe(1003);
        expect(await groupsRepo.count({ uidp: { childrenOf: org }, within: [] })).toBe(0);
      } finally {
        await engine.close();
      }
      // A caller who sees the whole organization: nothing is narrowed, the counter answers.
      const wide = await createUserIdentity(a.dataDir, "wide-reader");
      await call(a, RoleBindingsService.method.createRoleBinding, { parent: org, roleBinding: { identityUid: wide, roleUid: builtInRoleUid("viewer") } });
      expect(await totalOnEveryDoor(GroupsService.method.listGroups, { uidp: { childrenOf: org } }, await identityToken(a.app, wide))).toBe(1003);
    } finally {
      await restore();
    }
    await expectCountersRight();
  });

  it("every counted List stays exact through creates, an import, deletes and cascaded deletes", async () => {
    const org = String((await call(a, GroupsService.method.createGroup, { group: { name: "registry org" } })).uid);
    const folder = String((await call(a, GroupsService.method.createGroup, { parent: org, group: { name: "team" } })).uid);
    const bots: string[] = [];
    for (let i = 0; i < 3; i++) {
      bots.push(
        String(
          (
            await call(a, IdentitiesService.method.createIdentity, {
              parent: org,
              identity: {
                name: `bot${i}`,
                relationship: {
                  case: "claimMatch",
                  value: { iss: { case: "issuer", value: "https://issuer.example" }, sub: { case: "subject", value: `bot${i}` } },
                },
              },
            })
          ).uid,
        ),
      );
    }
    for (const bot of bots)
      await call(b, RoleBindingsService.method.createRoleBinding, { parent: folder, roleBinding: { identityUid: bot, roleUid: builtInRoleUid("viewer") } });
    const repo = String((await call(b, ReposService.method.createRepo, { parent: org, repo: { name: "made-here" } })).uid);
    for (const name of ["v1", "v2", "sha256-abc", "v1-20240101", "v1-r3"])
      await call(a, TagsService.method.createTag, { parent: repo, tag: { name, digest: DIGEST } });
    const summary = await importFiles(storeOfTestApp(a.dataDir), listInputFiles([path.join(FIXTURES, "osv"), path.join(FIXTURES, "import/registry.ndjson")]), {
      group: org,
    });
    expect(summary.loaded).toBeGreaterThan(0);
    await expectCountersRight();

    /** Every counted List of this org, against count(*) of its rows; with `falsified`, through the counter. */
    const expectTotals = async (falsified = 0) => {
      const cases: [DescMethodUnary<DescMessage>, MessageInitShape<DescMessage>, string, unknown[]][] = [
        [IdentitiesService.method.listIdentities, { uidp: { childrenOf: org } }, "SELECT count(*) AS n FROM identities WHERE parent_uid = $1", [org]],
        [
          RoleBindingsService.method.listRoleBindings,
          { uidp: { childrenOf: folder } },
          "SELECT count(*) AS n FROM role_bindings WHERE group_uid = $1",
          [folder],
        ],
        [ReposService.method.listRepos, { uidp: { childrenOf: org } }, "SELECT count(*) AS n FROM repos WHERE parent_uid = $1", [org]],
        [AdvisoriesService.method.listAdvisories, { uidp: { childrenOf: org } }, "SELECT count(*) AS n FROM advisories WHERE parent_uid = $1", [org]],
        [TagsService.method.listTags, { uidp: { childrenOf: repo } }, "SELECT count(*) AS n FROM tags WHERE repo_uid = $1 AND generated = 0", [repo]],
        [
          TagsService.method.listTags,
          { uidp: { childrenOf: repo }, includeReferrers: true, includeDates: true, includeEpochs: true },
          "SELECT count(*) AS n FROM tags WHERE repo_uid = $1",
          [repo],
        ],
      ] as never;
      for (const [method, request, counting, params] of cases) {
        const rows = await rowCount(counting, params);
        expect(await totalOnEveryDoor(method, request), `${method.name} ${JSON.stringify(request)}`).toBe(rows + falsified);
      }
    };
    await expectTotals();
    expect(await rowCount("SELECT count(*) AS n FROM advisories WHERE parent_uid = $1", [org])).toBeGreaterThan(0);
    // Each of those Lists reads its counter.
    for (const [parent, kind] of [
      [org, "identities"],
      [folder, "role_bindings"],
      [org, "repos"],
      [org, "advisories"],
      [repo, "tags.0"],
    ]) {
      await falsify(parent!, kind!, 1000);
    }
    try {
      await expectTotals(1000);
    } finally {
      await restore();
    }

    // Deletes through the API, on either server: a tag, a binding, an identity with its
    // bindings, a repo with its tags.
    const [firstTag] = (await call(a, TagsService.method.listTags, { uidp: { childrenOf: repo } })).tags as { uid: string }[];
    await call(b, TagsService.method.deleteTag, { uid: firstTag!.uid });
    await expectTotals();
    await call(a, IdentitiesService.method.deleteIdentity, { uid: bots[0]! });
    await expectTotals();
    await call(b, ReposService.method.deleteRepo, { uid: repo });
    await expectTotals();
    await expectCountersRight();
    // Deletes the database cascades, as a tool's plain SQL would make them: an identity's
    // bindings, a repo's tags (imported ones, with their history).
    await sql.query("DELETE FROM identities WHERE uid = $1", [bots[1]!]);
    const imported = await sql.query("SELECT uid FROM repos WHERE parent_uid = $1 AND uid IN (SELECT repo_uid FROM tags) LIMIT 1", [org]);
    expect(imported.rows.length).toBe(1);
    await sql.query("DELETE FROM repos WHERE uid = $1", [imported.rows[0].uid]);
    await expectCountersRight();
    // A deleted parent's counters add up to zero (checked above), so listing under it says 0.
    expect(await totalOnEveryDoor(TagsService.method.listTags, { uidp: { childrenOf: String(imported.rows[0].uid) } })).toBe(0);
    await call(a, RoleBindingsService.method.deleteRoleBinding, {
      uid: String(((await call(a, RoleBindingsService.method.listRoleBindings, { uidp: { childrenOf: folder } })).roleBindings as { uid: string }[])[0]!.uid),
    });
    await call(a, GroupsService.method.deleteGroup, { uid: folder });
    await expectTotals();
    await expectCountersRight();
  });

  it("stays exact when two servers create and delete under one parent at once", async () => {
    const org = String((await call(a, GroupsService.method.createGroup, { group: { name: "busy org" } })).uid);
    const doors = [callDoors[0]!, callDoors[callDoors.length - 1]!];
    const created = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        call(i % 2 === 0 ? a : b, GroupsService.method.createGroup, { parent: org, group: { name: `child ${i}` } }, doors[Math.floor(i / 2) % 2]).then((g) =>
          String(g.uid),
        ),
      ),
    );
    await expectCountersRight();
    expect(await totalOnEveryDoor(GroupsService.method.listGroups, { uidp: { childrenOf: org } })).toBe(40);
    // The writers spread over stripes: not one row all commits queued on.
    expect(await rowCount("SELECT count(*) AS n FROM child_counts WHERE parent_uid = $1 AND kind = 'groups'", [org])).toBeGreaterThan(1);
    await Promise.all(created.slice(0, 25).map((uid, i) => call(i % 2 === 0 ? b : a, GroupsService.method.deleteGroup, { uid }, doors[Math.floor(i / 2) % 2])));
    await expectCountersRight();
    expect(await totalOnEveryDoor(GroupsService.method.listGroups, { uidp: { childrenOf: org } })).toBe(15);
  });

  it("counts the rows already there when the migration adds the counters", async () => {
    const older = await freshPostgresDatabase("counts_upgrade");
    // The migrations up to the one that adds the counters, as an older build applied them.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-older-migrations-"));
    try {
      fs.mkdirSync(path.join(dir, "meta"));
      const journal = JSON.parse(fs.readFileSync(path.join(POSTGRES_MIGRATIONS_DIR, "meta/_journal.json"), "utf8"));
      const upTo = journal.entries.findIndex((e: { tag: string }) => e.tag.endsWith("_child_counts"));
      expect(upTo).toBeGreaterThan(0);
      journal.entries = journal.entries.slice(0, upTo);
      fs.writeFileSync(path.join(dir, "meta/_journal.json"), JSON.stringify(journal));
      for (const e of journal.entries) fs.copyFileSync(path.join(POSTGRES_MIGRATIONS_DIR, `${e.tag}.sql`), path.join(dir, `${e.tag}.sql`));
      const pool = new pg.Pool({ connectionString: older, max: 1 });
      try {
        await migrate(drizzle(pool), { migrationsFolder: dir, migrationsSchema: "drizzle", migrationsTable: "__drizzle_migrations" });
        const root = "c".repeat(40);
        await pool.query("INSERT INTO groups (uid, parent_uid, name, create_time, update_time) VALUES ($1, NULL, 'old', 1, 1), ($2, NULL, 'other', 1, 1)", [
          root,
          "d".repeat(40),
        ]);
        for (let i = 0; i < 5; i++) {
          await pool.query("INSERT INTO groups (uid, parent_uid, name, create_time, update_time) VALUES ($1, $2, 'child', 1, 1)", [
            `${root}/${i.toString(16).padStart(16, "0")}`,
            root,
          ]);
        }
        await pool.query("INSERT INTO repos (uid, parent_uid, name, create_time, update_time) VALUES ($1, $2, 'r', 1, 1)", [`${root}/${"f".repeat(16)}`, root]);
        await pool.query(
          "INSERT INTO tags (uid, repo_uid, name, digest, generated, update_time) VALUES ($1, $2, 'sha256-x', $3, 1, 1), ($4, $2, 'v1', $3, 0, 1)",
          [`${root}/${"f".repeat(16)}/${"1".repeat(16)}`, `${root}/${"f".repeat(16)}`, DIGEST, `${root}/${"f".repeat(16)}/${"2".repeat(16)}`],
        );
      } finally {
        await pool.end();
      }
      const upgraded = await openPostgres({ url: older, poolSize: 1 });
      try {
        const check = await checkChildCounts(upgraded.pool);
        expect(check.mismatches).toEqual([]);
        expect(check.parents).toBe(5); // the roots, root's groups, root's repos, the repo's tags of two classes
      } finally {
        await upgraded.close();
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
