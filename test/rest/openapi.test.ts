/**
 * GET /openapi.json: an OpenAPI 3.1 document generated from the descriptors. It must be valid
 * against the OpenAPI schema, pass a real linter's recommended rules with no problem at all,
 * and be good enough for a client generator: a client generated from the served document
 * drives a folder-level group through Create, Get, List, Update and Delete on a real server.
 */
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { Validator } from "@seriousme/openapi-schema-validator";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "../support/app.js";

const run = promisify(execFile);
let t: TestApp;
let tmp: string;
// biome-ignore lint/suspicious/noExplicitAny: the document is inspected structurally
let doc: any;
let docFile: string;
beforeAll(async () => {
  t = await startTestApp();
  const res = await fetch(`${t.url}/openapi.json`);
  expect(res.status).toBe(200);
  doc = await res.json();
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-openapi-"));
  docFile = path.join(tmp, "openapi.json");
  fs.writeFileSync(docFile, JSON.stringify(doc));
});
afterAll(async () => {
  await t.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

type Operation = { operationId: string; summary?: string; description?: string; parameters: { name: string; in: string }[] };
const operations = (): [string, string, Operation][] =>
  Object.entries(doc.paths as Record<string, Record<string, Operation>>).flatMap(([p, ops]) =>
    Object.entries(ops).map(([m, op]) => [p, m, op] as [string, string, Operation]),
  );

describe("/openapi.json", () => {
  it("validates against the OpenAPI 3.1 schema", async () => {
    const result = await new Validator().validate(doc);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(doc.openapi).toBe("3.1.0");
  });

  it("passes `redocly lint` with its recommended rules: no errors and no warnings", async () => {
    const redocly = path.resolve("node_modules/.bin/redocly");
    // No telemetry or update check: CI may be offline, and nothing should leave the machine.
    const env = { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true", NO_COLOR: "1" };
    const out = await run(redocly, ["lint", "--extends", "recommended", "--format", "json", "--max-problems", "1000", docFile], { env, cwd: tmp }).catch(
      (err: { stdout: string; stderr: string }) => err,
    );
    const report = JSON.parse(out.stdout) as { problems: { ruleId: string; severity: string; message: string }[] };
    expect(report.problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message}`)).toEqual([]);
  }, 60_000);

  it("has one path per route shape: templates that differ only in variable names share one path and parameter name", () => {
    const shapes = Object.keys(doc.paths).map((p) => p.replace(/\{[^}]*\}/g, "{}"));
    expect(new Set(shapes).size).toBe(shapes.length);
    // GetGroup `{uid=**}`, CreateGroup `{parent=**}`, UpdateGroup `{group.uid=**}`.
    const groups = doc.paths["/iam/v2beta1/groups/{uid}"];
    expect(Object.keys(groups).sort()).toEqual(["delete", "get", "patch", "post"]);
    expect(groups.post.parameters[0]).toMatchObject({ name: "uid", in: "path", required: true });
    expect(groups.post.parameters[0].description).toContain("`parent`");
    expect(groups.patch.parameters[0].description).toContain("`group.uid`");
  });

  it("names this server, and gives every operation an operationId, a summary and the proto comment", () => {
    expect(doc.servers).toEqual([{ url: t.url, description: "this server" }]);
    const ops = operations();
    expect(new Set(ops.map(([, , op]) => op.operationId)).size).toBe(ops.length);
    for (const [p, m, op] of ops) {
      expect(op.summary, `${m} ${p}`).toMatch(/\S/);
    }
    const get = doc.paths["/iam/v2beta1/groups/{uid}"].get;
    expect(get).toMatchObject({
      operationId: "GroupsService_GetGroup",
      summary: "GetGroup returns one group by uid.",
      description: "GetGroup returns one group by uid. NOT_FOUND when it does not exist.",
    });
    expect(doc.paths["/iam/v2beta1/groups"].post.operationId).toMatch(/^GroupsService_CreateGroup/);
    expect(doc.tags.find((x: { name: string }) => x.name === "chainguard.platform.iam.v2beta1.GroupsService").description).toBe(
      "GroupsService manages the group tree.",
    );
    const group = doc.components.schemas["chainguard.platform.iam.v2beta1.Group"];
    expect(group.description).toMatch(/\S/);
    expect(group.properties.name.description).toMatch(/\S/);
  });

  it("covers every route of the route table, including the zero-segment create", () => {
    expect(doc.paths["/iam/v2beta1/groups"].get.operationId).toBe("GroupsService_ListGroups");
    expect(doc.paths["/iam/v2beta1/groups/{uid}"].patch.requestBody).toBeDefined();
    expect(doc.paths["/iam/v2beta1/groups:lookupGroup"].get).toBeDefined();
    // The GA twins: their own paths, the v2beta1 ids unchanged, theirs with the version.
    expect(doc.paths["/iam/v2/groups/{uid}"].get).toMatchObject({
      operationId: "GroupsService_GetGroup_v2",
      tags: ["chainguard.platform.iam.v2.GroupsService"],
    });
    expect(doc.paths["/iam/v2/groups"].get.operationId).toBe("GroupsService_ListGroups_v2");
    expect(doc.paths["/registry/v2/repos/{uid}/readme"].get.operationId).toBe("ReposService_GetRepoReadme_v2");
    expect(doc.paths["/vulnerabilities/v2/advisories"].get.operationId).toBe("AdvisoriesService_ListAdvisories_v2");
    expect(doc.paths["/sts/exchange"].get).toBeDefined();
    expect(doc.paths["/sts/exchange"].post).toBeDefined();
    const list = doc.paths["/iam/v2beta1/groups"].get.parameters.map((p: { name: string }) => p.name);
    expect(list).toEqual(expect.arrayContaining(["uidp.descendants_of", "uidp.ids", "name", "page_size", "page_token", "order_by", "skip"]));
  });

  it("describes resources in their JSON shape, and errors as google.rpc.Status", () => {
    const group = doc.components.schemas["chainguard.platform.iam.v2beta1.Group"];
    expect(group.properties.createTime).toMatchObject({ type: "string", format: "date-time", readOnly: true });
    expect(group.properties.resourceLimits.type).toBe("object");
    expect(group.required).toContain("name");
    const listResponse = doc.components.schemas["chainguard.platform.iam.v2beta1.ListGroupsResponse"];
    expect(listResponse.properties.totalCount).toMatchObject({ type: "string", format: "int64" });
    expect(doc.paths["/iam/v2beta1/groups/{uid}"].get.responses.default.$ref).toBe("#/components/responses/Error");
    expect(doc.components.responses.Error.content["application/json"].schema.$ref).toBe("#/components/schemas/google.rpc.Status");
  });
});

describe("a client generated from /openapi.json (swagger-typescript-api, fetch)", () => {
  // The generated module's surface, as far as this test uses it.
  type Res<T> = { data: T; error: unknown; status: number };
  type Group = { uid: string; name: string; description: string };
  interface Api {
    iam: {
      groupsServiceCreateGroup(uid: string, group: Partial<Group>): Promise<Res<Group>>;
      groupsServiceCreateGroup2(group: Partial<Group>): Promise<Res<Group>>;
      groupsServiceGetGroup(uid: string): Promise<Res<Group>>;
      groupsServiceListGroups(query: Record<string, unknown>): Promise<Res<{ groups: Group[]; totalCount: string }>>;
      groupsServiceUpdateGroup(uid: string, group: Partial<Group>, query?: Record<string, unknown>): Promise<Res<Group>>;
      groupsServiceDeleteGroup(uid: string): Promise<Res<object>>;
    };
  }
  let api: Api;
  let badRequest: (p: Promise<unknown>) => Promise<{ status: number; error: { code: number } }>;

  beforeAll(async () => {
    const { generateApi } = await import("swagger-typescript-api");
    const out = path.join(tmp, "client");
    // As JavaScript (the generator compiles its own TypeScript), loaded by Node as a module.
    await generateApi({ input: docFile, output: out, fileName: "api.ts", httpClientType: "fetch", toJS: true, silent: true });
    fs.writeFileSync(path.join(out, "package.json"), JSON.stringify({ type: "module" }));
    const mod = (await import(pathToFileURL(path.join(out, "api.js")).href)) as { Api: new (config: object) => Api };
    api = new mod.Api({ baseUrl: doc.servers[0].url, baseApiParams: { headers: { authorization: `Bearer ${t.token}` } } });
    // The generated client rejects with the Response (its `error` holds the parsed body) on a non-2xx.
    badRequest = (p) =>
      p.then(
        () => {
          throw new Error("expected an error answer");
        },
        (res: { status: number; error: { code: number } }) => res,
      );
  }, 60_000);

  it("creates, gets, lists, updates and deletes a folder, with its uid sent as is and percent-encoded", async () => {
    const org = (await api.iam.groupsServiceCreateGroup2({ name: "generated client org" })).data;
    expect(org.uid).toMatch(/^[0-9a-f]{40}$/);
    const folder = (await api.iam.groupsServiceCreateGroup(org.uid, { name: "generated folder", description: "made by a generated client" })).data;
    expect(folder.uid.startsWith(`${org.uid}/`)).toBe(true);

    // The generated code puts the path parameter in the URL as given; a client that encodes
    // path parameters sends the folder uid's '/' as %2F. Both reach the folder.
    for (const uid of [folder.uid, encodeURIComponent(folder.uid)]) {
      const got = await api.iam.groupsServiceGetGroup(uid);
      expect(got.status).toBe(200);
      expect(got.data).toMatchObject({ uid: folder.uid, name: "generated folder" });
    }
    expect(encodeURIComponent(folder.uid)).toContain("%2F");

    const listed = (await api.iam.groupsServiceListGroups({ "uidp.children_of": org.uid })).data;
    expect(listed.groups.map((g) => g.uid)).toEqual([folder.uid]);
    expect(listed.totalCount).toBe("1");

    const updated = (await api.iam.groupsServiceUpdateGroup(encodeURIComponent(folder.uid), { description: "updated" }, { update_mask: "description" })).data;
    expect(updated).toMatchObject({ uid: folder.uid, name: "generated folder", description: "updated" });

    // The organization still has the folder: the spec's FAILED_PRECONDITION, as a Status body.
    const refused = await badRequest(api.iam.groupsServiceDeleteGroup(org.uid));
    expect(refused).toMatchObject({ status: 400, error: { code: 9 } });

    expect((await api.iam.groupsServiceDeleteGroup(encodeURIComponent(folder.uid))).status).toBe(200);
    const gone = await badRequest(api.iam.groupsServiceGetGroup(folder.uid));
    expect(gone).toMatchObject({ status: 404, error: { code: 5 } });
    expect((await api.iam.groupsServiceDeleteGroup(org.uid)).status).toBe(200);
  });
});
