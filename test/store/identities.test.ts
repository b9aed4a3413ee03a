/**
 * Identities at the store level: `touchLastSeen` (the token exchange's hook), the
 * relationship columns, user identities without a relationship, and the RelationshipType
 * numbers the store writes.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { eq } from "drizzle-orm";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { RelationshipType } from "../../gen/chainguard/platform/iam/v2beta1/identities_pb.js";
import { type OpenedDatabase, openDatabase } from "../../src/store/sqlite/db.js";
import { createGroupsRepository } from "../../src/store/sqlite/groups.js";
import { createIdentitiesRepository } from "../../src/store/sqlite/identities.js";
import { type IdentitiesRepository, RELATIONSHIP_TYPES, type Relationship } from "../../src/store/identities.js";
import { identities } from "../../src/store/sqlite/schema.js";
import { newUidp } from "../../src/store/uidp.js";

const NOW = 1_800_000_000_000;

let dir: string;
let opened: OpenedDatabase;
let repo: IdentitiesRepository;
let org: string;

const create = (relationship: Relationship) => repo.create({ parentUid: org, name: "someone", description: "", company: "", relationship }, NOW);
const row = (uid: string) => opened.db.select().from(identities).where(eq(identities.uid, uid)).get();

beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-identities-"));
  opened = openDatabase(dir);
  repo = createIdentitiesRepository(opened.db);
  org = (await createGroupsRepository(opened.db).create({ parentUid: null, name: "org", description: "", verified: false, kind: 0 }, NOW)).uid;
});
afterEach(() => {
  opened.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe("touchLastSeen", () => {
  it("sets last_seen_time without touching update_time, and reports a missing identity", async () => {
    const id = await create({ kind: "service_principal", servicePrincipal: 1 });
    expect(id.lastSeenTime).toBeUndefined();
    expect(await repo.touchLastSeen(id.uid, NOW + 60_000)).toBe(true);
    const seen = await repo.get(id.uid);
    expect(seen).toMatchObject({ lastSeenTime: NOW + 60_000, updateTime: NOW, createTime: NOW });
    expect(await repo.touchLastSeen(id.uid, NOW + 120_000)).toBe(true);
    expect((await repo.get(id.uid))?.lastSeenTime).toBe(NOW + 120_000);
    expect(await repo.touchLastSeen(`${org}/0000000000000000`, NOW)).toBe(false);
  });
});

describe("the relationship columns", () => {
  it("keep the exact issuer and subject of claim matches and static keys, null for patterns", async () => {
    const exact = await create({ kind: "claim_match", issuer: { exact: "https://i" }, subject: { exact: "s" }, claims: {}, claimPatterns: {} });
    expect(row(exact.uid)).toMatchObject({ claimIssuer: "https://i", claimSubject: "s", relationshipType: RelationshipType.CLAIM_MATCH });
    const pattern = await create({ kind: "claim_match", issuer: { exact: "https://i" }, subject: { pattern: "s.*" }, claims: {}, claimPatterns: {} });
    expect(row(pattern.uid)).toMatchObject({ claimIssuer: "https://i", claimSubject: null });
    const keys = await create({ kind: "static_keys", issuer: "iss", subject: "sub", issuerKeys: "{}", expirationTime: NOW + 1, audiences: [] });
    expect(row(keys.uid)).toMatchObject({ claimIssuer: "iss", claimSubject: "sub", relationshipType: RelationshipType.STATIC });
    const aws = await create({ kind: "aws_identity", awsAccount: "123456789012" });
    expect(row(aws.uid)).toMatchObject({ claimIssuer: null, claimSubject: null, relationshipType: RelationshipType.AWS_IDENTITY });

    // Replacing the relationship rewrites the columns.
    const updated = await repo.update(exact.uid, () => ({ relationship: { kind: "service_principal", servicePrincipal: 3 } }), NOW + 1);
    expect(updated.relationship).toEqual({ kind: "service_principal", servicePrincipal: 3 });
    expect(row(exact.uid)).toMatchObject({ claimIssuer: null, claimSubject: null, relationshipType: RelationshipType.SERVICE_PRINCIPAL });
  });

  it("use the published RelationshipType numbers", () => {
    expect(RELATIONSHIP_TYPES).toEqual({
      claim_match: RelationshipType.CLAIM_MATCH,
      static_keys: RelationshipType.STATIC,
      aws_identity: RelationshipType.AWS_IDENTITY,
      service_principal: RelationshipType.SERVICE_PRINCIPAL,
    });
  });

  it("read a user identity (a root, made by login) as having no relationship", async () => {
    const uid = newUidp(null);
    opened.db.insert(identities).values({ uid, name: "alice", email: "alice@example.com", createTime: NOW, updateTime: NOW }).run();
    const user = await repo.get(uid);
    expect(user).toMatchObject({ uid, parentUid: null, email: "alice@example.com" });
    expect(user?.relationship).toBeUndefined();
  });
});

describe("list and count with statements prepared once per query shape", () => {
  it("each shape (name, kind, scopes), asked again with other values, answers for those values", async () => {
    const groups = createGroupsRepository(opened.db);
    const other = (await groups.create({ parentUid: null, name: "other", description: "", verified: false, kind: 0 }, NOW)).uid;
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
