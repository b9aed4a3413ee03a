/**
 * Groups end to end over every RPC protocol (REST has its own suite).
 * Each hostile case asserts the error code, the AIP-193 details and that the database is
 * byte-for-byte unchanged.
 */
import { type Client, ConnectError, createClient } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GroupsService, OrgKind } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { BadRequestSchema, ErrorInfoSchema, PreconditionFailureSchema, ResourceInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { createUserIdentity, identityToken, operatorToken, setDefaultToken } from "../support/auth.js";
import { callDoors } from "../support/call-method.js";
import { rest } from "../support/rest.js";
import { builtInRoleUid } from "../../src/store/builtin-roles.js";
import { expectRejectedAndUnchanged } from "../support/db.js";
import { closeGrpcClients, Code, rpcTransports } from "../support/transports.js";

const ROOT_UID = /^[0-9a-f]{40}$/;
const THREE_DAYS = 3 * 24 * 60 * 60 * 1000;

function asConnectError(err: unknown): ConnectError {
  expect(err).toBeInstanceOf(ConnectError);
  return err as ConnectError;
}

function expectErrorInfo(err: ConnectError, code: Code, reason: string) {
  expect(err.code).toBe(code);
  const info = err.findDetails(ErrorInfoSchema);
  expect(info).toHaveLength(1);
  expect(info[0]?.reason).toBe(reason);
  expect(info[0]?.domain).toBe("iam.chainguard.dev");
}

describe.each(rpcTransports)("GroupsService over $name", (transport) => {
  let t: TestApp;
  let client: Client<typeof GroupsService>;

  beforeAll(async () => {
    t = await startTestApp();
    client = createClient(GroupsService, transport.create(t.url));
  });
  afterAll(async () => {
    closeGrpcClients();
    await t.close();
  });

  it("creates an organization with server-set fields", async () => {
    const before = Date.now();
    const g = await client.createGroup({ group: { name: "acme corp", description: "first org" } });
    expect(g.uid).toMatch(ROOT_UID);
    expect(g.name).toBe("acme corp");
    expect(g.description).toBe("first org");
    expect(g.verified).toBe(false);
    expect(g.resourceLimits).toEqual({});
    const created = Number(g.createTime?.seconds) * 1000 + (g.createTime?.nanos ?? 0) / 1e6;
    expect(created).toBeGreaterThanOrEqual(before - 1);
    expect((g.createTime?.nanos ?? 0) % 1_000_000).toBe(0); // millisecond precision
    expect(g.updateTime).toEqual(g.createTime);
  });

  it("creates folders whose uid extends the parent's", async () => {
    const org = await client.createGroup({ group: { name: "org-a", kind: OrgKind.CUSTOMER } });
    const child = await client.createGroup({ parent: org.uid, group: { name: "team" } });
    expect(child.uid).toMatch(new RegExp(`^${org.uid}/[0-9a-f]{16}$`));
    expect(child.kind).toBe(OrgKind.CUSTOMER); // inherited from the organization
    const grandchild = await client.createGroup({ parent: child.uid, group: { name: "sub.team_1" } });
    expect(grandchild.uid.startsWith(`${child.uid}/`)).toBe(true);
    expect(grandchild.kind).toBe(OrgKind.CUSTOMER); // from the root, two levels up
    expect(await client.getGroup({ uid: grandchild.uid })).toEqual(grandchild);
  });

  it("rejects invalid names with the spec's message and BadRequest, writing nothing", async () => {
    for (const name of ["", "Upper", "has/slash", "a", "x".repeat(64), "emoji 🚀", "tab\u0009"]) {
      const err = asConnectError(await expectRejectedAndUnchanged(t, () => client.createGroup({ group: { name } })));
      expectErrorInfo(err, Code.InvalidArgument, "INVALID_ARGUMENT");
      const bad = err.findDetails(BadRequestSchema)[0];
      expect(bad?.fieldViolations[0]?.field).toBe("name");
      expect(err.rawMessage).toMatch(/^Invalid argument: name: name must/);
    }
    const err = asConnectError(await expectRejectedAndUnchanged(t, () => client.createGroup({ group: { name: "BAD" } })));
    expect(err.rawMessage).toBe('Invalid argument: name: name must match "^[a-z0-9 ._-]{1,}$"');
    // A NUL is refused by the rule every write's strings follow (any field, its full path).
    const nul = asConnectError(await expectRejectedAndUnchanged(t, () => client.createGroup({ group: { name: "nul\u0000" } })));
    expectErrorInfo(nul, Code.InvalidArgument, "INVALID_ARGUMENT");
    expect(nul.rawMessage).toBe("Invalid argument: group.name: must not contain the NUL character (U+0000)");
    expect(err.findDetails(BadRequestSchema)[0]?.fieldViolations[0]?.description).toBe('name must match "^[a-z0-9 ._-]{1,}$"');
  });

  it("rejects a missing group, a bad parent and kind on a folder", async () => {
    const org = await client.createGroup({ group: { name: "kind-org" } });
    const cases = [
      { req: {}, field: "name" },
      { req: { parent: "not-a-uid", group: { name: "ok name" } }, field: "parent" },
      { req: { parent: org.uid, group: { name: "folder", kind: OrgKind.DEV } }, field: "kind" },
      { req: { group: { name: "okay", description: "line\nbreak" } }, field: "description" },
    ];
    for (const c of cases) {
      const err = asConnectError(await expectRejectedAndUnchanged(t, () => client.createGroup(c.req)));
      expectErrorInfo(err, Code.InvalidArgument, "INVALID_ARGUMENT");
      expect(err.findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => v.field)).toContain(c.field);
    }
    const missingParent = `${"a".repeat(40)}`;
    const err = asConnectError(await expectRejectedAndUnchanged(t, () => client.createGroup({ parent: missingParent, group: { name: "orphan" } })));
    expectErrorInfo(err, Code.NotFound, "NOT_FOUND");
  });

  it("returns NOT_FOUND with ResourceInfo for a missing group", async () => {
    const uid = "b".repeat(40);
    const err = asConnectError(await client.getGroup({ uid }).catch((e) => e));
    expectErrorInfo(err, Code.NotFound, "NOT_FOUND");
    expect(err.findDetails(ResourceInfoSchema)[0]?.resourceName).toBe(uid);
    const bad = asConnectError(await client.getGroup({ uid: "../etc" }).catch((e) => e));
    expectErrorInfo(bad, Code.InvalidArgument, "INVALID_ARGUMENT");
  });

  it("updates only non-default fields without a mask, only masked fields with one", async () => {
    const g = await client.createGroup({ group: { name: "upd", description: "before" } });
    const a = await client.updateGroup({ group: { uid: g.uid, description: "after" } });
    expect(a.name).toBe("upd");
    expect(a.description).toBe("after");
    expect(a.createTime).toEqual(g.createTime);

    const b = await client.updateGroup({
      group: { uid: g.uid, name: "renamed", description: "ignored" },
      updateMask: { paths: ["name"] },
    });
    expect(b.name).toBe("renamed");
    expect(b.description).toBe("after");

    // An explicit mask clears a field to its default.
    const c = await client.updateGroup({ group: { uid: g.uid }, updateMask: { paths: ["description"] } });
    expect(c.description).toBe("");

    // "*" replaces every mutable field with the values given.
    const d = await client.updateGroup({
      group: { uid: g.uid, name: "full", verified: true },
      updateMask: { paths: ["*"] },
    });
    expect(d).toMatchObject({ name: "full", description: "", verified: true });
    expect(await client.getGroup({ uid: g.uid })).toEqual(d);
  });

  it("rejects output-only and unknown mask paths and bad values, writing nothing", async () => {
    const g = await client.createGroup({ group: { name: "masked" } });
    for (const paths of [["uid"], ["create_time"], ["nosuchfield"], ["resource_limits"]]) {
      const err = asConnectError(await expectRejectedAndUnchanged(t, () => client.updateGroup({ group: { uid: g.uid, name: "zzz" }, updateMask: { paths } })));
      expectErrorInfo(err, Code.InvalidArgument, "INVALID_ARGUMENT");
      expect(err.findDetails(BadRequestSchema)[0]?.fieldViolations[0]?.field).toBe("update_mask");
    }
    const err = asConnectError(await expectRejectedAndUnchanged(t, () => client.updateGroup({ group: { uid: g.uid, name: "NOPE" } })));
    expect(err.findDetails(BadRequestSchema)[0]?.fieldViolations[0]?.field).toBe("name");
    const missing = asConnectError(await client.updateGroup({ group: { uid: "c".repeat(40), name: "abc" } }).catch((e) => e));
    expectErrorInfo(missing, Code.NotFound, "NOT_FOUND");
  });

  it("refuses to delete a group with children (RESOURCE_NOT_EMPTY), then deletes leaves", async () => {
    const org = await client.createGroup({ group: { name: "del-org" } });
    const child = await client.createGroup({ parent: org.uid, group: { name: "del-child" } });
    const err = asConnectError(await expectRejectedAndUnchanged(t, () => client.deleteGroup({ uid: org.uid })));
    expectErrorInfo(err, Code.FailedPrecondition, "FAILED_PRECONDITION");
    expect(err.rawMessage).toBe("Precondition failed: cannot delete group with child groups");
    const pf = err.findDetails(PreconditionFailureSchema)[0];
    expect(pf?.violations[0]?.type).toBe("RESOURCE_NOT_EMPTY");
    expect(pf?.violations[0]?.description).toBe("cannot delete group with child groups");

    await client.deleteGroup({ uid: child.uid });
    await client.deleteGroup({ uid: org.uid });
    const gone = asConnectError(await client.getGroup({ uid: org.uid }).catch((e) => e));
    expect(gone.code).toBe(Code.NotFound);
    const again = asConnectError(await client.deleteGroup({ uid: org.uid }).catch((e) => e));
    expect(again.code).toBe(Code.NotFound);
  });

  it("rejects a request message over 1 MiB with RESOURCE_EXHAUSTED, writing nothing", async () => {
    const err = asConnectError(
      await expectRejectedAndUnchanged(t, () => client.createGroup({ group: { name: "big", description: "x".repeat(1024 * 1024 + 10) } })),
    );
    expect(err.code).toBe(Code.ResourceExhausted);
    // Raised by connect-node before our pipeline; on gRPC it still carries ErrorInfo (docs/published-api.md "Errors").
    if (transport.name.startsWith("grpc (")) expectErrorInfo(err, Code.ResourceExhausted, "RESOURCE_EXHAUSTED");
  });
});

describe.each(rpcTransports)("ListGroups over $name", (transport) => {
  let t: TestApp;
  let client: Client<typeof GroupsService>;
  let org: string;
  let teams: string[];
  let nested: string;
  let other: string;

  beforeAll(async () => {
    t = await startTestApp();
    client = createClient(GroupsService, transport.create(t.url));
    org = (await client.createGroup({ group: { name: "list-org" } })).uid;
    teams = [];
    for (const name of ["delta", "alpha", "charlie", "bravo", "echo"]) {
      teams.push((await client.createGroup({ parent: org, group: { name } })).uid);
    }
    nested = (await client.createGroup({ parent: teams[0], group: { name: "alpha" } })).uid;
    other = (await client.createGroup({ group: { name: "other-org" } })).uid;
  });
  afterAll(async () => {
    closeGrpcClients();
    await t.close();
  });

  it("filters by descendants_of, children_of, ancestors_of, in_root, ids and exact name", async () => {
    const uids = async (req: Parameters<typeof client.listGroups>[0]) => (await client.listGroups(req)).groups.map((g) => g.uid).sort();
    expect(await uids({ uidp: { descendantsOf: org } })).toEqual([...teams, nested].sort());
    expect(await uids({ uidp: { childrenOf: org } })).toEqual([...teams].sort());
    expect(await uids({ uidp: { ancestorsOf: nested } })).toEqual([org, teams[0]].sort());
    expect(await uids({ uidp: { inRoot: true } })).toEqual([org, other].sort());
    expect(await uids({ uidp: { ids: [other, nested] } })).toEqual([other, nested].sort());
    expect(await uids({ name: "alpha" })).toEqual([teams[1], nested].sort());
    expect(await uids({ name: "alpha", uidp: { childrenOf: org } })).toEqual([teams[1]]);
    expect(await uids({ name: "alph" })).toEqual([]);
    const res = await client.listGroups({ uidp: { descendantsOf: org } });
    expect(res.totalCount).toBe(6n);
    expect(res.skipped).toBe(0);
    expect(res.nextPageToken).toBe("");
  });

  it("pages in the requested order across pages with a stable tie-breaker", async () => {
    const seen: string[] = [];
    let pageToken = "";
    let pages = 0;
    do {
      const res = await client.listGroups({ uidp: { descendantsOf: org }, orderBy: "name desc", pageSize: 2, pageToken });
      expect(res.totalCount).toBe(6n);
      seen.push(...res.groups.map((g) => `${g.name} ${g.uid}`));
      pageToken = res.nextPageToken;
      pages++;
    } while (pageToken !== "" && pages < 10);
    expect(pages).toBe(3);
    const expected = [...seen].sort((a, b) => (a < b ? 1 : a > b ? -1 : 0));
    expect(seen).toEqual(expected);
    expect(new Set(seen).size).toBe(6);

    const byCreated = await client.listGroups({ uidp: { childrenOf: org }, orderBy: "created_at desc" });
    expect(byCreated.groups.map((g) => g.uid)).toEqual([...teams].reverse());
  });

  it("skips from the cursor and reports skipped; a re-sent skip is not applied twice", async () => {
    const all = (await client.listGroups({ uidp: { descendantsOf: org }, orderBy: "name" })).groups.map((g) => g.uid);
    const first = await client.listGroups({ uidp: { descendantsOf: org }, orderBy: "name", skip: 2, pageSize: 2 });
    expect(first.skipped).toBe(2);
    expect(first.groups.map((g) => g.uid)).toEqual(all.slice(2, 4));
    const second = await client.listGroups({
      uidp: { descendantsOf: org },
      orderBy: "name",
      skip: 2,
      pageSize: 2,
      pageToken: first.nextPageToken,
    });
    expect(second.groups.map((g) => g.uid)).toEqual(all.slice(4, 6));
    expect(second.skipped).toBe(2);
    expect(second.nextPageToken).toBe("");
    const beyond = await client.listGroups({ uidp: { descendantsOf: org }, skip: 100 });
    expect(beyond.groups).toEqual([]);
    expect(beyond.skipped).toBe(100);
    expect(beyond.nextPageToken).toBe("");
  });

  it("applies page_size defaults and caps", async () => {
    const res = await client.listGroups({ pageSize: 0 });
    expect(res.groups.length).toBe(8);
    const capped = await client.listGroups({ pageSize: 1_000_000 });
    expect(capped.groups.length).toBe(8);
  });

  it("rejects negative page_size and skip, bad order_by and bad uid filters", async () => {
    const cases: [Parameters<typeof client.listGroups>[0], string][] = [
      [{ pageSize: -1 }, "page_size"],
      [{ skip: -1 }, "skip"],
      [{ orderBy: "name; DROP TABLE groups" }, "order_by"],
      [{ orderBy: "secret_column" }, "order_by"],
      [{ orderBy: "name sideways" }, "order_by"],
      [{ orderBy: "name desc, uid" }, "order_by"],
      [{ uidp: { descendantsOf: "ABC" } }, "uidp.descendants_of"],
      [{ uidp: { childrenOf: `${org}/` } }, "uidp.children_of"],
      [{ uidp: { ids: ["%"] } }, "uidp.ids[0]"],
    ];
    for (const [req, field] of cases) {
      const err = asConnectError(await client.listGroups(req).catch((e) => e));
      expectErrorInfo(err, Code.InvalidArgument, "INVALID_ARGUMENT");
      expect(err.findDetails(BadRequestSchema)[0]?.fieldViolations[0]?.field).toBe(field);
    }
    const ok = await client.listGroups({ orderBy: "  NAME  " }).catch((e) => e);
    expect(asConnectError(ok).code).toBe(Code.InvalidArgument);
    expect((await client.listGroups({ orderBy: "update_time DESC" })).groups.length).toBe(8);
  });

  it("rejects tampered and foreign page tokens; restarts silently after 3 days", async () => {
    const first = await client.listGroups({ uidp: { descendantsOf: org }, pageSize: 2 });
    const token = first.nextPageToken;
    expect(token).not.toBe("");
    const flipped = token.slice(0, 20) + (token[20] === "A" ? "B" : "A") + token.slice(21);
    for (const pageToken of [flipped, token.slice(0, -4), "garbage"]) {
      const err = asConnectError(await client.listGroups({ uidp: { descendantsOf: org }, pageSize: 2, pageToken }).catch((e) => e));
      expect(err.code).toBe(Code.InvalidArgument);
      expect(err.findDetails(BadRequestSchema)[0]?.fieldViolations[0]?.field).toBe("page_token");
    }
    for (const changed of [{ name: "alpha" }, { orderBy: "name" }, { uidp: { childrenOf: org } }]) {
      const err = asConnectError(await client.listGroups({ uidp: { descendantsOf: org }, pageSize: 2, ...changed, pageToken: token }).catch((e) => e));
      expect(err.code).toBe(Code.InvalidArgument);
    }
    t.advanceClock(THREE_DAYS + 1000);
    // The default operator token lives 24 hours at most: one issued at the moved clock.
    setDefaultToken(t.url, await operatorToken(t.dataDir, undefined, () => Date.now() + THREE_DAYS + 1000));
    try {
      const restarted = await client.listGroups({ uidp: { descendantsOf: org }, pageSize: 2, pageToken: token });
      expect(restarted.groups).toEqual(first.groups);
    } finally {
      t.advanceClock(-(THREE_DAYS + 1000));
      setDefaultToken(t.url, t.token);
    }
  });
});

/**
 * `update_mask: "*"` means "every field this group lets an update change". A folder has no
 * kind of its own (it inherits the organization's), so `*` on a folder leaves kind alone
 * instead of failing on a field the caller never sent; naming kind explicitly on a folder is
 * still refused. On every door, REST included (`PATCH …?updateMask=*`).
 */
describe.each(callDoors)("UpdateGroup with update_mask * over $name", (door) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => {
    closeGrpcClients();
    await t.close();
  });
  const update = GroupsService.method.updateGroup;
  const get = GroupsService.method.getGroup;

  it("replaces a folder's mutable fields and leaves its inherited kind alone", async () => {
    const org = await door.call(t.url, t.token, GroupsService.method.createGroup, { group: { name: "acme", kind: OrgKind.CUSTOMER } });
    if (!org.ok) throw new Error(JSON.stringify(org));
    const folder = await door.call(t.url, t.token, GroupsService.method.createGroup, {
      parent: org.body.uid as string,
      group: { name: "team-a", description: "before" },
    });
    if (!folder.ok) throw new Error(JSON.stringify(folder));
    const uid = folder.body.uid as string;

    const out = await door.call(t.url, t.token, update, { group: { uid, name: "team-b" }, updateMask: { paths: ["*"] } });
    expect(out).toMatchObject({ ok: true, body: { uid, name: "team-b" } });
    // Full replacement: the description not sent is cleared.
    // (REST writes default values out; the RPC doors' JSON here leaves them out.)
    expect(out.ok && (out.body.description ?? "")).toBe("");
    expect(await door.call(t.url, t.token, get, { uid })).toEqual(out);

    // `*` on the organization still covers kind (replaced by the value sent: unspecified).
    const orgOut = await door.call(t.url, t.token, update, { group: { uid: org.body.uid as string, name: "acme2" }, updateMask: { paths: ["*"] } });
    expect(orgOut).toMatchObject({ ok: true, body: { name: "acme2" } });
    expect(orgOut.ok && (orgOut.body.kind ?? "ORG_KIND_UNSPECIFIED")).toBe("ORG_KIND_UNSPECIFIED");
  });

  it("leaves verified as stored when a customer's * does not send it; naming it is still operator-only", async () => {
    const org = await door.call(t.url, t.token, GroupsService.method.createGroup, { group: { name: "verified-org", verified: true } });
    if (!org.ok) throw new Error(JSON.stringify(org));
    const uid = org.body.uid as string;
    const owner = await createUserIdentity(t.dataDir, `owner-${door.name}`);
    const bound = await rest(t.url, "POST", `/iam/v2beta1/roleBindings/${uid}`, { identityUid: owner, roleUid: builtInRoleUid("owner") });
    expect(bound.status).toBe(200);
    const token = await identityToken(t.app, owner);

    const out = await door.call(t.url, token, update, { group: { uid, name: "renamed-org" }, updateMask: { paths: ["*"] } });
    expect(out).toMatchObject({ ok: true, body: { name: "renamed-org", verified: true } });

    const named = await door.call(t.url, token, update, { group: { uid, name: "x-org" }, updateMask: { paths: ["*", "verified"] } });
    expect(named).toMatchObject({ ok: false, code: Code.PermissionDenied });
  });

  it("still refuses kind named explicitly on a folder, writing nothing", async () => {
    const org = await door.call(t.url, t.token, GroupsService.method.createGroup, { group: { name: "kinded" } });
    if (!org.ok) throw new Error(JSON.stringify(org));
    const folder = await door.call(t.url, t.token, GroupsService.method.createGroup, { parent: org.body.uid as string, group: { name: "sub" } });
    if (!folder.ok) throw new Error(JSON.stringify(folder));
    const uid = folder.body.uid as string;
    const out = await expectRejectedAndUnchanged(t, async () => {
      const r = await door.call(t.url, t.token, update, { group: { uid, kind: OrgKind.CUSTOMER }, updateMask: { paths: ["kind"] } });
      if (r.ok) return r;
      throw r;
    });
    expect(out).toMatchObject({ ok: false, code: Code.InvalidArgument, reason: "INVALID_ARGUMENT" });
    expect((out as { message: string }).message).toContain("only an organization sets kind");
  });
});
