/**
 * AccountAssociations end to end over every RPC protocol (and a REST pass): one association per
 * group (uid = group uid), provider-block validation, block and leaf update masks, idempotent
 * delete, and list filters/orders. Every hostile case asserts the error details and an unchanged
 * database.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { type Client, ConnectError, createClient } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type AccountAssociationSchema,
  AccountAssociationsService,
  AccountProviderType,
} from "../../gen/chainguard/platform/iam/v2beta1/account_associations_pb.js";
import { GroupsService } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { BadRequestSchema, ErrorInfoSchema, PreconditionFailureSchema } from "../../gen/google/rpc/error_details_pb.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { expectRejectedAndUnchanged } from "../support/db.js";
import { rest } from "../support/rest.js";
import { closeGrpcClients, Code, rpcTransports } from "../support/transports.js";

type AssociationInit = MessageInitShape<typeof AccountAssociationSchema>;

const TENANT = "12345678-1234-1234-1234-123456789012";
const CLIENT = "11111111-1111-1111-1111-111111111111";
const IDENTITY = `${"a".repeat(40)}/${"b".repeat(16)}`;

const FULL: AssociationInit = {
  name: "cloud accounts",
  description: "all of them",
  amazon: { account: "123456789012" },
  google: { projectId: "acme-prod", projectNumber: "213411233" },
  chainguard: { serviceBindings: { INGESTER: IDENTITY } },
  azure: { tenantId: TENANT, clientIds: { client1: CLIENT } },
  github: { appInstallations: { "42": { installations: [{ installationId: 7n, name: "acme-bot" }] } } },
};

describe.each(rpcTransports)("AccountAssociationsService over $name", (transport) => {
  let t: TestApp;
  let client: Client<typeof AccountAssociationsService>;
  let groupsClient: Client<typeof GroupsService>;

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

  const newGroup = async (name: string, parent = "") => (await groupsClient.createGroup({ parent, group: { name } })).uid;

  beforeAll(async () => {
    t = await startTestApp();
    const transportInstance = transport.create(t.url);
    client = createClient(AccountAssociationsService, transportInstance);
    groupsClient = createClient(GroupsService, transportInstance);
  });
  afterAll(async () => {
    closeGrpcClients();
    await t.close();
  });

  it("creates the group's one association, its uid being the group's", async () => {
    const org = await newGroup("aa org");
    const aa = await client.createAccountAssociation({ parent: org, accountAssociation: FULL });
    expect(aa.uid).toBe(org);
    expect(aa).toMatchObject({
      name: "cloud accounts",
      description: "all of them",
      amazon: { account: "123456789012" },
      google: { projectId: "acme-prod", projectNumber: "213411233" },
      chainguard: { serviceBindings: { INGESTER: IDENTITY } },
      azure: { tenantId: TENANT, clientIds: { client1: CLIENT } },
    });
    expect(aa.github?.appInstallations["42"]?.installations).toMatchObject([{ installationId: 7n, name: "acme-bot" }]);
    expect(aa.updateTime).toEqual(aa.createTime);
    expect(await client.getAccountAssociation({ uid: org })).toEqual(aa);

    const err = await rejects(() => client.createAccountAssociation({ parent: org, accountAssociation: { name: "second one" } }), Code.AlreadyExists);
    expect(err.rawMessage).toContain("already has an account association");

    const minimal = await client.createAccountAssociation({ parent: await newGroup("aa bare"), accountAssociation: { name: "bare" } });
    expect([minimal.amazon, minimal.google, minimal.chainguard, minimal.azure, minimal.github]).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
  });

  it("rejects missing fields, a bad or missing parent and malformed provider blocks, writing nothing", async () => {
    const g = await newGroup("aa hostile");
    const create = (accountAssociation: AssociationInit, parent = g) => client.createAccountAssociation({ parent, accountAssociation });
    await rejects(() => client.createAccountAssociation({ parent: g }), Code.InvalidArgument, "name");
    await rejects(() => create({ name: "x" }), Code.InvalidArgument, "name");
    await rejects(() => create({ name: "ok name" }, "nope"), Code.InvalidArgument, "parent");
    await rejects(() => create({ name: "ok name" }, ""), Code.InvalidArgument, "parent");
    await rejects(() => create({ name: "ok name" }, "c".repeat(40)), Code.NotFound);
    const cases: [AssociationInit, string][] = [
      [{ amazon: { account: "" } }, "amazon.account"],
      [{ amazon: { account: "1122334455" } }, "amazon.account"],
      [{ amazon: { account: "12345678901a" } }, "amazon.account"],
      [{ google: { projectNumber: "1" } }, "google.project_id"],
      [{ google: { projectId: "p" } }, "google.project_number"],
      [{ google: { projectId: "p", projectNumber: "12a" } }, "google.project_number"],
      [{ azure: { tenantId: "tenant", clientIds: { c: CLIENT } } }, "azure.tenant_id"],
      [{ azure: { tenantId: TENANT } }, "azure.client_ids"],
      [{ azure: { tenantId: TENANT, clientIds: { c: "not-a-uuid" } } }, "azure.client_ids"],
      [{ chainguard: {} }, "chainguard.service_bindings"],
      [{ chainguard: { serviceBindings: { INGESTER: "../x" } } }, "chainguard.service_bindings"],
      [{ github: { appInstallations: { "1": { installations: [{ installationId: 0n }] } } } }, "github.app_installations"],
      [{ github: { appInstallations: { "1": { installations: [{ installationId: -5n }] } } } }, "github.app_installations"],
    ];
    for (const [blocks, field] of cases) {
      await rejects(() => create({ name: "bad block", ...blocks }), Code.InvalidArgument, field);
    }
  });

  it("updates set fields without a mask, merging a partial block into the stored one", async () => {
    const g = await newGroup("aa update");
    await client.createAccountAssociation({ parent: g, accountAssociation: FULL });
    const a = await client.updateAccountAssociation({
      accountAssociation: { uid: g, description: "changed", google: { projectId: "acme-stage" } },
    });
    expect(a.name).toBe("cloud accounts");
    expect(a.description).toBe("changed");
    expect(a.google).toMatchObject({ projectId: "acme-stage", projectNumber: "213411233" });
    expect(a.amazon?.account).toBe("123456789012");
    expect(await client.getAccountAssociation({ uid: g })).toEqual(a);
  });

  it("replaces or clears a whole block by its mask path, and sets leaf paths", async () => {
    const g = await newGroup("aa masks");
    await client.createAccountAssociation({ parent: g, accountAssociation: FULL });
    const a = await client.updateAccountAssociation({
      accountAssociation: { uid: g, name: "ignored", azure: { tenantId: TENANT, clientIds: { other: CLIENT } } },
      updateMask: { paths: ["amazon", "azure"] },
    });
    expect(a.name).toBe("cloud accounts");
    expect(a.amazon).toBeUndefined();
    expect(a.azure?.clientIds).toEqual({ other: CLIENT });
    const b = await client.updateAccountAssociation({
      accountAssociation: { uid: g, amazon: { account: "210987654321" }, google: { projectId: "ignored", projectNumber: "99" } },
      updateMask: { paths: ["amazon.account", "google.project_number"] },
    });
    expect(b.amazon?.account).toBe("210987654321");
    expect(b.google).toMatchObject({ projectId: "acme-prod", projectNumber: "99" });
    const c = await client.updateAccountAssociation({ accountAssociation: { uid: g }, updateMask: { paths: ["github", "description"] } });
    expect(c.github).toBeUndefined();
    expect(c.description).toBe("");
  });

  it("rejects invalid updates and mask paths, writing nothing", async () => {
    const g = await newGroup("aa upd hostile");
    await client.createAccountAssociation({ parent: g, accountAssociation: FULL });
    const update = (accountAssociation: AssociationInit, paths?: string[]) =>
      client.updateAccountAssociation({ accountAssociation: { uid: g, ...accountAssociation }, updateMask: paths && { paths } });
    for (const paths of [["uid"], ["create_time"], ["nope"], ["amazon.nope"], ["github.app_installations.1"]]) {
      await rejects(() => update({ name: "zzz" }, paths), Code.InvalidArgument, "update_mask");
    }
    await rejects(() => update({ name: "NO" }), Code.InvalidArgument, "name");
    await rejects(() => update({ amazon: { account: "1" } }), Code.InvalidArgument, "amazon.account");
    await rejects(() => update({}, ["google.project_id"]), Code.InvalidArgument, "google.project_id");
    await rejects(() => update({ google: { projectId: "only-id" } }, ["google"]), Code.InvalidArgument, "google.project_number");
    await rejects(() => update({}, ["chainguard.service_bindings"]), Code.InvalidArgument, "chainguard.service_bindings");
    await rejects(() => client.updateAccountAssociation({ accountAssociation: { uid: "9".repeat(40), name: "abc" } }), Code.NotFound);
    await rejects(() => client.updateAccountAssociation({}), Code.InvalidArgument, "account_association");
  });

  it("deletes idempotently, and blocks deleting a group that has one", async () => {
    const g = await newGroup("aa delete");
    await client.createAccountAssociation({ parent: g, accountAssociation: { name: "to delete" } });
    const blocked = await rejects(() => groupsClient.deleteGroup({ uid: g }), Code.FailedPrecondition);
    expect(blocked.findDetails(PreconditionFailureSchema)[0]?.violations[0]?.description).toBe("cannot delete group with child account associations");
    await client.deleteAccountAssociation({ uid: g });
    await rejects(() => client.getAccountAssociation({ uid: g }), Code.NotFound);
    await client.deleteAccountAssociation({ uid: g });
    await client.deleteAccountAssociation({ uid: "8".repeat(40) });
    await rejects(() => client.deleteAccountAssociation({ uid: "bad" }), Code.InvalidArgument, "uid");
    await groupsClient.deleteGroup({ uid: g });
  });

  it("lists by the group hierarchy and exact name, ordered by group by default", async () => {
    const root = await newGroup("aa list root");
    const mid = await newGroup("aa list mid", root);
    const leaf = await newGroup("aa list leaf", mid);
    const side = await newGroup("aa list side", root);
    for (const [uid, name] of [
      [root, "zulu"],
      [mid, "yankee"],
      [leaf, "xray"],
      [side, "whiskey"],
    ] as const) {
      await client.createAccountAssociation({ parent: uid, accountAssociation: { name } });
    }
    const uids = async (req: Parameters<typeof client.listAccountAssociations>[0]) =>
      (await client.listAccountAssociations(req)).accountAssociations.map((a) => a.uid);
    expect(await uids({ uidp: { descendantsOf: root } })).toEqual([mid, leaf, side].sort());
    expect(await uids({ uidp: { childrenOf: root } })).toEqual([mid, side].sort());
    expect(await uids({ uidp: { childrenOf: mid } })).toEqual([leaf]);
    expect(await uids({ uidp: { ancestorsOf: leaf } })).toEqual([root, mid].sort());
    expect(await uids({ uidp: { inRoot: true }, name: "zulu" })).toEqual([root]);
    expect(await uids({ uidp: { ids: [leaf, root] } })).toEqual([root, leaf].sort());
    expect(await uids({ uidp: { descendantsOf: root }, name: "xray" })).toEqual([leaf]);
    expect(await uids({ uidp: { descendantsOf: root }, orderBy: "group desc" })).toEqual([mid, leaf, side].sort().reverse());
    expect(await uids({ uidp: { descendantsOf: root }, orderBy: "uid" })).toEqual([mid, leaf, side].sort());
    const byName = await client.listAccountAssociations({ uidp: { descendantsOf: root }, orderBy: "name", pageSize: 2 });
    expect(byName.accountAssociations.map((a) => a.name)).toEqual(["whiskey", "xray"]);
    expect(byName.totalCount).toBe(3n);
    const next = await client.listAccountAssociations({
      uidp: { descendantsOf: root },
      orderBy: "name",
      pageSize: 2,
      pageToken: byName.nextPageToken,
    });
    expect(next.accountAssociations.map((a) => a.name)).toEqual(["yankee"]);
    expect(next.nextPageToken).toBe("");
    expect(await uids({ uidp: { descendantsOf: root }, orderBy: "created_at desc" })).toHaveLength(3);
    await rejects(() => client.listAccountAssociations({ orderBy: "update_time" }), Code.InvalidArgument, "order_by");
  });

  it("answers UNIMPLEMENTED for CheckAccountAssociation, saying it needs the cloud provider", async () => {
    const err = await rejects(() => client.checkAccountAssociation({ uid: "7".repeat(40), providerType: AccountProviderType.AMAZON }), Code.Unimplemented);
    expect(err.rawMessage).toContain("needs a call to the cloud provider");
    const info = err.findDetails(ErrorInfoSchema)[0];
    expect(info?.metadata.method).toBe("chainguard.platform.iam.v2beta1.AccountAssociationsService/CheckAccountAssociation");
    expect(info?.metadata.needs).toContain("cloud provider");
  });
});

describe("AccountAssociations over REST", () => {
  let t: TestApp;
  afterAll(async () => t.close());

  it("CheckAccountAssociation is HTTP 501 saying it needs the cloud provider", async () => {
    t ??= await startTestApp();
    const r = await rest(t.url, "POST", `/iam/v2beta1/accountAssociations/${"7".repeat(40)}:checkAccountAssociation`, {
      providerType: "ACCOUNT_PROVIDER_TYPE_AMAZON",
    });
    expect(r.status).toBe(501);
    expect(r.body.code).toBe(12);
    expect(r.body.details[0]).toMatchObject({ reason: "UNIMPLEMENTED", metadata: { needs: expect.stringContaining("cloud provider") } });
  });

  it("round-trips every provider block as JSON and merges a PATCH body's leaf keys", async () => {
    t ??= await startTestApp();
    const org = (await rest(t.url, "POST", "/iam/v2beta1/groups", { name: "rest org" })).body.uid as string;
    const body = {
      name: "rest accounts",
      amazon: { account: "123456789012" },
      google: { projectId: "acme-prod", projectNumber: "213411233" },
      github: { appInstallations: { "42": { installations: [{ installationId: "7", name: "acme-bot" }] } } },
    };
    const created = await rest(t.url, "POST", `/iam/v2beta1/accountAssociations/${org}`, body);
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({ uid: org, ...body });
    const patched = await rest(t.url, "PATCH", `/iam/v2beta1/accountAssociations/${org}`, { google: { projectNumber: "99" } });
    expect(patched.body.google).toEqual({ projectId: "acme-prod", projectNumber: "99" });
    const dup = await rest(t.url, "POST", `/iam/v2beta1/accountAssociations/${org}`, { name: "again" });
    expect([dup.status, dup.body.code]).toEqual([409, 6]);
    expect((await rest(t.url, "DELETE", `/iam/v2beta1/accountAssociations/${org}`)).status).toBe(200);
    expect((await rest(t.url, "DELETE", `/iam/v2beta1/accountAssociations/${org}`)).status).toBe(200);
  });
});
