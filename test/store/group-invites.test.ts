/**
 * Redeeming group invites at the store level (the published surface has no accept RPC; login
 * will call `redeemInvite`): the binding it creates, expiry, the email restriction, single
 * use, and that a failure half-way leaves nothing behind.
 */
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ApiError, GrpcCode } from "../../src/errors/api-error.js";
import { type OpenedDatabase, openDatabase } from "../../src/store/sqlite/db.js";
import { createGroupInvitesRepository } from "../../src/store/sqlite/group-invites.js";
import type { GroupInviteRecord, GroupInvitesRepository } from "../../src/store/group-invites.js";
import { createGroupsRepository } from "../../src/store/sqlite/groups.js";
import { groupInvites, identities, roleBindings, roles } from "../../src/store/sqlite/schema.js";
import { newUidp } from "../../src/store/uidp.js";

const NOW = 1_800_000_000_000;
const HOUR = 60 * 60 * 1000;

let dir: string;
let opened: OpenedDatabase;
let repo: GroupInvitesRepository;
let org: string;
let role: string;
let alice: string;

function addIdentity(email: string): string {
  const uid = newUidp(org);
  opened.db.insert(identities).values({ uid, parentUid: org, name: "someone", email, createTime: NOW, updateTime: NOW }).run();
  return uid;
}

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

const bindings = () => opened.db.select().from(roleBindings).all();
const invites = () => opened.db.select().from(groupInvites).all();

beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-invites-"));
  opened = openDatabase(dir);
  repo = createGroupInvitesRepository(opened.db);
  org = (await createGroupsRepository(opened.db).create({ parentUid: null, name: "org", description: "", verified: false, kind: 0 }, NOW)).uid;
  role = newUidp(org);
  opened.db.insert(roles).values({ uid: role, parentUid: org, name: "member", capabilities: "[103]", createTime: NOW, updateTime: NOW }).run();
  alice = addIdentity("Alice@Example.com");
});
afterEach(() => {
  opened.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe("GroupInvitesRepository.redeemInvite", () => {
  it("binds the invite's role at its group, reuses an identical binding, and keeps a multi-use invite", async () => {
    const { invite, code } = await repo.create({ parentUid: org, roleUid: role, email: "", singleUse: false, ttlMs: HOUR }, NOW);
    const first = await repo.redeemInvite(code, alice, NOW + 1);
    expect(first).toMatch(new RegExp(`^${org}/[0-9a-f]{16}$`));
    expect(bindings()).toEqual([{ uid: first, groupUid: org, identityUid: alice, roleUid: role, createTime: NOW + 1 }]);
    expect(await repo.redeemInvite(code, alice, NOW + 2)).toBe(first);
    expect(bindings()).toHaveLength(1);
    const bob = addIdentity("bob@example.com");
    const second = await repo.redeemInvite(code, bob, NOW + 3);
    expect(second).not.toBe(first);
    expect(bindings()).toHaveLength(2);
    expect(await repo.get(invite.uid)).toEqual(invite);
  });

  it("stores only the code's hash", async () => {
    const { invite, code } = await repo.create({ parentUid: org, roleUid: role, email: "", singleUse: false, ttlMs: HOUR }, NOW);
    const [row] = invites();
    expect(row?.codeHash).toBe(createHash("sha256").update(code).digest("hex"));
    expect(row?.keyId).toBe(invite.keyId);
    expect(JSON.stringify(row)).not.toContain(code.slice(invite.keyId.length));
  });

  it("consumes a single-use invite: the second redemption finds no invite", async () => {
    const { code } = await repo.create({ parentUid: org, roleUid: role, email: "", singleUse: true, ttlMs: HOUR }, NOW);
    await repo.redeemInvite(code, alice, NOW);
    expect(invites()).toEqual([]);
    const err = await failure(repo.redeemInvite(code, addIdentity("c@example.com"), NOW), GrpcCode.NotFound);
    expect(err.message).not.toContain(code);
    expect(bindings()).toHaveLength(1);
  });

  it("refuses an expired invite from its expiration time on, writing nothing", async () => {
    const { code } = await repo.create({ parentUid: org, roleUid: role, email: "", singleUse: true, ttlMs: HOUR }, NOW);
    const err = await failure(repo.redeemInvite(code, alice, NOW + HOUR), GrpcCode.FailedPrecondition);
    expect(err.preconditionViolations[0]?.type).toBe("INVITE_EXPIRED");
    expect(bindings()).toEqual([]);
    expect(invites()).toHaveLength(1);
    await repo.redeemInvite(code, alice, NOW + HOUR - 1);
    expect(bindings()).toHaveLength(1);
  });

  it("requires the identity's verified email to match an invite's email, ignoring case", async () => {
    const { code } = await repo.create({ parentUid: org, roleUid: role, email: "alice@example.com", singleUse: true, ttlMs: HOUR }, NOW);
    const mallory = addIdentity("mallory@example.com");
    const err = await failure(repo.redeemInvite(code, mallory, NOW), GrpcCode.FailedPrecondition);
    expect(err.preconditionViolations[0]?.type).toBe("INVITE_EMAIL_MISMATCH");
    await failure(repo.redeemInvite(code, addIdentity(""), NOW), GrpcCode.FailedPrecondition);
    expect([bindings(), invites().length]).toEqual([[], 1]);
    await repo.redeemInvite(code, alice, NOW);
    expect(bindings().map((b) => b.identityUid)).toEqual([alice]);
  });

  it("answers NOT_FOUND for unknown codes and identities", async () => {
    const { code } = await repo.create({ parentUid: org, roleUid: role, email: "", singleUse: false, ttlMs: HOUR }, NOW);
    await failure(repo.redeemInvite("", alice, NOW), GrpcCode.NotFound);
    await failure(repo.redeemInvite(`${code.slice(0, -1)}${code.endsWith("A") ? "B" : "A"}`, alice, NOW), GrpcCode.NotFound);
    await failure(repo.redeemInvite(code.slice(16), alice, NOW), GrpcCode.NotFound);
    await failure(repo.redeemInvite(code, `${org}/${"0".repeat(16)}`, NOW), GrpcCode.NotFound);
    expect(bindings()).toEqual([]);
  });

  it("is atomic: when consuming the invite fails, the binding written before it is rolled back", async () => {
    const { code } = await repo.create({ parentUid: org, roleUid: role, email: "", singleUse: true, ttlMs: HOUR }, NOW);
    opened.db.$client.exec("CREATE TRIGGER refuse BEFORE DELETE ON group_invites BEGIN SELECT RAISE(ABORT, 'refused'); END");
    await expect(repo.redeemInvite(code, alice, NOW)).rejects.toThrow(/refused/);
    expect([bindings(), invites().length]).toEqual([[], 1]);
    opened.db.$client.exec("DROP TRIGGER refuse");
    await repo.redeemInvite(code, alice, NOW);
    expect([bindings().length, invites().length]).toEqual([1, 0]);
  });
});

describe("GroupInvitesRepository reads", () => {
  it("hydrates the current role and leaves it out once the role is gone", async () => {
    const { invite } = await repo.create({ parentUid: org, roleUid: role, email: "", singleUse: false, ttlMs: HOUR }, NOW);
    expect(invite.role).toEqual({ uid: role, name: "member", description: "", capabilities: [103] });
    expect(invite.expirationTime).toBe(NOW + HOUR);
    // The foreign key keeps a referenced role in place; switch it off to simulate a role removed anyway.
    opened.db.$client.pragma("foreign_keys = OFF");
    opened.db.delete(roles).run();
    opened.db.$client.pragma("foreign_keys = ON");
    const { role: gone, ...rest } = invite;
    expect(gone).toBeDefined();
    expect(await repo.get(invite.uid)).toEqual(rest);
  });
});

describe("GroupInvitesRepository.list (statements prepared once per filter shape)", () => {
  it("answers each shape for the values asked, again with other values, with the joined role", async () => {
    const groups = createGroupsRepository(opened.db);
    const folder = (await groups.create({ parentUid: org, name: "folder", description: "", verified: false, kind: 0 }, NOW)).uid;
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
