/**
 * The PostgreSQL engine (src/store/postgres/engine.ts) against the real cluster: what is ported
 * works through the StoreEngine interface, everything else answers UNIMPLEMENTED naming the
 * repository and method (never a wrong answer), and a full pool comes out as the engine-neutral
 * StorageError that the error module maps to UNAVAILABLE, with the health readings following.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { ApiError, GrpcCode } from "../../src/errors/api-error.js";
import { builtInRoleUid } from "../../src/store/builtin-roles.js";
import { openPostgresEngine, type PostgresEngine, postgresPoolOf, UNPORTED_REPOSITORIES } from "../../src/store/postgres/engine.js";
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
    await engine?.closeAndWait();
    await other?.closeAndWait();
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

  it("answers UNIMPLEMENTED naming the repository and method for every repository not ported", async () => {
    for (const name of UNPORTED_REPOSITORIES) {
      const repo = engine.repositories[name] as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
      const err = await repo.list!({}, {}).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err, name).toBeInstanceOf(ApiError);
      expect((err as ApiError).code).toBe(GrpcCode.Unimplemented);
      expect((err as ApiError).message).toContain(`${name}.list on PostgreSQL`);
    }
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
