/**
 * GroupInvites end to end over every RPC protocol (and a REST pass): the code shown only on
 * create (and stored only as a hash), the hydrated role, ttl bounds, role scoping, delete and
 * list. Redemption has no RPC; it is tested at the store level
 * (test/store/group-invites.test.ts).
 */
import { createHash } from "node:crypto";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { type Client, ConnectError, createClient } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Capability } from "../../gen/chainguard/capabilities/capabilities_pb.js";
import { type GroupInviteSchema, GroupInvitesService } from "../../gen/chainguard/platform/iam/v2beta1/group_invites_pb.js";
import { GroupsService } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { BadRequestSchema, ErrorInfoSchema, PreconditionFailureSchema } from "../../gen/google/rpc/error_details_pb.js";
import { newUidp } from "../../src/store/uidp.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { expectRejectedAndUnchanged, queryDb, snapshotDb } from "../support/db.js";
import { rest } from "../support/rest.js";
import { closeGrpcClients, Code, rpcTransports } from "../support/transports.js";

type InviteInit = MessageInitShape<typeof GroupInviteSchema>;

const DAY_S = 24n * 60n * 60n;
const toMs = (ts: { seconds: bigint; nanos: number } | undefined) => Number(ts?.seconds) * 1000 + (ts?.nanos ?? 0) / 1e6;

describe.each(rpcTransports)("GroupInvitesService over $name", (transport) => {
  let t: TestApp;
  let client: Client<typeof GroupInvitesService>;
  let groupsClient: Client<typeof GroupsService>;
  let org: string;
  let folder: string;
  let otherOrg: string;
  let builtIn: string;
  let orgRole: string;
  let folderRole: string;
  let foreignRole: string;

  /** Runs a call that must fail without writing; checks code, ErrorInfo and the violated field. */
  async function rejects(fn: () => Promise<unknown>, code: Code, field?: string): Promise<ConnectError> {
    const err = (await expectRejectedAndUnchanged(t, fn)) as ConnectError;
    expect(err).toBeInstanceOf(ConnectError);
    expect(err.code, err.rawMessage).toBe(code);
    const reason = Code[code].replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase();
    expect(err.findDetails(ErrorInfoSchema).map((i) => [i.reason, i.domain])).toEqual([[reason, "iam.chainguard.dev"]]);
    if (field !== undefined) expect(err.findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => v.field)).toContain(field);
    return err;
  }

  /** A role row written through a second connection to the server's database (no API makes a built-in role). */
  const insertRole = async (parentUid: string | null, name: string) => {
    const uid = newUidp(parentUid);
    await queryDb(
      t,
      "INSERT INTO roles (uid, parent_uid, name, description, capabilities, built_in, create_time, update_time) VALUES (?, ?, ?, ?, ?, ?, 0, 0)",
      [uid, parentUid, name, `${name} role`, JSON.stringify([Capability.CAP_IAM_GROUPS_LIST, Capability.CAP_IAM_ROLES_LIST]), parentUid === null ? 1 : 0],
    );
    return uid;
  };

  const invite = (parent: string, fields: InviteInit = {}) =>
    client.createGroupInvite({ parent, groupInvite: { roleUid: builtIn, ttl: { seconds: DAY_S }, ...fields } as InviteInit });

  beforeAll(async () => {
    t = await startTestApp();
    const transportInstance = transport.create(t.url);
    client = createClient(GroupInvitesService, transportInstance);
    groupsClient = createClient(GroupsService, transportInstance);
    org = (await groupsClient.createGroup({ group: { name: "invite org" } })).uid;
    folder = (await groupsClient.createGroup({ parent: org, group: { name: "invite folder" } })).uid;
    otherOrg = (await groupsClient.createGroup({ group: { name: "other org" } })).uid;
    builtIn = await insertRole(null, "viewer");
    orgRole = await insertRole(org, "org custom");
    folderRole = await insertRole(folder, "folder custom");
    foreignRole = await insertRole(otherOrg, "foreign");
  });
  afterAll(async () => {
    closeGrpcClients();
    await t.close();
  });

  it("creates an invite whose code is returned once and stored only as a hash", async () => {
    const before = Date.now();
    const inv = await invite(org, { email: "dev@example.com", singleUse: true });
    expect(inv.uid).toMatch(new RegExp(`^${org}/[0-9a-f]{16}$`));
    expect(inv).toMatchObject({ roleUid: builtIn, email: "dev@example.com", singleUse: true });
    expect(inv.role).toMatchObject({
      uid: builtIn,
      name: "viewer",
      description: "viewer role",
      capabilities: [Capability.CAP_IAM_GROUPS_LIST, Capability.CAP_IAM_ROLES_LIST],
    });
    expect(inv.keyId).toMatch(/^[0-9a-f]{16}$/);
    expect(inv.code).toMatch(/^[0-9a-f]{16}[A-Za-z0-9_-]{43}$/); // key id + 256 random bits, base64url
    expect(inv.code.startsWith(inv.keyId)).toBe(true);
    expect(inv.ttl).toBeUndefined();
    expect(toMs(inv.createTime)).toBeGreaterThanOrEqual(before - 1);
    expect(toMs(inv.expirationTime) - toMs(inv.createTime)).toBe(Number(DAY_S) * 1000);

    const [stored] = await queryDb(t, "SELECT * FROM group_invites WHERE uid = ?", [inv.uid]);
    expect(stored?.code_hash).toBe(createHash("sha256").update(inv.code).digest("hex"));
    expect(JSON.stringify(stored)).not.toContain(inv.code.slice(16));

    const got = await client.getGroupInvite({ uid: inv.uid });
    expect(got.code).toBe("");
    expect(got.ttl).toBeUndefined();
    expect(got).toEqual({ ...inv, code: "" });
    const listed = await client.listGroupInvites({ keyId: inv.keyId });
    expect(listed.groupInvites).toEqual([got]);
    expect(inv.code).not.toBe((await invite(org)).code);
  });

  it("hydrates the role as it is now and accepts roles of the group's ancestors and a 30-day ttl", async () => {
    const inv = await invite(folder, { roleUid: orgRole, ttl: { seconds: 30n * DAY_S } });
    expect(inv.role?.name).toBe("org custom");
    await queryDb(t, "UPDATE roles SET name = 'renamed custom' WHERE uid = ?", [orgRole]);
    expect((await client.getGroupInvite({ uid: inv.uid })).role?.name).toBe("renamed custom");
    const own = await invite(folder, { roleUid: folderRole, ttl: { seconds: 0n, nanos: 500_000_000 } });
    expect(toMs(own.expirationTime) - toMs(own.createTime)).toBe(500);
  });

  it("rejects missing fields, bad ttl, bad email and roles the group cannot grant, writing nothing", async () => {
    const empty = await rejects(() => client.createGroupInvite({ parent: org }), Code.InvalidArgument);
    expect(empty.findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => v.field)).toEqual(["role_uid", "ttl"]);
    await rejects(() => invite("nope"), Code.InvalidArgument, "parent");
    await rejects(() => invite(""), Code.InvalidArgument, "parent");
    await rejects(() => invite("5".repeat(40)), Code.NotFound);
    await rejects(() => invite(org, { roleUid: "" }), Code.InvalidArgument, "role_uid");
    await rejects(() => invite(org, { ttl: undefined }), Code.InvalidArgument, "ttl");
    const mixedSigns = transport.name.includes("json") ? [] : [{ seconds: 5n, nanos: -1 }]; // JSON cannot carry it
    for (const ttl of [{ seconds: 0n }, { seconds: -60n }, { seconds: 30n * DAY_S + 1n }, { seconds: 0n, nanos: -1 }, ...mixedSigns]) {
      await rejects(() => invite(org, { ttl }), Code.InvalidArgument, "ttl");
    }
    for (const email of ["nope", "a@b", "a b@example.com", "@example.com", `${"x".repeat(250)}@example.com`]) {
      await rejects(() => invite(org, { email }), Code.InvalidArgument, "email");
    }
    for (const roleUid of ["6".repeat(40), `${org}/${"0".repeat(16)}`, foreignRole, folderRole]) {
      // dangling, dangling custom, another organization's, a descendant group's
      await rejects(() => invite(org, { roleUid }), Code.InvalidArgument, "role_uid");
    }
  });

  it("deletes, answering NOT_FOUND for missing invites, and blocks deleting a group that has one", async () => {
    const holder = (await groupsClient.createGroup({ parent: org, group: { name: "invite holder" } })).uid;
    const inv = await invite(holder);
    const blocked = await rejects(() => groupsClient.deleteGroup({ uid: holder }), Code.FailedPrecondition);
    expect(blocked.findDetails(PreconditionFailureSchema)[0]?.violations[0]?.description).toBe("cannot delete group with child group invites");
    await client.deleteGroupInvite({ uid: inv.uid });
    await rejects(() => client.getGroupInvite({ uid: inv.uid }), Code.NotFound);
    await rejects(() => client.deleteGroupInvite({ uid: inv.uid }), Code.NotFound);
    await rejects(() => client.getGroupInvite({ uid: "bad" }), Code.InvalidArgument, "uid");
    await groupsClient.deleteGroup({ uid: holder });
  });

  it("lists newest first by default, filters by uidp and key id, and orders by expiry", async () => {
    const team = (await groupsClient.createGroup({ parent: otherOrg, group: { name: "list team" } })).uid;
    const made = [];
    for (const hours of [3n, 1n, 2n]) {
      made.push(await invite(team, { roleUid: foreignRole, ttl: { seconds: hours * 3600n } }));
      t.advanceClock(1000);
    }
    const uids = async (req: { orderBy?: string; keyId?: string }) =>
      (await client.listGroupInvites({ uidp: { childrenOf: team }, ...req })).groupInvites.map((i) => i.uid);
    expect(await uids({})).toEqual(made.map((i) => i.uid).reverse());
    expect(await uids({ orderBy: "created_at" })).toEqual(made.map((i) => i.uid));
    expect(await uids({ orderBy: "expiration_time" })).toEqual([made[1], made[2], made[0]].map((i) => i?.uid));
    expect(await uids({ orderBy: "uid desc" })).toEqual(
      made
        .map((i) => i.uid)
        .sort()
        .reverse(),
    );
    expect(await uids({ keyId: made[2]?.keyId })).toEqual([made[2]?.uid]);
    const page = await client.listGroupInvites({ uidp: { descendantsOf: otherOrg }, pageSize: 2 });
    expect(page.groupInvites.every((i) => i.code === "" && i.ttl === undefined)).toBe(true);
    expect(page.totalCount).toBe(3n);
    const rest = await client.listGroupInvites({ uidp: { descendantsOf: otherOrg }, pageSize: 2, pageToken: page.nextPageToken });
    expect([...page.groupInvites, ...rest.groupInvites].map((i) => i.uid)).toEqual(made.map((i) => i.uid).reverse());
    await rejects(() => client.listGroupInvites({ orderBy: "code" }), Code.InvalidArgument, "order_by");
  });
});

describe("GroupInvites over REST", () => {
  let t: TestApp;
  afterAll(async () => t.close());

  it("creates with a JSON duration, shows the code once, and never renders ttl", async () => {
    t = await startTestApp();
    const org = (await rest(t.url, "POST", "/iam/v2beta1/groups", { name: "rest org" })).body.uid as string;
    const roleUid = newUidp(null);
    await queryDb(t, "INSERT INTO roles (uid, name, built_in, create_time, update_time) VALUES (?, 'viewer', TRUE, 0, 0)", [roleUid]);
    const created = await rest(t.url, "POST", `/iam/v2beta1/groupInvites/${org}`, { roleUid, ttl: "3600s", singleUse: true });
    expect(created.status).toBe(200);
    expect(created.body.code).toMatch(/^[0-9a-f]{16}[A-Za-z0-9_-]{43}$/);
    expect(created.body).not.toHaveProperty("ttl");
    expect(Date.parse(created.body.expirationTime) - Date.parse(created.body.createTime)).toBe(3_600_000);
    const got = await rest(t.url, "GET", `/iam/v2beta1/groupInvites/${created.body.uid}`);
    expect(got.body).toEqual({ ...created.body, code: "" });
    const listed = await rest(t.url, "GET", `/iam/v2beta1/groupInvites?keyId=${created.body.keyId}`);
    expect(listed.body.groupInvites).toEqual([got.body]);
    const before = await snapshotDb(t);
    const tooLong = await rest(t.url, "POST", `/iam/v2beta1/groupInvites/${org}`, { roleUid, ttl: "2592001s" });
    expect([tooLong.status, tooLong.body.code]).toEqual([400, 3]);
    expect(await snapshotDb(t)).toBe(before);
    expect((await rest(t.url, "DELETE", `/iam/v2beta1/groupInvites/${created.body.uid}`)).status).toBe(200);
  });
});
