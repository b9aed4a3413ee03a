/** GET /openapi.json: an OpenAPI 3.1 document generated from the descriptors, valid against the OpenAPI schema. */
import { Validator } from "@seriousme/openapi-schema-validator";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "../support/app.js";

let t: TestApp;
// biome-ignore lint/suspicious/noExplicitAny: the document is inspected structurally
let doc: any;
beforeAll(async () => {
  t = await startTestApp();
  const res = await fetch(`${t.url}/openapi.json`);
  expect(res.status).toBe(200);
  doc = await res.json();
});
afterAll(async () => t.close());

describe("/openapi.json", () => {
  it("validates against the OpenAPI 3.1 schema", async () => {
    const result = await new Validator().validate(doc);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(doc.openapi).toBe("3.1.0");
  });

  it("covers every route of the route table, including the zero-segment create", () => {
    expect(doc.paths["/iam/v2beta1/groups"].get.operationId).toBe("GroupsService_ListGroups");
    expect(doc.paths["/iam/v2beta1/groups"].post.operationId).toMatch(/^GroupsService_CreateGroup/);
    expect(doc.paths["/iam/v2beta1/groups/{uid}"].get.operationId).toBe("GroupsService_GetGroup");
    expect(doc.paths["/iam/v2beta1/groups/{group.uid}"].patch.requestBody).toBeDefined();
    expect(doc.paths["/iam/v2beta1/groups:lookupGroup"].get).toBeDefined();
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
    expect(doc.paths["/iam/v2beta1/groups/{uid}"].get.responses.default.content["application/json"].schema.$ref).toBe(
      "#/components/schemas/google.rpc.Status",
    );
  });
});
