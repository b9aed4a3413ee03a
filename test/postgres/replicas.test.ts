/**
 * Three Trellis processes (`trellis serve --database URL`) on one PostgreSQL database, as
 * behind a load balancer: what one replica writes, mints or revokes holds on the others, at
 * their very next call, through the real protocols (every door: gRPC, Connect JSON and proto,
 * gRPC-web, REST), and concurrent writers on different replicas keep the invariants (no orphan,
 * one name per parent).
 *
 * "At the next call" is proven with each replica's change notifications held up: the test
 * stops (SIGSTOP) the PostgreSQL backends of the replicas' LISTEN connections, so a replica
 * learns of another's change only by its own per-call check (src/store/postgres/server-values.ts
 * `catchUp`), never by a notification that happened to arrive before the test's next call.
 */
import { decodeJwt } from "jose";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GroupsService } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { IdentitiesService } from "../../gen/chainguard/platform/iam/v2beta1/identities_pb.js";
import { RoleBindingsService } from "../../gen/chainguard/platform/iam/v2beta1/role_bindings_pb.js";
import { ReposService } from "../../gen/chainguard/platform/registry/v2beta1/repos_pb.js";
import { SecurityTokenService } from "../../gen/chainguard/platform/oidc/oidc_pb.js";
import { TokensService } from "../../gen/trellis/iam/v1/tokens_pb.js";
import { builtInRoleUid } from "../../src/store/builtin-roles.js";
import { bodyOf, type CallOutcome, callDoors } from "../support/call-method.js";
import { cliRunner } from "../support/cli.js";
import { exchangeDoors } from "../support/exchange-doors.js";
import { startTestIdp, type TestIdp } from "../support/idp.js";
import { describePostgres, freshPostgresDatabase } from "../support/postgres.js";
import { seededRandom } from "../support/random-message.js";
import { freezeChangeNotifications, REPLICA_ISSUER, type Replicas, startReplicas } from "../support/replicas.js";
import { rest } from "../support/rest.js";
import { closeGrpcClients } from "../support/transports.js";

const SUBJECT = "repo:acme/deploy:ref:refs/heads/main";

// Real processes on a shared 2-core machine: more time than a single server test needs.
describePostgres("three replicas on one PostgreSQL database", { timeout: 60_000 }, () => {
  let replicas: Replicas;
  let databaseUrl: string;
  let op: string;
  let idp: TestIdp;
  let sql: pg.Pool;

  beforeAll(async () => {
    idp = await startTestIdp();
    databaseUrl = await freshPostgresDatabase("replicas");
    // Started together: one migration run, one signing key, one page-token key among them.
    replicas = await startReplicas(3, databaseUrl);
    op = await replicas.operatorToken();
    sql = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  }, 90_000);
  afterAll(async () => {
    closeGrpcClients();
    await sql?.end();
    await replicas?.close();
    await idp?.close();
  });

  const replica = (i: number) => {
    const r = replicas.all[i % replicas.all.length];
    if (!r) throw new Error("no replica");
    return r;
  };
  /** A call that must succeed, with the operator token. */
  const ok = async (outcome: Promise<CallOutcome>) => bodyOf(await outcome);
  const restOk = async (url: string, method: string, path: string, body?: unknown) => {
    const res = await rest(url, method, path, body, { authorization: `Bearer ${op}` });
    if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  };
  const orphanCount = async () =>
    Number(
      (
        await sql.query(
          "SELECT count(*)::int AS n FROM groups c WHERE c.parent_uid IS NOT NULL AND NOT EXISTS (SELECT 1 FROM groups p WHERE p.uid = c.parent_uid)",
        )
      ).rows[0].n,
    );

  describe.each(callDoors)("$name", (door) => {
    it("a group written on one replica is read, the same, on every other", async () => {
      for (let writer = 0; writer < 3; writer++) {
        const created = await ok(
          door.call(replica(writer).url, op, GroupsService.method.createGroup, { group: { name: `made on ${replica(writer).name.toLowerCase()}` } }),
        );
        for (let reader = 0; reader < 3; reader++) {
          const read = await ok(door.call(replica(reader).url, op, GroupsService.method.getGroup, { uid: String(created.uid) }));
          expect(read).toEqual(created);
        }
      }
    });

    it("a page token started on one replica continues on the others", async () => {
      const org = await ok(door.call(replica(0).url, op, GroupsService.method.createGroup, { group: { name: "paged org" } }));
      const names = Array.from({ length: 7 }, (_, i) => `folder ${i}`);
      for (const [i, name] of names.entries()) {
        await ok(door.call(replica(i).url, op, GroupsService.method.createGroup, { parent: String(org.uid), group: { name } }));
      }
      const seen: string[] = [];
      let pageToken = "";
      for (let page = 0; page < 10; page++) {
        const body = await ok(
          door.call(replica(page).url, op, GroupsService.method.listGroups, { uidp: { childrenOf: String(org.uid) }, pageSize: 2, pageToken, orderBy: "name" }),
        );
        for (const g of (body.groups ?? []) as { name: string }[]) seen.push(g.name);
        expect(body.totalCount === undefined ? undefined : Number(body.totalCount)).toBe(7);
        pageToken = String(body.nextPageToken ?? "");
        if (pageToken === "") break;
      }
      expect(seen).toEqual(names);
    });
  });

  it("a change on one replica is read by the next GetGroup on another, while that one batches concurrent reads of the group", async () => {
    // The reader's GetGroups of one turn share a query (src/store/postgres/point-reads.ts); a
    // read asked for after the write committed must still see it, on every door.
    const group = await ok(callDoors[0]!.call(replica(0).url, op, GroupsService.method.createGroup, { group: { name: "renamed 0" } }));
    const uid = String(group.uid);
    let reading = true;
    const background = callDoors.map(async (door) => {
      let reads = 0;
      while (reading) {
        await ok(door.call(replica(1).url, op, GroupsService.method.getGroup, { uid }));
        reads++;
      }
      return reads;
    });
    try {
      for (let i = 1; i <= 10; i++) {
        const name = `renamed ${i}`;
        await ok(
          callDoors[i % callDoors.length]!.call(replica(0).url, op, GroupsService.method.updateGroup, {
            group: { uid, name },
            updateMask: { paths: ["name"] },
          }),
        );
        const reads = await Promise.all(callDoors.map((door) => door.call(replica(1).url, op, GroupsService.method.getGroup, { uid })));
        for (const [d, read] of reads.entries()) expect(bodyOf(read).name, `${callDoors[d]?.name} after ${name}`).toBe(name);
      }
    } finally {
      reading = false;
    }
    // The background readers really read alongside (and every one of their calls succeeded).
    for (const reads of await Promise.all(background)) expect(reads).toBeGreaterThan(0);
  });

  it("an operator token from `trellis auth token --local --database` is verified by every replica", async () => {
    expect(decodeJwt(op)).toMatchObject({ iss: REPLICA_ISSUER, trellis_operator: true });
    for (const r of replicas.all) {
      for (const door of callDoors) {
        const out = await door.call(r.url, op, GroupsService.method.listGroups, { pageSize: 1 });
        expect(out.ok, `${door.name} on ${r.name}`).toBe(true);
      }
    }
  });

  describe("one identity's API token, minted by one replica's token exchange", () => {
    let org: string;
    let identity: string;
    beforeAll(async () => {
      org = (await restOk(replica(0).url, "POST", "/iam/v2beta1/groups", { name: "exchange org" })).uid;
      identity = (
        await restOk(replica(1).url, "POST", `/iam/v2beta1/identities/${org}`, { name: "deployer", claimMatch: { issuer: idp.issuer, subject: SUBJECT } })
      ).uid;
    });
    const exchangeOn = async (i: number) => {
      const idToken = await idp.sign({ sub: SUBJECT, aud: REPLICA_ISSUER });
      const door = exchangeDoors[0];
      if (!door) throw new Error("no exchange door");
      return String(bodyOf(await door.call(replica(i).url, idToken, SecurityTokenService.method.exchange, { aud: [REPLICA_ISSUER], identity })).token);
    };
    const bind = (on: number) =>
      restOk(replica(on).url, "POST", `/iam/v2beta1/roleBindings/${org}`, { identityUid: identity, roleUid: builtInRoleUid("viewer") }).then((b) =>
        String(b.uid),
      );

    const unbind = (uid: string) => ok(callDoors[4]?.call(replica(2).url, op, RoleBindingsService.method.deleteRoleBinding, { uid }) as Promise<CallOutcome>);

    it.each(callDoors.map((d, i) => [d.name, d, i] as const))(
      "is verified by the others, and its revoked binding fails on every replica at the next call (%s)",
      async (_name, door, n) => {
        const binding = await bind(n);
        const token = await exchangeOn(n + 1);
        for (const r of replicas.all) {
          expect((await door.call(r.url, token, GroupsService.method.getGroup, { uid: org })).ok, `before, on ${r.name}`).toBe(true);
        }
        const thaw = await freezeChangeNotifications(databaseUrl);
        try {
          await ok(door.call(replica(n + 2).url, op, RoleBindingsService.method.deleteRoleBinding, { uid: binding }));
          for (const r of replicas.all) {
            const out = await door.call(r.url, token, GroupsService.method.getGroup, { uid: org });
            expect(out, `after, on ${r.name}`).toMatchObject({ ok: false, code: 7, reason: "PERMISSION_DENIED" });
          }
        } finally {
          await thaw();
        }
      },
    );

    it("deleting its identity on one replica fails the token on every replica at the next call", async () => {
      const subject = "repo:acme/short-lived:ref:refs/heads/main";
      const doomed = String(
        (await restOk(replica(2).url, "POST", `/iam/v2beta1/identities/${org}`, { name: "short lived", claimMatch: { issuer: idp.issuer, subject } })).uid,
      );
      await restOk(replica(0).url, "POST", `/iam/v2beta1/roleBindings/${org}`, { identityUid: doomed, roleUid: builtInRoleUid("viewer") });
      const door = exchangeDoors[0];
      if (!door) throw new Error("no exchange door");
      const idToken = await idp.sign({ sub: subject, aud: REPLICA_ISSUER });
      const token = String(
        bodyOf(await door.call(replica(1).url, idToken, SecurityTokenService.method.exchange, { aud: [REPLICA_ISSUER], identity: doomed })).token,
      );
      for (const r of replicas.all) expect((await callDoors[0]?.call(r.url, token, GroupsService.method.getGroup, { uid: org }))?.ok).toBe(true);
      const thaw = await freezeChangeNotifications(databaseUrl);
      try {
        await ok(callDoors[4]?.call(replica(2).url, op, IdentitiesService.method.deleteIdentity, { uid: doomed }) as Promise<CallOutcome>);
        for (const r of replicas.all) {
          for (const d of callDoors) {
            expect(await d.call(r.url, token, GroupsService.method.getGroup, { uid: org }), `${d.name} on ${r.name}`).toMatchObject({ ok: false, code: 7 });
          }
        }
      } finally {
        await thaw();
      }
    });

    it("revoked through one replica's API, it fails on every other at the next call", async () => {
      const binding = await bind(0);
      const token = await exchangeOn(0);
      for (const r of replicas.all) expect((await callDoors[4]?.call(r.url, token, GroupsService.method.getGroup, { uid: org }))?.ok).toBe(true);
      const thaw = await freezeChangeNotifications(databaseUrl);
      try {
        const jti = String(decodeJwt(token).jti);
        await ok(callDoors[0]?.call(replica(0).url, op, TokensService.method.revokeTokens, { identity, jti }) as Promise<CallOutcome>);
        for (const r of replicas.all) {
          for (const door of callDoors) {
            expect(await door.call(r.url, token, GroupsService.method.getGroup, { uid: org }), `${door.name} on ${r.name}`).toMatchObject({
              ok: false,
              code: 16,
              reason: "TOKEN_REVOKED",
            });
          }
        }
      } finally {
        await thaw();
        await unbind(binding);
      }
    });

    it("after `trellis keys rotate --drop-previous`, a token the dropped key signed fails on every replica at once", async () => {
      const binding = await bind(1);
      const old = await exchangeOn(1);
      // Verified (and remembered) on every replica first.
      for (const r of replicas.all)
        for (const door of callDoors) expect((await door.call(r.url, old, GroupsService.method.getGroup, { uid: org })).ok).toBe(true);
      const thaw = await freezeChangeNotifications(databaseUrl);
      try {
        const cli = cliRunner(replica(0).url);
        try {
          const rotated = await cli.run(["keys", "rotate", "--only", "signing", "--drop-previous", "--database", databaseUrl]);
          expect(rotated.code, rotated.stderr).toBe(0);
        } finally {
          cli.cleanup();
        }
        for (const r of replicas.all) {
          for (const door of callDoors) {
            expect(await door.call(r.url, old, GroupsService.method.getGroup, { uid: org }), `${door.name} on ${r.name}`).toMatchObject({
              ok: false,
              code: 16,
              reason: "TOKEN_INVALID",
            });
          }
        }
        // A token minted after the rotation (by another replica, with the new key) works everywhere.
        const fresh = await exchangeOn(2);
        for (const r of replicas.all) expect((await callDoors[4]?.call(r.url, fresh, GroupsService.method.getGroup, { uid: org }))?.ok).toBe(true);
      } finally {
        await thaw();
        // The operator token of the other tests was signed by the dropped key too.
        op = await replicas.operatorToken();
        await unbind(binding);
      }
    });
  });

  it("a parent deleted on one replica while another creates a child under it leaves no orphan", async () => {
    const random = seededRandom(21);
    const door = callDoors[0];
    if (!door) throw new Error("no door");
    let bothFailed = 0;
    for (let round = 0; round < 24; round++) {
      const parent = String((await ok(door.call(replica(2).url, op, GroupsService.method.createGroup, { group: { name: `doomed ${round}` } }))).uid);
      const del = () =>
        callDoors[Math.floor(random() * callDoors.length)]?.call(replica(0).url, op, GroupsService.method.deleteGroup, { uid: parent }) as Promise<CallOutcome>;
      const create = () =>
        callDoors[Math.floor(random() * callDoors.length)]?.call(replica(1).url, op, GroupsService.method.createGroup, {
          parent,
          group: { name: "child" },
        }) as Promise<CallOutcome>;
      // Which request leaves first varies by the seed; both are in flight together.
      const [deleted, created] = random() < 0.5 ? await Promise.all([del(), create()]) : await Promise.all([create(), del()]).then(([c, d]) => [d, c]);
      const children = Number((await sql.query("SELECT count(*)::int AS n FROM groups WHERE parent_uid = $1", [parent])).rows[0].n);
      const parentRows = Number((await sql.query("SELECT count(*)::int AS n FROM groups WHERE uid = $1", [parent])).rows[0].n);
      expect(deleted.ok && created.ok, `round ${round}: both succeeded`).toBe(false);
      if (created.ok) {
        expect(parentRows).toBe(1);
        expect(children).toBe(1);
        expect(deleted).toMatchObject({ ok: false, code: 9 });
      } else {
        expect(children).toBe(0);
        // The create lost: to a parent already gone (NOT_FOUND / PERMISSION_DENIED: authorization checks the scope first).
        expect([5, 7, 9]).toContain(created.code);
        if (!deleted.ok) bothFailed++;
      }
      if (deleted.ok) expect(parentRows).toBe(0);
    }
    expect(bothFailed).toBe(0);
    expect(await orphanCount()).toBe(0);
  });

  it("the same repo name created at once on two replicas is created exactly once", async () => {
    const random = seededRandom(7);
    const org = String((await restOk(replica(0).url, "POST", "/iam/v2beta1/groups", { name: "registry org" })).uid);
    for (let round = 0; round < 12; round++) {
      const name = `app-${round}`;
      const doorA = callDoors[Math.floor(random() * callDoors.length)];
      const doorB = callDoors[Math.floor(random() * callDoors.length)];
      if (!doorA || !doorB) throw new Error("no door");
      const outcomes = await Promise.all([
        doorA.call(replica(round).url, op, ReposService.method.createRepo, { parent: org, repo: { name } }),
        doorB.call(replica(round + 1).url, op, ReposService.method.createRepo, { parent: org, repo: { name } }),
      ]);
      expect(outcomes.filter((o) => o.ok)).toHaveLength(1);
      expect(outcomes.find((o) => !o.ok)).toMatchObject({ ok: false, code: 6 });
      const rows = Number((await sql.query("SELECT count(*)::int AS n FROM repos WHERE parent_uid = $1 AND name = $2", [org, name])).rows[0].n);
      expect(rows).toBe(1);
    }
  });
});
