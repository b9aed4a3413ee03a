/** The v1 endpoints kept alongside v2, over every RPC protocol, on the same data. */
import { type Client, type ConnectError, createClient } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Groups } from "../../gen/chainguard/platform/iam/groups_v1_pb.js";
import { GroupsService } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { Registry } from "../../gen/chainguard/platform/registry/registry_v1_pb.js";
import { BadRequestSchema, ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { expectRejectedAndUnchanged } from "../support/db.js";
import { closeGrpcClients, Code, rpcTransports } from "../support/transports.js";

describe.each(rpcTransports)("v1 over $name", (transport) => {
  let t: TestApp;
  let v1: Client<typeof Groups>;
  let v2: Client<typeof GroupsService>;
  let registry: Client<typeof Registry>;

  beforeAll(async () => {
    t = await startTestApp();
    const tr = transport.create(t.url);
    v1 = createClient(Groups, tr);
    v2 = createClient(GroupsService, tr);
    registry = createClient(Registry, tr);
  });
  afterAll(async () => {
    closeGrpcClients();
    await t.close();
  });

  it("lists v2 groups in the v1 shape: items, id, v1 resource limits, no paging", async () => {
    const org = await v2.createGroup({ group: { name: "v1 org", description: "d", verified: true } });
    const child = await v2.createGroup({ parent: org.uid, group: { name: "v1 child" } });
    const all = await v1.list({});
    const mine = all.items.find((g) => g.id === org.uid);
    expect(mine).toMatchObject({
      id: org.uid,
      name: "v1 org",
      description: "d",
      verified: true,
      resourceLimits: { clusters: 0, idps: 0, repositories: 0 },
    });
    expect((await v1.list({ id: child.uid })).items.map((g) => g.id)).toEqual([child.uid]);
    expect((await v1.list({ uidp: { childrenOf: org.uid } })).items.map((g) => g.id)).toEqual([child.uid]);
    expect((await v1.list({ name: "v1 child" })).items.map((g) => g.id)).toEqual([child.uid]);
    // v1 answers an unknown id with an empty list, not NOT_FOUND.
    expect((await v1.list({ id: "d".repeat(40) })).items).toEqual([]);
  });

  it("creates, replaces (PUT) and deletes through v1, visible through v2", async () => {
    const g = await v1.create({ group: { name: "made in v1", description: "keep?" } });
    expect(g.id).toMatch(/^[0-9a-f]{40}$/);
    const replaced = await v1.update({ id: g.id, name: "renamed in v1" });
    expect(replaced).toMatchObject({ name: "renamed in v1", description: "" }); // omitted fields reset
    expect((await v2.getGroup({ uid: g.id })).name).toBe("renamed in v1");
    await v1.delete({ id: g.id });
    const err = (await v2.getGroup({ uid: g.id }).catch((e: unknown) => e)) as ConnectError;
    expect(err.code).toBe(Code.NotFound);
  });

  it("validates like v2 and writes nothing on bad input", async () => {
    for (const call of [() => v1.create({ group: { name: "Nope" } }), () => v1.list({ id: "not-a-uid" }), () => v1.update({ id: "e".repeat(40), name: "x" })]) {
      const err = (await expectRejectedAndUnchanged(t, call)) as ConnectError;
      expect(err.code).toBe(Code.InvalidArgument);
      expect(err.findDetails(ErrorInfoSchema)[0]?.reason).toBe("INVALID_ARGUMENT");
      expect(err.findDetails(BadRequestSchema)[0]?.fieldViolations.length).toBeGreaterThan(0);
    }
  });

  it("lists repos in the v1 shape (none in a fresh database)", async () => {
    expect((await registry.listRepos({})).items).toEqual([]);
  });
});
