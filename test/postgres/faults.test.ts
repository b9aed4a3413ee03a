/**
 * What a client of Trellis replicas on PostgreSQL sees when things break, with real processes
 * (`trellis serve --database URL`) and a real PostgreSQL:
 * - PostgreSQL restarted under load (on a cluster of this file's own, since the run's cluster is
 *   shared by every PostgreSQL test file): calls fail UNAVAILABLE with ErrorInfo, /readyz says
 *   "not ready", and both recover when the database is back, with no restart of Trellis;
 * - a replica killed with SIGKILL in the middle of a batch write leaves none of the batch;
 * - a full pool (`--db-pool-size 1`, its one connection held inside the database by a lock)
 *   answers UNAVAILABLE after the acquire timeout, never hangs, and serves again afterwards;
 *   /metrics still answers at once meanwhile, counting those calls as busy timeouts.
 * Waits are for readiness only (a process up, a database back, a backend waiting on a lock),
 * never a guess of how long something takes.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GroupsService } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { RoleBindingsService } from "../../gen/chainguard/platform/iam/v2beta1/role_bindings_pb.js";
import { pauseCluster, resumeCluster, type RunningCluster, startCluster, stopCluster } from "../../scripts/pg-cluster.mjs";
import { builtInRoleUid } from "../../src/store/builtin-roles.js";
import { bodyOf, type CallOutcome, callDoors } from "../support/call-method.js";
import { describePostgres, freshPostgresDatabase } from "../support/postgres.js";
import { seededRandom } from "../support/random-message.js";
import { type Replica, type Replicas, startReplicas } from "../support/replicas.js";
import { rest } from "../support/rest.js";
import { closeGrpcClients } from "../support/transports.js";

/** Runs `check` until it returns true, between tries giving the processes a moment; fails after `ms`. */
async function waitUntil(what: string, check: () => Promise<boolean> | boolean, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

const readyz = async (r: Replica) => (await fetch(`${r.url}/readyz`)).status;

/** What a failed call must look like while the database is unreachable: UNAVAILABLE, storage reason, ErrorInfo. */
function expectUnavailable(outcome: CallOutcome, where: string): void {
  expect(outcome.ok, where).toBe(false);
  if (outcome.ok) return;
  expect({ code: outcome.code, reason: outcome.reason }, `${where}: ${outcome.message}`).toMatchObject({
    code: 14,
    reason: expect.stringMatching(/^STORAGE_(UNAVAILABLE|BUSY)$/),
  });
}

// Real processes on a shared 2-core machine: more time than a single server test needs.
describePostgres("faults on PostgreSQL", { timeout: 60_000 }, () => {
  afterAll(() => closeGrpcClients());

  describe("PostgreSQL restarted under load (a cluster of this test's own)", () => {
    let cluster: RunningCluster;
    let replicas: Replicas;
    beforeAll(async () => {
      cluster = await startCluster({ log: () => {} });
      replicas = await startReplicas(2, cluster.url);
    }, 90_000);
    afterAll(async () => {
      await replicas?.close();
      if (cluster) await stopCluster(cluster.dir);
    });

    it("calls fail UNAVAILABLE and /readyz says not ready while it is down; both recover with no Trellis restart", async () => {
      const op = await replicas.operatorToken();
      const pids = replicas.all.map((r) => r.child.pid);
      const random = seededRandom(2113);
      const org = String(
        bodyOf(
          await (callDoors[4] as (typeof callDoors)[number]).call(replicas.all[0]?.url ?? "", op, GroupsService.method.createGroup, {
            group: { name: "load" },
          }),
        ).uid,
      );

      // Calls are judged by the phase they began and ended in; none is judged while the
      // database is stopping or starting.
      type Phase = "before" | "stopping" | "down" | "starting" | "after";
      let phase: Phase = "before";
      const outcomes: { phase: Phase; outcome: CallOutcome; where: string }[] = [];
      let loading = true;
      const worker = async (w: number) => {
        while (loading) {
          const door = callDoors[Math.floor(random() * callDoors.length)] as (typeof callDoors)[number];
          const replica = replicas.all[w % replicas.all.length] as Replica;
          const started: Phase = phase;
          const outcome =
            random() < 0.5
              ? await door.call(replica.url, op, GroupsService.method.createGroup, { parent: org, group: { name: `worker ${w}` } })
              : await door.call(replica.url, op, GroupsService.method.listGroups, { uidp: { childrenOf: org }, pageSize: 5 });
          // A call that began in one phase and ended in another says nothing clear about either.
          if (started === phase && phase !== "stopping" && phase !== "starting")
            outcomes.push({ phase, outcome, where: `${door.name} on ${replica.name} (${phase})` });
          await new Promise((resolve) => setImmediate(resolve));
        }
      };
      const load = Promise.all([0, 1, 2, 3].map(worker));
      try {
        await waitUntil("calls succeed before the restart", () => outcomes.filter((o) => o.outcome.ok).length >= 20);

        phase = "stopping";
        await pauseCluster(cluster.dir);
        phase = "down";
        await waitUntil("calls fail while the database is down", () => outcomes.filter((o) => o.phase === "down").length >= 20);
        for (const r of replicas.all) await waitUntil(`/readyz on ${r.name} says not ready`, async () => (await readyz(r)) === 503);

        phase = "starting";
        await resumeCluster(cluster.dir);
        phase = "after";
        await waitUntil("calls succeed again", () => outcomes.filter((o) => o.phase === "after" && o.outcome.ok).length >= 20);
        for (const r of replicas.all) await waitUntil(`/readyz on ${r.name} says ready`, async () => (await readyz(r)) === 200);
      } finally {
        loading = false;
        await load.catch(() => {});
      }
      // First: no replica stopped (a stopped one would say why on stderr).
      expect(replicas.all.filter((r) => r.child.exitCode !== null).map((r) => `${r.name} exited ${r.child.exitCode}: ${r.stderr}`)).toEqual([]);
      await load;

      expect(outcomes.filter((o) => o.phase === "before" && !o.outcome.ok)).toEqual([]);
      const down = outcomes.filter((o) => o.phase === "down");
      for (const { outcome, where } of down) expectUnavailable(outcome, where);
      // Every call after the database is back: served, or (the pool's first moments) UNAVAILABLE; never INTERNAL.
      for (const { outcome, where } of outcomes.filter((o) => o.phase === "after" && !o.outcome.ok)) expectUnavailable(outcome, where);
      // The same processes throughout, and every door serves again.
      expect(replicas.all.map((r) => r.child.pid)).toEqual(pids);
      expect(replicas.all.every((r) => r.child.exitCode === null)).toBe(true);
      for (const r of replicas.all) {
        for (const door of callDoors)
          expect((await door.call(r.url, op, GroupsService.method.getGroup, { uid: org })).ok, `${door.name} on ${r.name}`).toBe(true);
      }
    });
  });

  describe("on the run's cluster", () => {
    let databaseUrl: string;
    let sql: pg.Pool;
    beforeAll(async () => {
      databaseUrl = await freshPostgresDatabase("faults");
      sql = new pg.Pool({ connectionString: databaseUrl, max: 3 });
    });
    afterAll(() => sql?.end());

    it("a replica killed with SIGKILL in the middle of a batch of role bindings leaves none of them", async () => {
      const replicas = await startReplicas(1, databaseUrl);
      try {
        const replica = replicas.all[0] as Replica;
        const op = await replicas.operatorToken();
        const post = async (path: string, body: unknown) => {
          const res = await rest(replica.url, "POST", path, body, { authorization: `Bearer ${op}` });
          if (res.status !== 200) throw new Error(`${path}: ${res.status} ${JSON.stringify(res.body)}`);
          return String(res.body.uid);
        };
        const org = await post("/iam/v2beta1/groups", { name: "batch org" });
        const identities = await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            post(`/iam/v2beta1/identities/${org}`, { name: `robot ${i}`, claimMatch: { issuer: "https://idp.example.test", subject: `robot-${i}` } }),
          ),
        );
        const role = builtInRoleUid("viewer");
        const requests = identities.map((identityUid) => ({ roleBinding: { identityUid, roleUid: role } }));
        const batchRows = async () =>
          Number((await sql.query("SELECT count(*)::int AS n FROM role_bindings WHERE identity_uid = ANY($1)", [identities])).rows[0].n);

        // Hold the 13th binding's unique key in a transaction of our own: the batch inserts the
        // first twelve, then waits on the thirteenth, with its transaction open.
        const holder = await sql.connect();
        let batchPid: number | undefined;
        try {
          await holder.query("BEGIN");
          await holder.query("INSERT INTO role_bindings (uid, group_uid, identity_uid, role_uid, create_time) VALUES ($1, $2, $3, $4, 0)", [
            `${org}/feedfacefeedface`,
            org,
            identities[12],
            role,
          ]);
          const batch = (callDoors[0] as (typeof callDoors)[number]).call(replica.url, op, RoleBindingsService.method.batchCreateRoleBindings, {
            parent: org,
            requests,
          });
          batch.catch(() => {});
          await waitUntil("the batch waits on the 13th binding, its first twelve inserted", async () => {
            const { rows } = await sql.query(
              `SELECT a.pid FROM pg_stat_activity a
                WHERE a.datname = current_database() AND a.wait_event_type = 'Lock' AND a.query ILIKE 'insert into "role_bindings"%'
                  AND EXISTS (SELECT 1 FROM pg_locks l WHERE l.pid = a.pid AND l.relation = 'role_bindings'::regclass AND l.mode = 'RowExclusiveLock' AND l.granted)`,
            );
            batchPid = rows[0]?.pid;
            return batchPid !== undefined;
          });
          replica.child.kill("SIGKILL");
          await replica.exited;
        } finally {
          await holder.query("ROLLBACK");
          holder.release();
        }
        // Its backend finds its client gone and rolls the open transaction back.
        await waitUntil(
          "the killed replica's backend has ended",
          async () => (await sql.query("SELECT 1 FROM pg_stat_activity WHERE pid = $1", [batchPid])).rowCount === 0,
        );
        expect(await batchRows()).toBe(0);

        // A replica started again serves the same batch whole.
        const again = await replicas.add("A2");
        const out = bodyOf(
          await (callDoors[4] as (typeof callDoors)[number]).call(again.url, op, RoleBindingsService.method.batchCreateRoleBindings, { parent: org, requests }),
        );
        expect((out.roleBindings as unknown[]).length).toBe(20);
        expect(await batchRows()).toBe(20);
      } finally {
        await replicas.close();
      }
    }, 90_000);

    it("a full pool answers UNAVAILABLE after the acquire timeout, never hangs, and serves again after", async () => {
      const replicas = await startReplicas(1, databaseUrl, ["--db-pool-size", "1"]);
      try {
        const replica = replicas.all[0] as Replica;
        const op = await replicas.operatorToken();
        const door = callDoors[0] as (typeof callDoors)[number];
        const parent = String(bodyOf(await door.call(replica.url, op, GroupsService.method.createGroup, { group: { name: "locked parent" } })).uid);

        // Lock the parent from a connection of our own: a create under it takes the replica's one
        // connection and waits inside the database for that lock.
        const holder = await sql.connect();
        try {
          await holder.query("BEGIN");
          await holder.query("SELECT 1 FROM groups WHERE uid = $1 FOR UPDATE", [parent]);
          const held = door.call(replica.url, op, GroupsService.method.createGroup, { parent, group: { name: "waits" } });
          await waitUntil("the create waits on the lock", async () => {
            const { rowCount } = await sql.query("SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'");
            return (rowCount ?? 0) > 0;
          });
          // gRPC and REST (each wait is the whole timeout; every door shares this path).
          for (const other of [callDoors[0], callDoors[4]] as (typeof callDoors)[number][]) {
            const started = performance.now();
            const out = await other.call(replica.url, op, GroupsService.method.getGroup, { uid: parent });
            const ms = performance.now() - started;
            expectUnavailable(out, other.name);
            expect(out.ok ? "" : out.reason).toBe("STORAGE_BUSY");
            // The pool's acquire timeout (5 s), not a hang.
            expect(ms).toBeGreaterThan(4_000);
            expect(ms).toBeLessThan(15_000);
          }
          expect(await readyz(replica)).toBe(503);
          // A scrape asks the database for its size (the one query /metrics makes): with no
          // connection to be had it still answers at once, without that figure.
          const scrapeStarted = performance.now();
          const scrape = await fetch(`${replica.url}/metrics`);
          expect(scrape.status).toBe(200);
          expect(await scrape.text()).toContain("trellis_db_busy_timeouts_total 2");
          expect(performance.now() - scrapeStarted).toBeLessThan(3_000);
          await holder.query("ROLLBACK");
          // The held create ends either way, never hangs: done once the lock went, or, on a
          // machine slow enough that the two calls above outlasted the lock timeout (15 s),
          // refused busy like them.
          const heldOutcome = await held;
          if (!heldOutcome.ok) expect(heldOutcome.reason).toBe("STORAGE_BUSY");
        } finally {
          await holder.query("ROLLBACK").catch(() => {});
          holder.release();
        }
        for (const other of callDoors) expect((await other.call(replica.url, op, GroupsService.method.getGroup, { uid: parent })).ok).toBe(true);
        expect(await readyz(replica)).toBe(200);
      } finally {
        await replicas.close();
      }
    }, 90_000);
  });
});
