/**
 * Groups over REST/JSON exactly as the published API answers (docs/published-api.md "Update masks", "Errors"), plus the transcoding rules
 * (routing, binding, rendering) checked on the real protos. Every rejected request asserts
 * the database is unchanged.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "../support/app.js";
import { snapshotDb } from "../support/db.js";
import { type RestResponse, rest } from "../support/rest.js";

let t: TestApp;
const call = (method: string, path: string, body?: unknown, headers?: Record<string, string>) => rest(t.url, method, path, body, headers);

/** Runs a request that must be rejected; asserts status, gRPC code and an unchanged DB. */
async function rejected(status: number, code: number, method: string, path: string, body?: unknown, headers?: Record<string, string>) {
  const before = await snapshotDb(t);
  const res = await call(method, path, body, headers);
  expect({ status: res.status, code: res.body?.code }, `${method} ${path}`).toEqual({ status, code });
  expect(res.headers.get("content-type")).toBe("application/json");
  expect(res.body.details[0]["@type"]).toBe("type.googleapis.com/google.rpc.ErrorInfo");
  expect(await snapshotDb(t)).toBe(before);
  return res;
}

function violationField(res: RestResponse): string | undefined {
  return res.body.details.find((d: { "@type": string }) => d["@type"].endsWith("BadRequest"))?.fieldViolations?.[0]?.field;
}

const MS_TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t.close());

describe("the spec's REST examples", () => {
  it("Create group with an empty body → the spec's 400 body, byte for byte", async () => {
    const res = await rejected(400, 3, "POST", "/iam/v2beta1/groups", {});
    expect(res.body).toEqual({
      code: 3,
      message: 'Invalid argument: name: name must match "^[a-z0-9 ._-]{1,}$"',
      details: [
        { "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "INVALID_ARGUMENT", domain: "iam.chainguard.dev" },
        {
          "@type": "type.googleapis.com/google.rpc.BadRequest",
          fieldViolations: [{ field: "name", description: 'name must match "^[a-z0-9 ._-]{1,}$"' }],
        },
      ],
    });
    // Really empty (no body at all) is the same.
    const none = await rejected(400, 3, "POST", "/iam/v2beta1/groups");
    expect(none.body.message).toBe(res.body.message);
  });

  it("creates, gets, patches (with and without updateMask) and deletes", async () => {
    const org = await call("POST", "/iam/v2beta1/groups", { name: "acme", description: "the org" });
    expect(org.status).toBe(200);
    expect(org.body).toEqual({
      uid: expect.stringMatching(/^[0-9a-f]{40}$/),
      name: "acme",
      description: "the org",
      resourceLimits: {},
      verified: false,
      createTime: expect.stringMatching(MS_TIMESTAMP),
      updateTime: expect.stringMatching(MS_TIMESTAMP),
    });
    const uid = org.body.uid as string;
    const child = await call("POST", `/iam/v2beta1/groups/${uid}`, { name: "team" });
    expect(child.body.uid).toMatch(new RegExp(`^${uid}/[0-9a-f]{16}$`));
    expect((await call("GET", `/iam/v2beta1/groups/${child.body.uid}`)).body).toEqual(child.body);

    // Rule 5: without updateMask only the fields present change; "" is a change.
    const p1 = await call("PATCH", `/iam/v2beta1/groups/${uid}`, { description: "" });
    expect(p1.status).toBe(200);
    expect(p1.body).toMatchObject({ name: "acme", description: "" });
    // Rule 6: with updateMask only the masked fields change; the rest of the body is ignored.
    const p2 = await call("PATCH", `/iam/v2beta1/groups/${uid}?updateMask=description`, { name: "ignored", description: "masked" });
    expect(p2.body).toMatchObject({ name: "acme", description: "masked" });
    const p3 = await call("PATCH", `/iam/v2beta1/groups/${uid}?update_mask=name,description`, { name: "renamed" });
    expect(p3.body).toMatchObject({ name: "renamed", description: "" });
    // Echoing output-only fields from a GET is harmless without a mask.
    const p4 = await call("PATCH", `/iam/v2beta1/groups/${uid}`, { ...p3.body, description: "echoed" });
    expect(p4.status).toBe(200);
    expect(p4.body.description).toBe("echoed");
    expect(p4.body.createTime).toBe(org.body.createTime);

    const del = await call("DELETE", `/iam/v2beta1/groups/${child.body.uid}`);
    expect({ status: del.status, body: del.body }).toEqual({ status: 200, body: {} });
    await rejected(404, 5, "GET", `/iam/v2beta1/groups/${child.body.uid}`);
  });

  it("Delete a group that still has children → the spec's precondition body", async () => {
    const org = (await call("POST", "/iam/v2beta1/groups", { name: "parent org" })).body.uid;
    await call("POST", `/iam/v2beta1/groups/${org}`, { name: "kid" });
    const res = await rejected(400, 9, "DELETE", `/iam/v2beta1/groups/${org}`);
    expect(res.body).toEqual({
      code: 9,
      message: "Precondition failed: cannot delete group with child groups",
      details: [
        {
          "@type": "type.googleapis.com/google.rpc.ErrorInfo",
          reason: "FAILED_PRECONDITION",
          domain: "iam.chainguard.dev",
          metadata: { child_kind: "groups" },
        },
        {
          "@type": "type.googleapis.com/google.rpc.PreconditionFailure",
          violations: [{ type: "RESOURCE_NOT_EMPTY", subject: org, description: "cannot delete group with child groups" }],
        },
      ],
    });
  });

  it("lists with order_by=name%20desc, page_size, page_token and skip", async () => {
    const org = (await call("POST", "/iam/v2beta1/groups", { name: "list org" })).body.uid;
    for (const name of ["bravo", "alpha", "delta", "charlie"]) await call("POST", `/iam/v2beta1/groups/${org}`, { name });
    const first = await call("GET", `/iam/v2beta1/groups?uidp.descendants_of=${org}&order_by=name%20desc&page_size=3`);
    expect(first.status).toBe(200);
    expect(first.body.groups.map((g: { name: string }) => g.name)).toEqual(["delta", "charlie", "bravo"]);
    expect(first.body.totalCount).toBe("4");
    expect(first.body.skipped).toBe(0);
    const second = await call("GET", `/iam/v2beta1/groups?uidp.descendantsOf=${org}&orderBy=name%20desc&pageSize=3&pageToken=${first.body.nextPageToken}`);
    expect(second.body.groups.map((g: { name: string }) => g.name)).toEqual(["alpha"]);
    expect(second.body.nextPageToken).toBe("");
    const skipped = await call("GET", `/iam/v2beta1/groups?uidp.children_of=${org}&order_by=name&skip=2`);
    expect(skipped.body.skipped).toBe(2);
    expect(skipped.body.groups.map((g: { name: string }) => g.name)).toEqual(["charlie", "delta"]);
    const named = await call("GET", `/iam/v2beta1/groups?name=alpha`);
    expect(named.body.groups.map((g: { name: string }) => g.name)).toEqual(["alpha"]);
    const ids = await call("GET", `/iam/v2beta1/groups?uidp.ids=${org}&uidp.ids=${first.body.groups[0].uid}`);
    expect(ids.body.groups).toHaveLength(2);
    const roots = await call("GET", "/iam/v2beta1/groups?uidp.in_root=true");
    expect(roots.body.groups.every((g: { uid: string }) => !g.uid.includes("/"))).toBe(true);
  });

  it("serves the v1 lists: {items} with id", async () => {
    const org = (await call("POST", "/iam/v2beta1/groups", { name: "v1 view" })).body.uid;
    const v1 = await call("GET", `/iam/v1/groups?id=${org}`);
    expect(v1.body).toEqual({
      items: [{ id: org, name: "v1 view", description: "", resourceLimits: { clusters: 0, idps: 0, repositories: 0 }, verified: false }],
    });
    expect((await call("GET", "/registry/v1/repos")).body).toEqual({ items: [] });
  });
});

describe("routing from the google.api.http rules", () => {
  /** The method a request reached, read from the UNIMPLEMENTED answer of unbuilt methods. */
  async function reached(method: string, path: string, body?: unknown, headers?: Record<string, string>) {
    const res = await call(method, path, body, headers);
    expect(res.status, `${method} ${path}`).toBe(501);
    return res.body.details[0].metadata.method as string;
  }
  const uid = "a".repeat(40);

  it("prefers literal segments and registered verbs over wildcards", async () => {
    // The caller methods are built (test/auth/caller-methods.test.ts): each answers in its own
    // way for the operator, which a `{uid=**}` wildcard (GetGroup) never would.
    const lookup = await call("GET", "/iam/v2beta1/groups:lookupGroup");
    expect(lookup.status).toBe(404);
    expect(lookup.body.message).toContain("no verified organization matches");
    expect(await call("GET", "/iam/v2beta1/groups:checkEligibility")).toMatchObject({ status: 200, body: { eligible: false } });
    // BatchCreate is built: an empty batch is refused by BatchCreate's own check on `requests`,
    // which CreateRoleBinding (the `{parent=**}` wildcard) has no field for.
    const batch = await call("POST", "/iam/v2beta1/roleBindings:batchCreate", { parent: uid });
    expect(batch.status).toBe(400);
    const violations = batch.body.details.find((d: { "@type": string }) => d["@type"].endsWith("BadRequest"));
    expect(violations.fieldViolations.map((v: { field: string }) => v.field)).toContain("requests");
    // GetRepoReadme is built: the `/readme` route answers a README, never GetRepo's repo.
    const org = (await call("POST", "/iam/v2beta1/groups", { name: "readme route" })).body.uid;
    const made = (await call("POST", `/registry/v2beta1/repos/${org}`, { name: "routed" })).body.uid;
    expect(await call("GET", `/registry/v2beta1/repos/${made}/readme`)).toMatchObject({ status: 200, body: { uid: made, content: "" } });
    // A literal tail beats the `{repo_id=**}` of the repo routes (GetSize answers UNIMPLEMENTED).
    expect(await reached("GET", `/registry/v1/repos/${uid}/0123456789abcdef/digests/sha256:${"a".repeat(64)}/size`)).toBe(
      "chainguard.platform.registry.Registry/GetSize",
    );
    // GetRepo is built: the wildcard route reaches it and it answers "no such repo", not "no route".
    const repo = await call("GET", `/registry/v2beta1/repos/${uid}/0123456789abcdef`);
    expect(repo.status).toBe(404);
    expect(repo.body.message).not.toContain("no route");
    expect(repo.body.message).toContain(`${uid}/0123456789abcdef`);
    const access = await call("POST", `/iam/v2beta1/groups/${uid}:requestGroupAccess`, {});
    expect(access.status).toBe(404);
    expect(access.body.details[0].metadata).toEqual({ resource_type: "group", resource_name: uid });
  });

  it("binds additional bindings and form-encoded POSTs (the STS exchange)", async () => {
    // Exchange is built (test/auth/exchange.test.ts): its own audience check answers, which
    // shows the request reached it with `aud` bound from the query or the form body.
    const reachedExchange = async (method: string, path: string, body?: unknown, headers?: Record<string, string>) => {
      const res = await call(method, path, body, headers);
      expect(res.status, `${method} ${path}`).toBe(400);
      expect(res.body.message).toMatch(/^Invalid argument: aud: "[^"]+" is not an audience this issuer serves/);
    };
    await reachedExchange("GET", "/sts/exchange?aud=https://api.example&identity=x");
    await reachedExchange("POST", "/sts/exchange?aud=x");
    await reachedExchange("POST", "/sts/exchange", "aud=a&aud=b&identity=x", { "content-type": "application/x-www-form-urlencoded" });
    await rejected(400, 3, "POST", "/sts/exchange", { aud: ["x"] }); // that rule takes no JSON body
  });

  it("answers 404 and 405 (with Allow) in the Status form", async () => {
    const nf = await rejected(404, 5, "GET", "/iam/v2beta1/nothing");
    expect(nf.body.message).toContain("no route");
    const na = await rejected(405, 12, "PUT", `/iam/v2beta1/groups/${uid}`, {});
    expect(na.headers.get("allow")).toBe("DELETE, GET, PATCH, POST");
    expect(na.body.details[0].reason).toBe("METHOD_NOT_ALLOWED");
  });

  it("leaves non-REST paths to the Connect door", async () => {
    const res = await call("POST", "/chainguard.platform.iam.v2beta1.GroupsService/ListGroups", {});
    expect(res.status).toBe(200);
    expect(res.body.groups).toBeInstanceOf(Array);
  });
});

describe("bad REST input is INVALID_ARGUMENT (or RESOURCE_EXHAUSTED) and writes nothing", () => {
  const cases: [string, number, number, string, string, unknown?, Record<string, string>?, string?][] = [
    ["unknown JSON field", 400, 3, "POST", "/iam/v2beta1/groups", { name: "okay", nmae: "x" }, undefined, "nmae"],
    ["wrong JSON type", 400, 3, "POST", "/iam/v2beta1/groups", { name: 5 }, undefined, "name"],
    ["not JSON", 400, 3, "POST", "/iam/v2beta1/groups", '{"name":', undefined, "body"],
    ["a JSON array", 400, 3, "POST", "/iam/v2beta1/groups", "[]", undefined, "body"],
    ["lone surrogate", 400, 3, "POST", "/iam/v2beta1/groups", '{"name":"ok\\ud800"}', undefined, undefined],
    ["text/plain body", 400, 3, "POST", "/iam/v2beta1/groups", '{"name":"okay"}', { "content-type": "text/plain" }, "body"],
    ["unknown query parameter", 400, 3, "GET", "/iam/v2beta1/groups?nmae=x", undefined, undefined, "nmae"],
    // Not a binding error: credentials in the URL are refused before binding (test/auth).
    ["token in the query string", 401, 16, "GET", "/iam/v2beta1/groups?access_token=secret", undefined, undefined, undefined],
    ["page_size not a number", 400, 3, "GET", "/iam/v2beta1/groups?page_size=abc", undefined, undefined, "page_size"],
    ["page_size 1e3", 400, 3, "GET", "/iam/v2beta1/groups?page_size=1e3", undefined, undefined, "page_size"],
    ["page_size overflow", 400, 3, "GET", "/iam/v2beta1/groups?page_size=3000000000", undefined, undefined, "page_size"],
    ["page_size twice", 400, 3, "GET", "/iam/v2beta1/groups?page_size=1&page_size=2", undefined, undefined, "page_size"],
    ["negative page_size", 400, 3, "GET", "/iam/v2beta1/groups?page_size=-1", undefined, undefined, "page_size"],
    ["bad bool", 400, 3, "GET", "/iam/v2beta1/groups?uidp.in_root=yes", undefined, undefined, "uidp.in_root"],
    ["message as a leaf", 400, 3, "GET", "/iam/v2beta1/groups?uidp=x", undefined, undefined, "uidp"],
    ["bad order_by", 400, 3, "GET", "/iam/v2beta1/groups?order_by=name%3B%20DROP%20TABLE%20groups", undefined, undefined, "order_by"],
    ["tampered page token", 400, 3, "GET", `/iam/v2beta1/groups?page_token=${"A".repeat(60)}`, undefined, undefined, "page_token"],
    ["bad enum", 400, 3, "GET", "/iam/v2beta1/identities?relationship_type=CLAIM", undefined, undefined, "relationship_type"],
    ["bad timestamp", 400, 3, "GET", "/registry/v2beta1/tags?updated_since=yesterday", undefined, undefined, "updated_since"],
    ["query names a path field", 400, 3, "GET", `/iam/v2beta1/groups/${"a".repeat(40)}?uid=${"b".repeat(40)}`, undefined, undefined, "uid"],
    ["query names a body field", 400, 3, "POST", "/iam/v2beta1/groups?group.name=x", { name: "okay" }, undefined, "group.name"],
    ["query with body *", 400, 3, "POST", "/iam/v2beta1/roleBindings:batchCreate?parent=x", {}, undefined, "parent"],
    ["body uid contradicts the path", 400, 3, "PATCH", `/iam/v2beta1/groups/${"a".repeat(40)}`, { uid: "b".repeat(40) }, undefined, "group.uid"],
    ["body on a GET", 400, 3, "GET", "/iam/v2beta1/groups", { name: "x" }, { "x-test-raw": "1" }, "body"],
    ["empty path segment", 400, 3, "GET", "/iam/v2beta1/groups//x", undefined, undefined, "path"],
    ["dot segment", 400, 3, "GET", `/iam/v2beta1/groups/${"a".repeat(40)}/..`, undefined, { "x-test-raw": "1" }, "uid"],
    ["malformed escape", 400, 3, "GET", "/iam/v2beta1/groups/%zz", undefined, undefined, "path"],
    ["uppercase uid", 400, 3, "GET", `/iam/v2beta1/groups/${"A".repeat(40)}`, undefined, undefined, "uid"],
    ["unknown mask path", 400, 3, "PATCH", `/iam/v2beta1/groups/${"a".repeat(40)}?updateMask=nosuch`, { name: "abc" }, undefined, "update_mask"],
    ["output-only mask path", 400, 3, "PATCH", `/iam/v2beta1/groups/${"a".repeat(40)}?updateMask=createTime`, { name: "abc" }, undefined, "update_mask"],
  ];
  for (const [name, status, code, method, path, body, headers, field] of cases) {
    it(`${name}: ${method} ${path}`, async () => {
      const res = await rejected(status, code, method, path, body, headers);
      if (field) expect(violationField(res)).toBe(field);
    });
  }

  it("a body over 1 MiB is RESOURCE_EXHAUSTED, with its status (429)", async () => {
    const res = await rejected(429, 8, "POST", "/iam/v2beta1/groups", { name: "big", description: "x".repeat(1024 * 1024 + 1) });
    expect(res.body.message).toContain("exceeds");
  });

  it("a folder uid with its '/' percent-encoded as %2F (as generated clients send it) reaches the same group", async () => {
    const org = await call("POST", "/iam/v2beta1/groups", { name: "encoded org" });
    const folder = await call("POST", `/iam/v2beta1/groups/${org.body.uid}`, { name: "encoded folder" });
    const encoded = encodeURIComponent(folder.body.uid);
    expect(encoded).toContain("%2F");
    const got = await call("GET", `/iam/v2beta1/groups/${encoded}`);
    expect(got.status).toBe(200);
    expect(got.body.uid).toBe(folder.body.uid);
    const patched = await call("PATCH", `/iam/v2beta1/groups/${encoded.replace("%2F", "%2f")}?updateMask=description`, { description: "via %2f" });
    expect(patched.body).toMatchObject({ uid: folder.body.uid, description: "via %2f" });
  });

  it("a decoded %2F cannot smuggle '..', '.' or an empty segment into a uid", async () => {
    const org = await call("POST", "/iam/v2beta1/groups", { name: "traversal org" });
    for (const tail of ["%2F..", "%2F.", `%2F%2E%2E%2F${"b".repeat(16)}`, `%2F%2F${"b".repeat(16)}`, "%2F"]) {
      const res = await rejected(400, 3, "GET", `/iam/v2beta1/groups/${org.body.uid}${tail}`);
      expect(violationField(res)).toBe("uid");
    }
  });
});

describe("every route in the protos answers", () => {
  it("reaches its method: 2xx, an API error, or UNIMPLEMENTED in the AIP-193 form — never 'no route' or a crash", async () => {
    const { createRouteTable } = await import("../../src/transcode/route-table.js");
    const { apiServices } = await import("../../src/server/routes.js");
    const services = apiServices({ store: {} } as never).map((s) => s.service);
    const table = createRouteTable(services);
    expect(table.routes.length).toBeGreaterThan(60);
    const uid = `${"c".repeat(40)}/${"d".repeat(16)}`;
    for (const route of table.routes) {
      const t0 = route.template;
      let lastVar: number | undefined;
      const segs: string[] = [];
      for (const p of t0.parts) {
        if (p.variable !== undefined) {
          if (p.variable === lastVar) continue;
          lastVar = p.variable;
          segs.push(t0.variables[p.variable]?.multiSegment ? uid : "x1");
        } else {
          lastVar = undefined;
          segs.push(p.kind === "literal" ? (p.value as string) : "x1");
        }
      }
      const path = `/${segs.join("/")}${t0.verb ? `:${t0.verb}` : ""}`;
      const res = await call(route.httpMethod, path, route.body === "" ? undefined : {});
      const where = `${route.httpMethod} ${path} (${route.method.name})`;
      expect(res.status === 404 && String(res.body?.message).includes("no route"), where).toBe(false);
      expect(res.status === 405 || (res.status >= 500 && res.status !== 501), `${where}: ${res.status}`).toBe(false);
      if (res.status !== 200) {
        expect(res.body.details[0]["@type"], where).toBe("type.googleapis.com/google.rpc.ErrorInfo");
        if (res.status === 501) expect(res.body.details[0].metadata.method, where).toBe(`${route.method.parent.typeName}/${route.method.name}`);
      }
    }
  });
});
