/**
 * Point reads batched per event-loop turn on PostgreSQL (src/store/postgres/point-reads.ts):
 * GetGroup's row and authorization's grants of one turn are read by one prepared query.
 * - on the engine: N reads in one turn make one query (counted on the pool), each answered
 *   with its own rows;
 * - through every door (gRPC, gRPC-web, Connect JSON and proto, REST) on a server on
 *   PostgreSQL: concurrent GetGroups of different and identical uids all answered right, a
 *   missing uid NOT_FOUND for its own call only; two users' concurrent calls each judged on
 *   their own bindings, never on the other's;
 * - a batch whose query fails (its backend terminated while it waits) fails every waiting call
 *   UNAVAILABLE, and the next calls are served.
 * Read-after-write across replicas is in replicas.test.ts.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { GroupsService } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { RoleBindingsService } from "../../gen/chainguard/platform/iam/v2beta1/role_bindings_pb.js";
import type { StoreEngine } from "../../src/store/engine.js";
import { builtInRoleUid } from "../../src/store/builtin-roles.js";
import { openPostgresEngine, postgresPoolOf } from "../../src/store/postgres/engine.js";
import { type TestApp, startTestApp } from "../support/app.js";
import { createUserIdentity, identityToken } from "../support/auth.js";
import { bodyOf, type CallOutcome, callDoors } from "../support/call-method.js";
import { describePostgres, dropPostgresDatabase, newPostgresDatabase } from "../support/postgres.js";
import { closeGrpcClients } from "../support/transports.js";

const NOW = 1_700_000_000_000;
const GROUPS_BATCH = "trellis_groups_get_many";
const GRANTS_BATCH = "trellis_role_bindings_grants_of_many";
const FIELDS = { identityUid: "identity", roleUid: "role", request: "role_binding" };

/** Counts the pool's queries by statement name, and what each was sent with. */
function countQueries(pool: pg.Pool) {
  const sent: { name: string | undefined; params: unknown[] }[] = [];
  const original = pool.query.bind(pool) as (...args: unknown[]) => unknown;
  const spy = vi.spyOn(pool, "query").mockImplementation(((...args: unknown[]) => {
    const config = args[0] as { name?: string } | string;
    sent.push({ name: typeof config === "string" ? undefined : config.name, params: (args[1] as unknown[]) ?? [] });
    return original(...args);
  }) as never);
  return {
    named: (name: string) => sent.filter((q) => q.name === name),
    restore: () => spy.mockRestore(),
  };
}

/** Runs `check` until it returns true, between tries giving the processes a moment; fails after `ms`. */
async function waitUntil(what: string, check: () => Promise<boolean> | boolean, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describePostgres("point reads batched per turn on PostgreSQL", { timeout: 60_000 }, () => {
  describe("on the engine", () => {
    let engine: StoreEngine;
    let database: { url: string; name: string };
    beforeAll(async () => {
      database = await newPostgresDatabase("point_reads_engine", { migrated: true });
      engine = await openPostgresEngine(database.url, { poolSize: 4 });
      await engine.ensureBuiltInRoles(NOW);
    });
    afterAll(async () => {
      await engine?.close();
      if (database) await dropPostgresDatabase(database.name);
    });

    it("GetGroup's reads of one turn make one query; each gets its own row, a missing uid nothing", async () => {
      const { groups } = engine.repositories;
      const org = await groups.create({ parentUid: null, name: "org", description: "", verified: false, kind: 0 }, NOW);
      const made = [org];
      for (let i = 0; i < 4; i++)
        made.push(await groups.create({ parentUid: org.uid, name: `folder ${i}`, description: `d${i}`, verified: false, kind: 0 }, NOW));
      const missing = `${org.uid}/0123456789abcdef`;
      const asked = [...made.map((g) => g.uid), made[1]!.uid, missing, org.uid];
      const queries = countQueries(postgresPoolOf(engine));
      try {
        const answers = await Promise.all(asked.map((uid) => groups.get(uid)));
        expect(answers).toEqual([...made, made[1], undefined, org]);
        const batches = queries.named(GROUPS_BATCH);
        expect(batches).toHaveLength(1);
        // Each uid once, in the order first asked.
        expect(batches[0]?.params).toEqual([[...made.map((g) => g.uid), missing]]);
      } finally {
        queries.restore();
      }
    });

    it("a key with a NUL, which PostgreSQL cannot take, is kept out of the shared query and fails no other read", async () => {
      const { groups, roleBindings } = engine.repositories;
      const org = await groups.create({ parentUid: null, name: "nul neighbour", description: "", verified: false, kind: 0 }, NOW);
      const queries = countQueries(postgresPoolOf(engine));
      try {
        const [found, withNul, grants] = await Promise.all([groups.get(org.uid), groups.get(`${org.uid}\0`), roleBindings.grantsOf(`${org.uid}\0`)]);
        expect(found).toEqual(org);
        expect(withNul).toBeUndefined();
        expect(grants).toEqual([]);
        expect(queries.named(GROUPS_BATCH).map((q) => q.params)).toEqual([[[org.uid]]]);
        expect(queries.named(GRANTS_BATCH)).toEqual([]);
      } finally {
        queries.restore();
      }
    });

    it("grantsOf's reads of one turn make one query; each identity gets its own grants", async () => {
      const { groups, identities, roleBindings } = engine.repositories;
      const orgA = await groups.create({ parentUid: null, name: "a", description: "", verified: false, kind: 0 }, NOW);
      const orgB = await groups.create({ parentUid: null, name: "b", description: "", verified: false, kind: 0 }, NOW);
      const alice = await identities.findOrCreateUser({ issuer: "https://idp.example.test", subject: "alice", name: "alice", email: "" }, NOW);
      const bob = await identities.findOrCreateUser({ issuer: "https://idp.example.test", subject: "bob", name: "bob", email: "" }, NOW);
      const nobody = await identities.findOrCreateUser({ issuer: "https://idp.example.test", subject: "nobody", name: "nobody", email: "" }, NOW);
      await roleBindings.create(orgA.uid, [{ identityUid: alice.uid, roleUid: builtInRoleUid("viewer"), fields: FIELDS }], NOW);
      await roleBindings.create(orgB.uid, [{ identityUid: bob.uid, roleUid: builtInRoleUid("editor"), fields: FIELDS }], NOW);
      const alone = await Promise.all([alice, bob, nobody].map(async (i) => roleBindings.grantsOf(i.uid)));
      const queries = countQueries(postgresPoolOf(engine));
      try {
        const together = await Promise.all([alice, bob, nobody, alice].map((i) => roleBindings.grantsOf(i.uid)));
        expect(together).toEqual([...alone, alone[0]]);
        expect(together[0]?.map((g) => g.groupUid)).toEqual([orgA.uid]);
        expect(together[1]?.map((g) => g.groupUid)).toEqual([orgB.uid]);
        expect(together[2]).toEqual([]);
        expect(queries.named(GRANTS_BATCH)).toHaveLength(1);
      } finally {
        queries.restore();
      }
    });
  });

  describe("through every door", () => {
    let t: TestApp;
    let store: StoreEngine | undefined;
    let database: { url: string; name: string };
    let sql: pg.Pool;
    beforeAll(async () => {
      database = await newPostgresDatabase("point_reads_app", { migrated: true });
      t = await startTestApp({ databaseUrl: database.url, poolSize: 4 });
      store = t.app.store;
      sql = new pg.Pool({ connectionString: database.url, max: 3 });
    });
    afterAll(async () => {
      closeGrpcClients();
      await sql?.end();
      await t?.close();
      if (database) await dropPostgresDatabase(database.name);
    });

    const ok = async (outcome: Promise<CallOutcome>) => bodyOf(await outcome);
    const createGroup = (name: string, parent = "") => ok(callDoors[0]!.call(t.url, t.token, GroupsService.method.createGroup, { parent, group: { name } }));

    it("concurrent GetGroups of different and identical uids are all answered right; a missing uid is NOT_FOUND for its call only", async () => {
      const org = await createGroup("batched org");
      const folders: Awaited<ReturnType<typeof createGroup>>[] = [];
      for (let i = 0; i < 4; i++) folders.push(await createGroup(`folder ${i}`, String(org.uid)));
      const missing = `${String(org.uid)}/0123456789abcdef`;
      const asked = [org, ...folders, folders[0], org, undefined];
      const pool = postgresPoolOf(store!);
      const queries = countQueries(pool);
      try {
        for (let round = 0; round < 3; round++) {
          const calls = callDoors.flatMap((door) =>
            asked.map(async (expected) => ({
              door: door.name,
              expected,
              outcome: await door.call(t.url, t.token, GroupsService.method.getGroup, { uid: expected ? String(expected.uid) : missing }),
            })),
          );
          for (const { door, expected, outcome } of await Promise.all(calls)) {
            // REST writes default values that the RPC doors' JSON leaves out: the row's own fields must match.
            if (expected) expect(outcome, door).toMatchObject({ ok: true, body: expected });
            else expect(outcome, door).toMatchObject({ ok: false, code: 5, metadata: { resource_name: missing } });
          }
        }
        // Every read went through the batch query, never a statement of its own.
        expect(queries.named(GROUPS_BATCH).length).toBeGreaterThan(0);
        expect(queries.named("trellis_groups_get")).toEqual([]);
      } finally {
        queries.restore();
      }
    });

    it("two users' concurrent calls are each judged on their own bindings", async () => {
      const orgA = await createGroup("alice org");
      const orgB = await createGroup("bob org");
      const folderA = await createGroup("a folder", String(orgA.uid));
      const folderB = await createGroup("b folder", String(orgB.uid));
      const users = await Promise.all(["alice", "bob"].map((s) => createUserIdentity(t.dataDir, `point-reads-${s}`)));
      const [alice, bob] = users as [string, string];
      for (const [identityUid, parent] of [
        [alice, orgA],
        [bob, orgB],
      ] as const) {
        await ok(
          callDoors[0]!.call(t.url, t.token, RoleBindingsService.method.createRoleBinding, {
            parent: String(parent.uid),
            roleBinding: { identityUid, roleUid: builtInRoleUid("viewer") },
          }),
        );
      }
      const tokens = { alice: await identityToken(t.app, alice), bob: await identityToken(t.app, bob) };
      const cases = [
        { who: "alice" as const, group: orgA, allowed: true },
        { who: "alice" as const, group: folderA, allowed: true },
        { who: "alice" as const, group: orgB, allowed: false },
        { who: "alice" as const, group: folderB, allowed: false },
        { who: "bob" as const, group: orgB, allowed: true },
        { who: "bob" as const, group: folderB, allowed: true },
        { who: "bob" as const, group: orgA, allowed: false },
        { who: "bob" as const, group: folderA, allowed: false },
      ];
      const queries = countQueries(postgresPoolOf(store!));
      try {
        const calls = callDoors.flatMap((door) =>
          cases.map(async (c) => ({
            ...c,
            door: door.name,
            outcome: await door.call(t.url, tokens[c.who], GroupsService.method.getGroup, { uid: String(c.group.uid) }),
          })),
        );
        for (const { who, group, allowed, door, outcome } of await Promise.all(calls)) {
          const where = `${door}: ${who} reads ${String(group.name)}`;
          if (allowed) expect(outcome, where).toMatchObject({ ok: true, body: group });
          else expect(outcome, where).toMatchObject({ ok: false, code: 7 });
        }
        expect(queries.named(GRANTS_BATCH).length).toBeGreaterThan(0);
      } finally {
        queries.restore();
      }
    });

    it("a batch whose query fails fails every waiting call UNAVAILABLE; the next calls are served", async () => {
      const org = await createGroup("faulty org");
      const folders: Awaited<ReturnType<typeof createGroup>>[] = [];
      for (let i = 0; i < callDoors.length; i++) folders.push(await createGroup(`folder ${i}`, String(org.uid)));
      const queries = countQueries(postgresPoolOf(store!));
      // Holds the groups table, so that every GetGroup's batch query waits in the database.
      const holder = await sql.connect();
      let outcomes: CallOutcome[];
      try {
        await holder.query("BEGIN");
        await holder.query("LOCK TABLE groups IN ACCESS EXCLUSIVE MODE");
        // One door per folder, three calls each (two of the same uid): all waiting at once.
        const calls = callDoors.flatMap((door, i) =>
          [0, 1, 2].map(() => door.call(t.url, t.token, GroupsService.method.getGroup, { uid: String(folders[i]!.uid) })),
        );
        const waiting = async () =>
          (
            await sql.query(`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%"groups"%ANY(%'`)
          ).rows.map((r) => r.pid as number);
        // Every batch that reaches the database (all at once, or, when they outnumber the
        // pool's connections, as connections free up) has its connection ended under it, as
        // when the server goes away, until every call has its answer.
        let settled = false;
        const answered = Promise.all(calls).finally(() => {
          settled = true;
        });
        let terminated = 0;
        await waitUntil("every call is answered", async () => {
          const pids = await waiting();
          if (pids.length > 0) await sql.query("SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid", [pids]);
          terminated += pids.length;
          return settled;
        });
        expect(terminated).toBeGreaterThan(0);
        // Every call's read was in one of the failed batches.
        for (const f of folders) expect(queries.named(GROUPS_BATCH).some((q) => (q.params[0] as string[]).includes(String(f.uid)))).toBe(true);
        outcomes = await answered;
      } finally {
        await holder.query("ROLLBACK").catch(() => {});
        holder.release();
        queries.restore();
      }
      for (const outcome of outcomes) expect(outcome).toMatchObject({ ok: false, code: 14, reason: "STORAGE_UNAVAILABLE" });
      for (const door of callDoors)
        for (const f of folders)
          expect(await door.call(t.url, t.token, GroupsService.method.getGroup, { uid: String(f.uid) }), door.name).toMatchObject({ ok: true, body: f });
    });
  });
});
