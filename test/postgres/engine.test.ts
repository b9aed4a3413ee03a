/**
 * The PostgreSQL engine (src/store/postgres/engine.ts) against the real cluster: every repository
 * and the importer's writer work through the StoreEngine interface across two replicas, and a
 * full pool comes out as the engine-neutral
 * StorageError that the error module maps to UNAVAILABLE, with the health readings following.
 */
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { MIGRATION_LOCK_KEY } from "../../src/store/postgres/connection.js";
import { ApiError, GrpcCode } from "../../src/errors/api-error.js";
import { builtInRoleUid } from "../../src/store/builtin-roles.js";
import { openPostgresEngine, type PostgresEngine, postgresPoolOf } from "../../src/store/postgres/engine.js";
import { StorageError, storageFailureOf } from "../../src/errors/storage-error.js";
import { redactDatabaseUrl } from "../../src/store/target.js";
import { describePostgres, freshPostgresDatabase } from "../support/postgres.js";

const NOW = 1_700_000_000_000;

describePostgres("the PostgreSQL engine", () => {
  let url: string;
  let engine: PostgresEngine;
  let other: PostgresEngine;

  beforeAll(async () => {
    url = await freshPostgresDatabase("engine");
    [engine, other] = await Promise.all([openPostgresEngine(url, { poolSize: 2, acquireTimeoutMs: 300 }), openPostgresEngine(url, { poolSize: 2 })]);
    await Promise.all([engine.ensureBuiltInRoles(NOW), other.ensureBuiltInRoles(NOW)]);
    engine.startServing(1000);
  });
  afterAll(async () => {
    await engine?.close();
    await other?.close();
  });

  it("names itself without the password", () => {
    expect(engine.kind).toBe("postgres");
    expect(engine.location).toBe(redactDatabaseUrl(url));
    expect(redactDatabaseUrl("postgres://trellis:s3cret@db.example:5432/trellis?sslmode=require")).toBe(
      "postgres://trellis:***@db.example:5432/trellis?sslmode=require",
    );
    expect(redactDatabaseUrl("not a url s3cret")).not.toContain("s3cret");
  });

  it("serves the authorization path through the interface: a user founds an organization and holds its grants on another replica", async () => {
    const user = await engine.repositories.identities.findOrCreateUser({ issuer: "https://idp", subject: "eng", name: "E", email: "" }, NOW);
    const org = await engine.repositories.groups.create({ parentUid: null, name: "org", description: "", verified: false, kind: 0 }, NOW, user.uid);
    const grants = await other.repositories.roleBindings.grantsOf(user.uid);
    expect(grants).toEqual([{ groupUid: org.uid, capabilities: (await other.repositories.roles.get(builtInRoleUid("owner")))?.capabilities }]);
    const values = await engine.serverValues.update(["engine-test"], NOW, () => [Buffer.from("v")]);
    expect(values.map((v) => v?.toString())).toEqual(["v"]);
    expect(engine.serverValues.watch(["engine-test"], ([v]) => v?.toString())()).toBe("v");
  });

  it("serves every IAM repository through the interface, its writes read on another replica", async () => {
    const user = await engine.repositories.identities.findOrCreateUser({ issuer: "https://idp", subject: "records", name: "R", email: "r@example.com" }, NOW);
    const org = await engine.repositories.groups.create({ parentUid: null, name: "records", description: "", verified: true, kind: 0 }, NOW, user.uid);
    const idp = await engine.repositories.identityProviders.create(
      {
        parentUid: org.uid,
        name: "idp",
        description: "",
        defaultRole: builtInRoleUid("viewer"),
        oidc: { issuer: "https://login", clientId: "c", clientSecret: "s", additionalScopes: [], groupsClaim: "", pkceEnabled: false, correlationRule: 1 },
      },
      NOW,
    );
    expect(await other.repositories.identityProviders.get(idp.uid)).toEqual(idp);
    const scim = await engine.repositories.scimCredentials.generate(idp.uid, { tokenHash: "h", expireTime: null }, NOW, () => {});
    expect(await other.repositories.scimCredentials.get(idp.uid)).toEqual(scim);
    const { code } = await engine.repositories.groupInvites.create(
      { parentUid: org.uid, roleUid: builtInRoleUid("viewer"), email: "", singleUse: true, ttlMs: 1000, creator: "{}" },
      NOW,
    );
    const guest = await other.repositories.identities.findOrCreateUser({ issuer: "https://idp", subject: "guest", name: "G", email: "" }, NOW);
    const binding = await other.repositories.groupInvites.redeemInvite(code, guest.uid, NOW, () => {});
    expect((await engine.repositories.roleBindings.get(binding))?.identityUid).toBe(guest.uid);
    await engine.repositories.accountAssociations.create({ groupUid: org.uid, name: "a", description: "", providers: {} }, NOW);
    expect((await other.repositories.accountAssociations.get(org.uid))?.name).toBe("a");
    await engine.repositories.groupAccessRequests.record(org.uid, guest.uid, NOW);
    expect(await other.repositories.groupAccessRequests.has(org.uid, guest.uid)).toBe(true);
    const refresh = { familyId: "f", identityUid: guest.uid, audiences: [], issueTime: NOW, expireTime: NOW + 1000, familyExpireTime: NOW + 2000 };
    await engine.repositories.refreshTokens.issue({ tokenHash: "r1", ...refresh }, NOW);
    expect((await other.repositories.refreshTokens.rotate("r1", NOW + 1, () => ({ tokenHash: "r2", ...refresh }))).kind).toBe("rotated");
    await engine.repositories.tokenRevocations.revoke({ subject: guest.uid }, NOW + 2, 1000);
    expect(await other.repositories.refreshTokens.find("r2")).toBeUndefined();
    await other.serverValues.refresh();
    expect(other.serverValues.watch(["token_revocations"], ([v]) => v?.toString())()).toContain(guest.uid);
  });

  it("serves the registry and the importer's writer through the interface, across replicas", async () => {
    const org = await engine.repositories.groups.create({ parentUid: null, name: "registry", description: "", verified: false, kind: 0 }, NOW);
    const outcome = await engine.importer.transaction((tx) =>
      tx.record((w) => w.upsertRepo(org.uid, { name: "nginx", description: "", catalogTier: 0, bundles: [], aliases: [], activeTags: [] }, NOW)),
    );
    expect(outcome).toBe("loaded");
    const [repo] = await other.repositories.repos.list({ uidp: { childrenOf: org.uid } }, { order: "uid", desc: false, offset: 0, limit: 10 });
    expect(repo?.name).toBe("nginx");
    const tag = await other.repositories.tags.upsert(repo!.uid, { name: "latest", digest: "sha256:1", deprecated: false, bundles: [] }, NOW);
    expect(await engine.repositories.tags.get(tag.uid)).toEqual(tag);
  });

  it("fails a call on a full pool with StorageError busy (UNAVAILABLE for the caller), marks itself not writable, and recovers", async () => {
    const pool = postgresPoolOf(engine);
    // The server-values listener has its own connection: these two are the whole pool.
    const held = await Promise.all([pool.connect(), pool.connect()]);
    try {
      const err = await engine.repositories.groups.get("a".repeat(40)).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(StorageError);
      expect(storageFailureOf(err)).toBe("busy");
      expect(engine.health.writable()).toBe(false);
    } finally {
      for (const c of held) c.release();
    }
    await engine.health.probe();
    expect(engine.health.writable()).toBe(true);
    expect(await engine.repositories.groups.get("a".repeat(40))).toBeUndefined();
  });

  it("fails a write on a row another transaction holds past the lock timeout with StorageError busy, and migrates behind a longer-held migration lock", async () => {
    const org = await engine.repositories.groups.create({ parentUid: null, name: "held", description: "", verified: false, kind: 0 }, NOW);
    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    try {
      await holder.query("BEGIN");
      await holder.query("SELECT uid FROM groups WHERE uid = $1 FOR UPDATE", [org.uid]);
      const held = await openPostgresEngine(url, { poolSize: 1, lockTimeoutMs: 200 });
      try {
        const err = await held.repositories.groups.update(org.uid, { description: "changed" }, NOW + 1).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(storageFailureOf(err)).toBe("busy");
      } finally {
        await held.close();
      }
      await holder.query("ROLLBACK");

      // Start-up waits for another replica's migration however long it takes: the lock
      // timeout is for writers stuck behind rows, not for that.
      await holder.query("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK_KEY.toString()]);
      const starting = openPostgresEngine(url, { poolSize: 1, lockTimeoutMs: 100 });
      // Once it waits for the lock, hold it for three of its lock timeouts (PostgreSQL's own
      // clock: the timeout is the server's, no test clock reaches it).
      for (;;) {
        const waiting = await holder.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'");
        if (waiting.rows[0].n > 0) break;
      }
      await holder.query("SELECT pg_sleep(0.3)");
      await holder.query("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK_KEY.toString()]);
      const started = await starting;
      try {
        expect((await started.repositories.groups.get(org.uid))?.description).toBe("");
        // The pooled connection that migrated has the session's lock timeout again.
        const { rows } = await postgresPoolOf(started).query("SHOW lock_timeout");
        expect(rows[0].lock_timeout).toBe("100ms");
      } finally {
        await started.close();
      }
    } finally {
      await holder.end();
    }
  });

  it("keeps the API's own errors as they are", async () => {
    const err = await engine.repositories.identities
      .create({ parentUid: "c".repeat(40), name: "x", description: "", company: "", relationship: { kind: "service_principal", servicePrincipal: 1 } }, NOW)
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).code).toBe(GrpcCode.NotFound);
  });
});
