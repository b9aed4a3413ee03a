/**
 * Redeeming group invites at the store level (the published surface has no accept RPC; login
 * will call `redeemInvite`): the binding it creates, expiry, the judge it runs inside its
 * transaction (the email and creator rules live above the store and are proven through the
 * server, test/auth/invite-redemption.test.ts), single use, and that a failure half-way
 * leaves nothing behind; reads hydrating the role; List per
 * filter shape. On every engine through StoreEngine, with every row made and read through the
 * repositories; what needs the engine's own SQL (the stored hash column, a trigger that fails
 * a write, a role removed behind the foreign key's back) runs on SQLite alone.
 */
import { createHash } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ApiError, GrpcCode } from "../../src/errors/api-error.js";
import type { GrantView } from "../../src/store/grant-view.js";
import type { GroupInviteRecord, GroupInvitesRepository, InviteToRedeem, NewGroupInvite } from "../../src/store/group-invites.js";
import { sqliteConnectionOf } from "../../src/store/sqlite/engine.js";
import { groupInvites, roles } from "../../src/store/sqlite/schema.js";
import { ENGINES, type EngineUnderTest, type OpenedEngine } from "../support/engines.js";

const NOW = 1_800_000_000_000;
const HOUR = 60 * 60 * 1000;

/** Awaits a call that must fail with an ApiError of `code`; returns it. */
async function failure(p: Promise<unknown>, code: GrpcCode): Promise<ApiError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApiError);
  expect((err as ApiError).code).toBe(code);
  return err as ApiError;
}

const everything = { order: "uid" as const, desc: false, offset: 0, limit: 1000 };

/** What the layer above records as an invite's creator: opaque to the store. */
const CREATOR = '{"sub":"someone"}';
type Judge = (view: GrantView, invite: InviteToRedeem) => void;

/** The repository with the creator and the redemption's judge (the rules above the store) filled in unless a test gives its own. */
interface TestRepo extends Omit<GroupInvitesRepository, "create" | "redeemInvite"> {
  create(invite: Omit<NewGroupInvite, "creator"> & { creator?: string }, now: number): ReturnType<GroupInvitesRepository["create"]>;
  redeemInvite(code: string, identityUid: string, now: number, judge?: Judge): Promise<string>;
}
function testRepo(repo: GroupInvitesRepository): TestRepo {
  return {
    ...repo,
    create: (invite, now) => repo.create({ creator: CREATOR, ...invite }, now),
    redeemInvite: (code, identityUid, now, judge = () => {}) => repo.redeemInvite(code, identityUid, now, judge),
  };
}

/**
 * A fresh store with an organization, a custom role "member" in it and a user identity
 * "alice" with a verified email, as login makes them.
 */
function useWorld(engineUnderTest: EngineUnderTest) {
  const w = {} as {
    opened: OpenedEngine;
    repo: TestRepo;
    org: string;
    role: string;
    alice: string;
    /** A user identity (made as login makes one) whose verified email is `email`. */
    addIdentity(email: string): Promise<string>;
    /** Every role binding, as stored. */
    bindings(): Promise<{ uid: string; groupUid: string; identityUid: string; roleUid: string; createTime: number }[]>;
    /** Every invite. */
    invites(): Promise<GroupInviteRecord[]>;
  };
  let people = 0;
  beforeEach(async () => {
    w.opened = await engineUnderTest.open(NOW);
    const r = w.opened.engine.repositories;
    w.repo = testRepo(r.groupInvites);
    w.addIdentity = async (email) =>
      (await r.identities.findOrCreateUser({ issuer: "https://idp.example", subject: `person-${people++}`, name: "someone", email }, NOW)).uid;
    w.bindings = async () =>
      (await r.roleBindings.list({ uidp: {} }, everything)).map(({ uid, groupUid, identityUid, roleUid, createTime }) => ({
        uid,
        groupUid,
        identityUid,
        roleUid,
        createTime,
      }));
    w.invites = () => r.groupInvites.list({ uidp: {} }, everything);
    w.org = (await r.groups.create({ parentUid: null, name: "org", description: "", verified: false, kind: 0 }, NOW)).uid;
    w.role = (await r.roles.create({ parentUid: w.org, name: "member", description: "", capabilities: [103] }, NOW)).uid;
    w.alice = await w.addIdentity("Alice@Example.com");
  });
  afterEach(async () => {
    await w.opened.close();
  });
  return w;
}

describe.each(ENGINES)("group invites on $name", (engineUnderTest) => {
  const w = useWorld(engineUnderTest);

  describe("GroupInvitesRepository.redeemInvite", () => {
    it("binds the invite's role at its group, reuses an identical binding, and keeps a multi-use invite", async () => {
      const { repo, org, role, alice } = w;
      const { invite, code } = await repo.create({ parentUid: org, roleUid: role, email: "", singleUse: false, ttlMs: HOUR }, NOW);
      const first = await repo.redeemInvite(code, alice, NOW + 1);
      expect(first).toMatch(new RegExp(`^${org}/[0-9a-f]{16}$`));
      expect(await w.bindings()).toEqual([{ uid: first, groupUid: org, identityUid: alice, roleUid: role, createTime: NOW + 1 }]);
      expect(await repo.redeemInvite(code, alice, NOW + 2)).toBe(first);
      expect(await w.bindings()).toHaveLength(1);
      const bob = await w.addIdentity("bob@example.com");
      const second = await repo.redeemInvite(code, bob, NOW + 3);
      expect(second).not.toBe(first);
      expect(await w.bindings()).toHaveLength(2);
      expect(await repo.get(invite.uid)).toEqual(invite);
    });

    it("never hands the code back: not on a read, not in a list", async () => {
      const { repo, org, role } = w;
      const { invite, code } = await repo.create({ parentUid: org, roleUid: role, email: "", singleUse: false, ttlMs: HOUR }, NOW);
      const secret = code.slice(invite.keyId.length);
      expect(code.startsWith(invite.keyId)).toBe(true);
      expect(JSON.stringify(invite)).not.toContain(secret);
      expect(JSON.stringify(await repo.get(invite.uid))).not.toContain(secret);
      expect(JSON.stringify(await w.invites())).not.toContain(secret);
    });

    it("consumes a single-use invite: the second redemption finds no invite", async () => {
      const { repo, org, role, alice } = w;
      const { code } = await repo.create({ parentUid: org, roleUid: role, email: "", singleUse: true, ttlMs: HOUR }, NOW);
      await repo.redeemInvite(code, alice, NOW);
      expect(await w.invites()).toEqual([]);
      const err = await failure(repo.redeemInvite(code, await w.addIdentity("c@example.com"), NOW), GrpcCode.NotFound);
      expect(err.message).not.toContain(code);
      expect(await w.bindings()).toHaveLength(1);
    });

    it("refuses an expired invite from its expiration time on, writing nothing", async () => {
      const { repo, org, role, alice } = w;
      const { code } = await repo.create({ parentUid: org, roleUid: role, email: "", singleUse: true, ttlMs: HOUR }, NOW);
      const err = await failure(repo.redeemInvite(code, alice, NOW + HOUR), GrpcCode.FailedPrecondition);
      expect(err.preconditionViolations[0]?.type).toBe("INVITE_EXPIRED");
      expect(await w.bindings()).toEqual([]);
      expect(await w.invites()).toHaveLength(1);
      await repo.redeemInvite(code, alice, NOW + HOUR - 1);
      expect(await w.bindings()).toHaveLength(1);
    });

    it("runs the judge inside its transaction with the invite, its creator and the identity's email; its refusal writes nothing", async () => {
      const { repo, org, role, alice } = w;
      const { invite, code } = await repo.create(
        { parentUid: org, roleUid: role, email: "Alice@Example.com", singleUse: true, ttlMs: HOUR, creator: '{"sub":"x"}' },
        NOW,
      );
      const seen: { invite: InviteToRedeem; grants: number; roleCapabilities: readonly number[] | undefined }[] = [];
      const refusal = new ApiError(GrpcCode.FailedPrecondition, "no");
      const refuse: Judge = (view, i) => {
        seen.push({ invite: i, grants: view.grantsOf(alice).length, roleCapabilities: view.roleCapabilities(i.roleUid) });
        throw refusal;
      };
      await expect(repo.redeemInvite(code, alice, NOW, refuse)).rejects.toBe(refusal);
      expect(seen).toEqual([
        {
          invite: { uid: invite.uid, parentUid: org, roleUid: role, email: "Alice@Example.com", creator: '{"sub":"x"}', identityEmail: "Alice@Example.com" },
          grants: 0,
          roleCapabilities: [103],
        },
      ]);
      expect([await w.bindings(), (await w.invites()).length]).toEqual([[], 1]);
      await repo.redeemInvite(code, alice, NOW);
      expect((await w.bindings()).map((b) => b.identityUid)).toEqual([alice]);
    });

    it("answers NOT_FOUND for unknown codes and identities", async () => {
      const { repo, org, role, alice } = w;
      const { code } = await repo.create({ parentUid: org, roleUid: role, email: "", singleUse: false, ttlMs: HOUR }, NOW);
      await failure(repo.redeemInvite("", alice, NOW), GrpcCode.NotFound);
      await failure(repo.redeemInvite(`${code.slice(0, -1)}${code.endsWith("A") ? "B" : "A"}`, alice, NOW), GrpcCode.NotFound);
      await failure(repo.redeemInvite(code.slice(16), alice, NOW), GrpcCode.NotFound);
      await failure(repo.redeemInvite(code, `${org}/${"0".repeat(16)}`, NOW), GrpcCode.NotFound);
      expect(await w.bindings()).toEqual([]);
    });
  });

  describe("GroupInvitesRepository reads", () => {
    it("hydrate the current role", async () => {
      const { repo, org, role } = w;
      const { invite } = await repo.create({ parentUid: org, roleUid: role, email: "", singleUse: false, ttlMs: HOUR }, NOW);
      expect(invite.role).toEqual({ uid: role, name: "member", description: "", capabilities: [103] });
      expect(invite.expirationTime).toBe(NOW + HOUR);
      expect(await repo.get(invite.uid)).toEqual(invite);
      await w.opened.engine.repositories.roles.update(role, { description: "now described" }, NOW + 1);
      expect((await repo.get(invite.uid))?.role).toEqual({ uid: role, name: "member", description: "now described", capabilities: [103] });
    });
  });

  describe("GroupInvitesRepository.list (statements prepared once per filter shape)", () => {
    it("answers each shape for the values asked, again with other values, with the joined role", async () => {
      const { repo, org, role } = w;
      const folder = (await w.opened.engine.repositories.groups.create({ parentUid: org, name: "folder", description: "", verified: false, kind: 0 }, NOW)).uid;
      const made: GroupInviteRecord[] = [];
      for (const parentUid of [org, org, folder]) {
        made.push((await repo.create({ parentUid, roleUid: role, email: "", singleUse: false, ttlMs: HOUR }, NOW)).invite);
      }
      const page = { order: "uid" as const, desc: false, offset: 0, limit: 100 };
      const uids = async (filter: Parameters<GroupInvitesRepository["list"]>[0]) => (await repo.list(filter, page)).map((i) => i.uid);
      const expected = (pred: (i: GroupInviteRecord) => boolean) =>
        made
          .filter(pred)
          .map((i) => i.uid)
          .sort();
      for (let round = 0; round < 2; round++) {
        expect(await uids({ uidp: { childrenOf: org } })).toEqual(expected((i) => i.parentUid === org));
        expect(await uids({ uidp: { childrenOf: folder } })).toEqual(expected((i) => i.parentUid === folder));
        expect(await repo.count({ uidp: { childrenOf: folder } })).toBe(1);
        for (const invite of made) expect(await uids({ uidp: {}, keyId: invite.keyId })).toEqual([invite.uid]);
        expect(await uids({ uidp: {}, within: [folder] })).toEqual(expected((i) => i.parentUid === folder));
      }
      const listed = await repo.list({ uidp: { descendantsOf: org } }, page);
      expect(listed).toEqual([...made].sort((a, b) => (a.uid < b.uid ? -1 : 1)));
      expect(listed[0]?.role?.name).toBe("member");
    });
  });
});

describe.each(ENGINES.filter((e) => e.name === "sqlite"))("group invites, SQLite only", (engineUnderTest) => {
  const w = useWorld(engineUnderTest);
  const db = () => sqliteConnectionOf(w.opened.engine);

  // What is stored in place of the code is a column of SQLite's layout; the engine-neutral
  // half (the code never comes back out) runs on every engine above.
  it("stores only the code's hash", async () => {
    const { invite, code } = await w.repo.create({ parentUid: w.org, roleUid: w.role, email: "", singleUse: false, ttlMs: HOUR }, NOW);
    const [row] = db().select().from(groupInvites).all();
    expect(row?.codeHash).toBe(createHash("sha256").update(code).digest("hex"));
    expect(row?.keyId).toBe(invite.keyId);
    expect(JSON.stringify(row)).not.toContain(code.slice(invite.keyId.length));
  });

  // Failing the invite's delete half-way through the transaction needs a trigger, SQL of the engine's own.
  it("redeemInvite is atomic: when consuming the invite fails, the binding written before it is rolled back", async () => {
    const { code } = await w.repo.create({ parentUid: w.org, roleUid: w.role, email: "", singleUse: true, ttlMs: HOUR }, NOW);
    db().$client.exec("CREATE TRIGGER refuse BEFORE DELETE ON group_invites BEGIN SELECT RAISE(ABORT, 'refused'); END");
    await expect(w.repo.redeemInvite(code, w.alice, NOW)).rejects.toThrow(/refused/);
    expect([await w.bindings(), (await w.invites()).length]).toEqual([[], 1]);
    db().$client.exec("DROP TRIGGER refuse");
    await w.repo.redeemInvite(code, w.alice, NOW);
    expect([(await w.bindings()).length, (await w.invites()).length]).toEqual([1, 0]);
  });

  // The repositories refuse to delete a role an invite grants, and the foreign key backs them;
  // a role gone anyway (an older database) is made by switching the key off, a SQLite PRAGMA.
  it("reads leave the role out once the role is gone", async () => {
    const { invite } = await w.repo.create({ parentUid: w.org, roleUid: w.role, email: "", singleUse: false, ttlMs: HOUR }, NOW);
    db().$client.pragma("foreign_keys = OFF");
    db().delete(roles).run();
    db().$client.pragma("foreign_keys = ON");
    const { role: gone, ...rest } = invite;
    expect(gone).toBeDefined();
    expect(await w.repo.get(invite.uid)).toEqual(rest);
  });
});
