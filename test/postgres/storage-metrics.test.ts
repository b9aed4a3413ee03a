/**
 * The write path's counters on PostgreSQL, through /metrics and every door, when a write meets
 * another writer: a transaction PostgreSQL aborts (serialization failure, deadlock) is run
 * again and counted in trellis_db_busy_retries_total, each attempt in the transaction counters;
 * a write that waits for a row lock past lock_timeout fails UNAVAILABLE STORAGE_BUSY and counts
 * in trellis_db_busy_timeouts_total. test/observe/observability.test.ts covers the quiet case on
 * both engines.
 *
 * A trigger on `groups` makes the conflicts happen on cue, from inside PostgreSQL: the aborts
 * are raised with PostgreSQL's own codes (a real deadlock needs two transactions timed against
 * each other), and the lock timeout is a real one, on a row this test holds, with the
 * transaction's lock_timeout shortened so the test does not wait out the server's 15 s.
 */
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { GroupsService } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { MAX_TRANSACTION_ATTEMPTS } from "../../src/store/postgres/transaction.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { bodyOf, callDoors } from "../support/call-method.js";
import { rawRequest } from "../support/doors.js";
import { adminQuery, describePostgres, freshPostgresDatabase } from "../support/postgres.js";
import { closeGrpcClients } from "../support/transports.js";

const INJECT_FAULTS = `
  CREATE SEQUENCE injected_aborts;
  CREATE FUNCTION inject_storage_faults() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    IF NEW.name LIKE 'aborted once %' AND nextval('injected_aborts') = 1 THEN
      RAISE EXCEPTION 'injected serialization failure' USING ERRCODE = '40001';
    ELSIF NEW.name LIKE 'always aborted %' THEN
      RAISE EXCEPTION 'injected deadlock' USING ERRCODE = '40P01';
    ELSIF NEW.name LIKE 'lock timeout %' THEN
      PERFORM set_config('lock_timeout', '50ms', true);
      PERFORM 1 FROM groups WHERE name = 'held by the test' FOR UPDATE;
    END IF;
    RETURN NEW;
  END $$;
  CREATE TRIGGER inject_storage_faults BEFORE INSERT ON groups FOR EACH ROW EXECUTE FUNCTION inject_storage_faults();
`;

const COUNTERS = ["trellis_db_transactions_total", "trellis_db_busy_retries_total", "trellis_db_busy_timeouts_total"] as const;
type Counts = Record<(typeof COUNTERS)[number], number>;

describePostgres("storage counters on PostgreSQL", () => {
  let url: string;
  let t: TestApp;
  let holder: pg.Client;

  beforeAll(async () => {
    url = await freshPostgresDatabase("storage_metrics");
    // No periodic probe: each write transaction counted is one of this test's calls.
    t = await startTestApp({ databaseUrl: url }, { storageProbeMs: 3_600_000 });
    bodyOf(
      await (callDoors[4] as (typeof callDoors)[number]).call(t.url, undefined, GroupsService.method.createGroup, { group: { name: "held by the test" } }),
    );
    await adminQuery(url, INJECT_FAULTS);
    holder = new pg.Client({ connectionString: url });
    await holder.connect();
    await holder.query("BEGIN");
    await holder.query("SELECT 1 FROM groups WHERE name = 'held by the test' FOR UPDATE");
  });
  afterAll(async () => {
    await holder?.end();
    await t?.close();
    closeGrpcClients();
  });

  const counts = async (): Promise<Counts> => {
    const text = (await rawRequest(t.url, { h2: false, method: "GET", path: "/metrics", headers: [] })).body.toString();
    const read = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, "m").exec(text)?.[1]);
    return Object.fromEntries(COUNTERS.map((name) => [name, read(name)])) as Counts;
  };
  const movedSince = async (before: Counts): Promise<Counts> => {
    const after = await counts();
    return Object.fromEntries(COUNTERS.map((name) => [name, after[name] - before[name]])) as Counts;
  };
  const createGroup = (door: (typeof callDoors)[number], name: string) => door.call(t.url, undefined, GroupsService.method.createGroup, { group: { name } });
  const groupsNamed = async (name: string) => Number((await adminQuery(url, `SELECT count(*) AS n FROM groups WHERE name = '${name}'`)).rows[0].n);

  for (const [i, door] of callDoors.entries()) {
    it(`an aborted write run again counts a retry and both attempts (${door.name})`, async () => {
      await adminQuery(url, "ALTER SEQUENCE injected_aborts RESTART");
      const before = await counts();
      const out = await createGroup(door, `aborted once ${i}`);
      expect(out.ok, out.ok ? "" : out.message).toBe(true);
      expect(await movedSince(before)).toEqual({ trellis_db_transactions_total: 2, trellis_db_busy_retries_total: 1, trellis_db_busy_timeouts_total: 0 });
    });

    it(`a write aborted on every attempt counts each retry, then fails ABORTED STORAGE_CONFLICT (${door.name})`, async () => {
      const before = await counts();
      const out = await createGroup(door, `always aborted ${i}`);
      expect(out.ok ? undefined : { code: out.code, reason: out.reason }).toEqual({ code: 10, reason: "STORAGE_CONFLICT" });
      expect(await movedSince(before)).toEqual({
        trellis_db_transactions_total: MAX_TRANSACTION_ATTEMPTS,
        trellis_db_busy_retries_total: MAX_TRANSACTION_ATTEMPTS - 1,
        trellis_db_busy_timeouts_total: 0,
      });
      expect(await groupsNamed(`always aborted ${i}`)).toBe(0);
    });

    it(`a write that waits for a row lock past lock_timeout fails UNAVAILABLE STORAGE_BUSY and counts a busy timeout (${door.name})`, async () => {
      const before = await counts();
      const out = await createGroup(door, `lock timeout ${i}`);
      expect(out.ok ? undefined : { code: out.code, reason: out.reason }).toEqual({ code: 14, reason: "STORAGE_BUSY" });
      // The attempt got past BEGIN (it is a transaction) and was not run again (a lock timeout is no abort).
      expect(await movedSince(before)).toEqual({ trellis_db_transactions_total: 1, trellis_db_busy_retries_total: 0, trellis_db_busy_timeouts_total: 1 });
      expect(await groupsNamed(`lock timeout ${i}`)).toBe(0);
    });
  }
});
