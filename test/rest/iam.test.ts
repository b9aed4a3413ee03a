/**
 * The IAM resources from curl's side: identities, roles and role bindings created, read,
 * listed, patched and deleted over REST/JSON with the paths of the published HTTP rules, and
 * the hostile cases answered as AIP-193 Status bodies without writing anything; violations name
 * fields relative to the JSON body, as docs/published-api.md "Errors" does for CreateGroup (`name`). (The RPC
 * protocols run the same scenarios in test/rpc/; identity providers, account associations and
 * group invites have their REST checks in their own files there.)
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { builtInRoleUid } from "../../src/store/builtin-roles.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { expectRejectedAndUnchanged } from "../support/db.js";
import { type RestResponse, rest } from "../support/rest.js";

let t: TestApp;
const call = (method: string, path: string, body?: unknown) => rest(t.url, method, path, body);

/** Sends a request that must fail with `status`/`code` naming `fields`, leaving the database as it was. */
async function rejected(status: number, code: number, fields: string[], method: string, path: string, body?: unknown) {
  const res = (await expectRejectedAndUnchanged(t, async () => {
    const r = await call(method, path, body);
    if (r.status < 400) throw new Error(`expected a failure, got ${r.status}`);
    throw r;
  })) as RestResponse;
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.body.code).toBe(code);
  expect(res.body.details[0]["@type"]).toBe("type.googleapis.com/google.rpc.ErrorInfo");
  if (fields.length > 0) {
    const bad = res.body.details.find((d: { "@type": string }) => d["@type"].endsWith("google.rpc.BadRequest"));
    expect(bad.fieldViolations.map((v: { field: string }) => v.field).sort()).toEqual([...fields].sort());
  }
  return res;
}

let org: string;
let folder: string;
let otherOrg: string;

beforeAll(async () => {
  t = await startTestApp();
  org = (await call("POST", "/iam/v2beta1/groups", { name: "acme" })).body.uid;
  folder = (await call("POST", `/iam/v2beta1/groups/${org}`, { name: "platform" })).body.uid;
  otherOrg = (await call("POST", "/iam/v2beta1/groups", { name: "globex" })).body.uid;
});
afterAll(async () => {
  await t.close();
});

describe("identities over REST", () => {
  it("creates, reads, lists, patches and deletes an assumable identity", async () => {
    const created = await call("POST", `/iam/v2beta1/identities/${folder}`, {
      name: "ci deployer",
      claimMatch: { issuer: "https://token.actions.githubusercontent.com", subjectPattern: "repo:acme/.*:ref:refs/heads/main" },
    });
    expect(created.status).toBe(200);
    expect(created.body.uid.startsWith(`${folder}/`)).toBe(true);
    expect((await call("GET", `/iam/v2beta1/identities/${created.body.uid}`)).body.name).toBe("ci deployer");

    const listed = await call("GET", `/iam/v2beta1/identities?uidp.descendants_of=${org}&name=ci%20deployer`);
    expect(listed.body.identities.map((i: { uid: string }) => i.uid)).toEqual([created.body.uid]);

    const patched = await call("PATCH", `/iam/v2beta1/identities/${created.body.uid}`, { description: "deploys main" });
    expect(patched.body).toMatchObject({ name: "ci deployer", description: "deploys main" });
    expect(patched.body.claimMatch.subjectPattern).toBe("repo:acme/.*:ref:refs/heads/main");

    expect((await call("DELETE", `/iam/v2beta1/identities/${created.body.uid}`)).body).toEqual({});
    await rejected(404, 5, [], "GET", `/iam/v2beta1/identities/${created.body.uid}`);
  });

  it("refuses a missing name, an unsafe pattern and no identity kind, writing nothing", async () => {
    await rejected(400, 3, ["name"], "POST", `/iam/v2beta1/identities/${folder}`, {
      claimMatch: { issuer: "https://issuer.example", subject: "x" },
    });
    await rejected(400, 3, ["claim_match.subject_pattern"], "POST", `/iam/v2beta1/identities/${folder}`, {
      name: "bad pattern",
      claimMatch: { issuer: "https://issuer.example", subjectPattern: "(a" },
    });
    const none = await rejected(400, 3, [], "POST", `/iam/v2beta1/identities/${folder}`, { name: "no kind" });
    expect(none.body.message).toMatch(/identity/i);
  });
});

describe("roles over REST", () => {
  it("lists the built-in roles with no parameters", async () => {
    const res = await call("GET", "/iam/v2beta1/roles");
    expect(res.status).toBe(200);
    const names = res.body.roles.map((r: { name: string }) => r.name);
    for (const name of ["viewer", "editor", "owner", "registry.pull", "registry.push"]) expect(names).toContain(name);
    const viewer = res.body.roles.find((r: { name: string }) => r.name === "viewer");
    expect(viewer.uid).toBe(builtInRoleUid("viewer"));
    expect(viewer.capabilities).toContain("CAP_IAM_GROUPS_LIST");
  });

  it("creates a custom role, patches it, and refuses to touch a built-in one", async () => {
    const created = await call("POST", `/iam/v2beta1/roles/${org}`, { name: "auditor", capabilities: ["CAP_IAM_GROUPS_LIST", "CAP_REPO_LIST"] });
    expect(created.status).toBe(200);
    expect(created.body.capabilities).toEqual(["CAP_IAM_GROUPS_LIST", "CAP_REPO_LIST"]);
    const patched = await call("PATCH", `/iam/v2beta1/roles/${created.body.uid}`, { description: "reads everything" });
    expect(patched.body).toMatchObject({ name: "auditor", description: "reads everything", capabilities: ["CAP_IAM_GROUPS_LIST", "CAP_REPO_LIST"] });
    const scoped = await call("GET", `/iam/v2beta1/roles?uidp.children_of=${org}`);
    expect(scoped.body.roles.map((r: { name: string }) => r.name)).toEqual(["auditor"]);

    const builtIn = await rejected(400, 9, [], "DELETE", `/iam/v2beta1/roles/${builtInRoleUid("viewer")}`);
    expect(builtIn.body.details[0].reason).toBe("FAILED_PRECONDITION");
    await rejected(400, 9, [], "PATCH", `/iam/v2beta1/roles/${builtInRoleUid("viewer")}`, { description: "mine now" });
  });

  it("refuses an unknown capability and an empty list, writing nothing", async () => {
    await rejected(400, 3, ["capabilities"], "POST", `/iam/v2beta1/roles/${org}`, { name: "nothing", capabilities: [] });
    // An enum name the API does not have fails in JSON decoding, before the service runs.
    const unknown = await rejected(400, 3, [], "POST", `/iam/v2beta1/roles/${org}`, { name: "made up", capabilities: ["CAP_MADE_UP"] });
    expect(unknown.body.message).toContain("capabilities");
  });
});

describe("role bindings over REST", () => {
  it("binds, hydrates, filters, batch-creates and unbinds", async () => {
    const identity = (await call("POST", `/iam/v2beta1/identities/${org}`, { name: "bot", claimMatch: { issuer: "https://issuer.example", subject: "bot" } }))
      .body.uid;
    const second = (
      await call("POST", `/iam/v2beta1/identities/${org}`, { name: "bot two", claimMatch: { issuer: "https://issuer.example", subject: "bot2" } })
    ).body.uid;
    const viewer = builtInRoleUid("viewer");

    const bound = await call("POST", `/iam/v2beta1/roleBindings/${folder}`, { identityUid: identity, roleUid: viewer });
    expect(bound.status).toBe(200);
    expect(bound.body.identity).toMatchObject({ uid: identity, name: "bot", subject: "bot", issuer: "https://issuer.example" });
    expect(bound.body.group).toMatchObject({ uid: folder, name: "platform" });
    expect(bound.body.role).toMatchObject({ uid: viewer, name: "viewer" });

    const byIdentity = await call("GET", `/iam/v2beta1/roleBindings?identity=${identity}`);
    expect(byIdentity.body.roleBindings.map((b: { uid: string }) => b.uid)).toEqual([bound.body.uid]);

    const batch = await call("POST", "/iam/v2beta1/roleBindings:batchCreate", {
      parent: org,
      roleUid: builtInRoleUid("editor"),
      requests: [{ roleBinding: { identityUid: identity } }, { roleBinding: { identityUid: second } }],
    });
    expect(batch.status, JSON.stringify(batch.body)).toBe(200);
    expect(batch.body.roleBindings).toHaveLength(2);
    const inOrg = await call("GET", `/iam/v2beta1/roleBindings?uidp.children_of=${org}`);
    expect(inOrg.body.roleBindings).toHaveLength(2);

    expect((await call("DELETE", `/iam/v2beta1/roleBindings/${bound.body.uid}`)).body).toEqual({});
    expect((await call("GET", `/iam/v2beta1/roleBindings?identity=${identity}`)).body.roleBindings).toHaveLength(1);
  });

  it("refuses duplicates, dangling and cross-organization references, writing nothing", async () => {
    const identity = (
      await call("POST", `/iam/v2beta1/identities/${org}`, { name: "dup bot", claimMatch: { issuer: "https://issuer.example", subject: "dup" } })
    ).body.uid;
    const viewer = builtInRoleUid("viewer");
    expect((await call("POST", `/iam/v2beta1/roleBindings/${org}`, { identityUid: identity, roleUid: viewer })).status).toBe(200);

    const dup = await rejected(409, 6, [], "POST", `/iam/v2beta1/roleBindings/${org}`, { identityUid: identity, roleUid: viewer });
    expect(dup.body.details[0].reason).toBe("ALREADY_EXISTS");
    await rejected(400, 3, ["identity_uid"], "POST", `/iam/v2beta1/roleBindings/${org}`, {
      identityUid: `${org}/0123456789abcdef`,
      roleUid: viewer,
    });
    // An identity of one organization cannot be bound in another.
    await rejected(400, 3, ["identity_uid"], "POST", `/iam/v2beta1/roleBindings/${otherOrg}`, { identityUid: identity, roleUid: viewer });
    // A batch with one bad member writes none of them.
    await rejected(400, 3, ["requests[1].role_binding.identity_uid"], "POST", "/iam/v2beta1/roleBindings:batchCreate", {
      parent: folder,
      roleUid: viewer,
      requests: [{ roleBinding: { identityUid: identity } }, { roleBinding: { identityUid: `${otherOrg}/0123456789abcdef` } }],
    });
  });
});
