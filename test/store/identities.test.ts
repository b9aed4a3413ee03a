/**
 * Identities at the store level: `touchLastSeen` (the token exchange's hook), the
 * relationship kept across replacement, the RelationshipType numbers the store writes, and
 * List/count per filter shape, on every engine; the SQLite relationship columns and a row no
 * repository writes (a user identity without a relationship) on SQLite alone.
 */
import { eq } from "drizzle-orm";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { RelationshipType } from "../../gen/chainguard/platform/iam/v2beta1/identities_pb.js";
import { type IdentitiesRepository, RELATIONSHIP_TYPES, type Relationship } from "../../src/store/identities.js";
import type { Db } from "../../src/store/sqlite/db.js";
import { sqliteConnectionOf } from "../../src/store/sqlite/engine.js";
import { identities } from "../../src/store/sqlite/schema.js";
import { newUidp } from "../../src/store/uidp.js";
import { ENGINES, type EngineUnderTest, type OpenedEngine } from "../support/engines.js";

const NOW = 1_800_000_000_000;

/** A fresh store with one organization, and an identity maker under it. */
function useStore(engineUnderTest: EngineUnderTest) {
  const ctx = {} as {
    opened: OpenedEngine;
    repo: IdentitiesRepository;
    org: string;
    create: (relationship: Relationship) => ReturnType<IdentitiesRepository["create"]>;
  };
  beforeEach(async () => {
    ctx.opened = await engineUnderTest.open(NOW);
    const { groups, identities: repo } = ctx.opened.engine.repositories;
    ctx.repo = repo;
    ctx.org = (await groups.create({ parentUid: null, name: "org", description: "", verified: false, kind: 0 }, NOW)).uid;
    ctx.create = (relationship) => repo.create({ parentUid: ctx.org, name: "someone", description: "", company: "", relationship }, NOW);
  });
  afterEach(async () => {
    await ctx.opened.close();
  });
  return ctx;
}

describe("the relationship types", () => {
  it("use the published RelationshipType numbers", () => {
    expect(RELATIONSHIP_TYPES).toEqual({
      claim_match: RelationshipType.CLAIM_MATCH,
      static_keys: RelationshipType.STATIC,
      aws_identity: RelationshipType.AWS_IDENTITY,
      service_principal: RelationshipType.SERVICE_PRINCIPAL,
    });
  });
});

describe.each(ENGINES)("identities on $name", (engineUnderTest) => {
  const ctx = useStore(engineUnderTest);

  describe("touchLastSeen", () => {
    it("sets last_seen_time without touching update_time, and reports a missing identity", async () => {
      const { repo, org } = ctx;
      const id = await ctx.create({ kind: "service_principal", servicePrincipal: 1 });
      expect(id.lastSeenTime).toBeUndefined();
      expect(await repo.touchLastSeen(id.uid, NOW + 60_000)).toBe(true);
      const seen = await repo.get(id.uid);
      expect(seen).toMatchObject({ lastSeenTime: NOW + 60_000, updateTime: NOW, createTime: NOW });
      expect(await repo.touchLastSeen(id.uid, NOW + 120_000)).toBe(true);
      expect((await repo.get(id.uid))?.lastSeenTime).toBe(NOW + 120_000);
      expect(await repo.touchLastSeen(`${org}/0000000000000000`, NOW)).toBe(false);
    });
  });

  describe("the relationship", () => {
    it("reads back as written for every kind, and replacing it replaces it", async () => {
      const { repo } = ctx;
      const relationships: Relationship[] = [
        { kind: "claim_match", issuer: { exact: "https://i" }, subject: { exact: "s" }, claims: {}, claimPatterns: {} },
        { kind: "claim_match", issuer: { exact: "https://i" }, subject: { pattern: "s.*" }, claims: {}, claimPatterns: {} },
        { kind: "static_keys", issuer: "iss", subject: "sub", issuerKeys: "{}", expirationTime: NOW + 1, audiences: [] },
        { kind: "aws_identity", awsAccount: "123456789012" },
      ];
      const made = [];
      for (const relationship of relationships) made.push(await ctx.create(relationship));
      for (const [i, id] of made.entries()) {
        expect(id.relationship, relationships[i]?.kind).toEqual(relationships[i]);
        expect((await repo.get(id.uid))?.relationship, relationships[i]?.kind).toEqual(relationships[i]);
      }
      const updated = await repo.update(made[0]!.uid, () => ({ relationship: { kind: "service_principal", servicePrincipal: 3 } }), NOW + 1);
      expect(updated.relationship).toEqual({ kind: "service_principal", servicePrincipal: 3 });
      expect((await repo.get(made[0]!.uid))?.relationship).toEqual({ kind: "service_principal", servicePrincipal: 3 });
    });
  });

  describe("list and count with statements prepared once per query shape", () => {
    it("each shape (name, kind, scopes), asked again with other values, answers for those values", async () => {
      const { repo, org } = ctx;
      const other = (await ctx.opened.engine.repositories.groups.create({ parentUid: null, name: "other", description: "", verified: false, kind: 0 }, NOW))
        .uid;
      const made: { uid: string; parent: string; name: string; kind: string }[] = [];
      for (const parent of [org, other]) {
        for (const [name, relationship] of [
          ["ci", { kind: "service_principal", servicePrincipal: 1 }],
          ["robot", { kind: "service_principal", servicePrincipal: 2 }],
          ["ci", { kind: "claim_match", issuer: { exact: "https://i" }, subject: { exact: "s" }, claims: {}, claimPatterns: {} }],
        ] as const) {
          const id = await repo.create({ parentUid: parent, name, description: "", company: "", relationship: relationship as Relationship }, NOW);
          made.push({ uid: id.uid, parent, name, kind: relationship.kind });
        }
      }
      const page = { order: "uid" as const, desc: false, offset: 0, limit: 100 };
      type F = Parameters<IdentitiesRepository["list"]>[0];
      const filters: F[] = [];
      for (const parent of [org, other, org]) {
        filters.push(
          { uidp: { childrenOf: parent } },
          { uidp: { childrenOf: parent }, name: "ci" },
          { uidp: { childrenOf: parent }, kind: "service_principal" },
          { uidp: { childrenOf: parent }, name: "ci", kind: "claim_match" },
          { uidp: {}, within: [parent] },
        );
      }
      filters.push({ uidp: {}, name: "robot", within: [org, other] }, { uidp: {}, kind: "static_keys" });
      for (const f of filters) {
        const want = made
          .filter(
            (m) =>
              (f.uidp.childrenOf === undefined || m.parent === f.uidp.childrenOf) &&
              (f.name === undefined || m.name === f.name) &&
              (f.kind === undefined || m.kind === f.kind) &&
              (f.within === undefined || f.within.includes(m.parent)),
          )
          .map((m) => m.uid)
          .sort();
        expect((await repo.list(f, page)).map((r) => r.uid).sort(), JSON.stringify(f)).toEqual(want);
        expect(await repo.count(f), JSON.stringify(f)).toBe(want.length);
      }
    });
  });
});

describe.each(ENGINES.filter((e) => e.name === "sqlite"))("identities, SQLite only", (engineUnderTest) => {
  const ctx = useStore(engineUnderTest);
  let db: Db;
  beforeEach(() => {
    db = sqliteConnectionOf(ctx.opened.engine);
  });
  const row = (uid: string) => db.select().from(identities).where(eq(identities.uid, uid)).get();

  // The claim_issuer/claim_subject/relationship_type columns are SQLite's layout for the
  // token exchange's lookup; another engine stores the relationship its own way.
  it("the relationship columns keep the exact issuer and subject of claim matches and static keys, null for patterns", async () => {
    const exact = await ctx.create({ kind: "claim_match", issuer: { exact: "https://i" }, subject: { exact: "s" }, claims: {}, claimPatterns: {} });
    expect(row(exact.uid)).toMatchObject({ claimIssuer: "https://i", claimSubject: "s", relationshipType: RelationshipType.CLAIM_MATCH });
    const pattern = await ctx.create({ kind: "claim_match", issuer: { exact: "https://i" }, subject: { pattern: "s.*" }, claims: {}, claimPatterns: {} });
    expect(row(pattern.uid)).toMatchObject({ claimIssuer: "https://i", claimSubject: null });
    const keys = await ctx.create({ kind: "static_keys", issuer: "iss", subject: "sub", issuerKeys: "{}", expirationTime: NOW + 1, audiences: [] });
    expect(row(keys.uid)).toMatchObject({ claimIssuer: "iss", claimSubject: "sub", relationshipType: RelationshipType.STATIC });
    const aws = await ctx.create({ kind: "aws_identity", awsAccount: "123456789012" });
    expect(row(aws.uid)).toMatchObject({ claimIssuer: null, claimSubject: null, relationshipType: RelationshipType.AWS_IDENTITY });

    // Replacing the relationship rewrites the columns.
    const updated = await ctx.repo.update(exact.uid, () => ({ relationship: { kind: "service_principal", servicePrincipal: 3 } }), NOW + 1);
    expect(updated.relationship).toEqual({ kind: "service_principal", servicePrincipal: 3 });
    expect(row(exact.uid)).toMatchObject({ claimIssuer: null, claimSubject: null, relationshipType: RelationshipType.SERVICE_PRINCIPAL });
  });

  // No repository writes a root identity without a relationship (login's findOrCreateUser
  // gives it an exact claim match); such rows exist in databases from before, so the row is
  // written by hand, which only the engine's own SQL can do.
  it("a user identity (a root, made by login) stored without a relationship reads as having none", async () => {
    const uid = newUidp(null);
    db.insert(identities).values({ uid, name: "alice", email: "alice@example.com", createTime: NOW, updateTime: NOW }).run();
    const user = await ctx.repo.get(uid);
    expect(user).toMatchObject({ uid, parentUid: null, email: "alice@example.com" });
    expect(user?.relationship).toBeUndefined();
  });
});
