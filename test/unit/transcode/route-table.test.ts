/**
 * createRouteTable: matching on the test ItemService (precedence, zero-length `**`, verbs,
 * percent-decoding, 404/405, malformed paths) and the start-up errors (synthetic services).
 */
import { describe, expect, it } from "vitest";
import { ApiError } from "../../../src/errors/api-error.js";
import { readHttpRules } from "../../../src/transcode/http-rule.js";
import { createRouteTable } from "../../../src/transcode/route-table.js";
import { Registry } from "../../../gen/chainguard/platform/registry/registry_v1_pb.js";
import { ItemService } from "../../gen/trellis/testing/v1/items_pb.js";
import { syntheticService } from "./synthetic-service.js";

const table = createRouteTable([ItemService]);

type Want = { rpc: string; vars?: Record<string, string> } | { status: 404 } | { status: 405; allow: string[] } | { status: 400; field: string };

function outcome(httpMethod: string, path: string): Want {
  try {
    const m = table.match(httpMethod, path);
    if (m.kind === "match") return { rpc: m.route.method.name, vars: m.vars };
    if (m.kind === "notFound") return { status: 404 };
    return { status: 405, allow: [...m.allow] };
  } catch (err) {
    if (err instanceof ApiError && err.code === 3) return { status: 400, field: err.fieldViolations[0]?.field as string };
    throw err;
  }
}

describe("RouteTable.match", () => {
  const cases: [string, string, Want][] = [
    // Literals beat wildcards; a route ending here beats a zero-length `**`.
    ["GET", "/v1/items", { rpc: "ListItems", vars: {} }],
    ["GET", "/v1/items/", { rpc: "ListItems", vars: {} }],
    ["GET", "/v1/items/a1/b2", { rpc: "GetItem", vars: { uid: "a1/b2" } }],
    // `**` matches zero segments when the literal route lacks the method.
    ["POST", "/v1/items", { rpc: "CreateItem", vars: { parent: "" } }],
    ["POST", "/v1/items/", { rpc: "CreateItem", vars: { parent: "" } }],
    ["POST", "/v1/items/p1/p2", { rpc: "CreateItem", vars: { parent: "p1/p2" } }],
    ["PATCH", "/v1/items/a/b", { rpc: "UpdateItem", vars: { "item.uid": "a/b" } }],
    ["DELETE", "/v1/items/a", { rpc: "DeleteItem", vars: { uid: "a" } }],
    // Verbs: registered ones split; unregistered colons stay in the value.
    ["GET", "/v1/items:count", { rpc: "CountItems", vars: {} }],
    ["GET", "/v1/items/a1:labels", { rpc: "GetLabels", vars: { uid: "a1" } }],
    ["GET", "/v1/items/a/b:labels", { rpc: "GetLabels", vars: { uid: "a/b" } }],
    ["GET", "/v1/items/user:123", { rpc: "GetItem", vars: { uid: "user:123" } }],
    ["GET", "/v1/items/a:count", { rpc: "GetItem", vars: { uid: "a:count" } }],
    ["GET", "/v1/items/abc:archive", { rpc: "GetItem", vars: { uid: "abc:archive" } }],
    ["POST", "/v1/items/i9:archive", { rpc: "ArchiveItem", vars: { name: "items/i9" } }],
    ["SEARCH", "/v1/items:search", { rpc: "SearchItems", vars: {} }],
    ["GET", "/v1/items/a%3Alabels", { rpc: "GetItem", vars: { uid: "a:labels" } }],
    // Additional binding, single-segment variables.
    ["GET", "/v1/owners/o1/items/i1", { rpc: "GetItem", vars: { owner: "o1", uid: "i1" } }],
    // Literal suffixes after `**` win; `**` takes the fewest segments that let them match.
    ["GET", "/v1/items/a/b/readme", { rpc: "GetItemReadme", vars: { uid: "a/b" } }],
    ["GET", "/v1/items/readme", { rpc: "GetItemReadme", vars: { uid: "" } }],
    ["GET", "/v1/items/a/parts/p1", { rpc: "GetPart", vars: { item_uid: "a", part_id: "p1" } }],
    ["GET", "/v1/items/x/parts/y/parts/z", { rpc: "GetPart", vars: { item_uid: "x/parts/y", part_id: "z" } }],
    ["GET", "/v1/items/a/parts", { rpc: "GetItem", vars: { uid: "a/parts" } }],
    ["GET", "/v1/exchange", { rpc: "Exchange", vars: {} }],
    ["POST", "/v1/exchange", { rpc: "Exchange", vars: {} }],
    // Decoding: raw routing, per-variable decoding.
    // %2F inside a ** variable is a '/' of the value (clients that encode path parameters),
    // decided after routing: it never reaches another route, and its segments are checked.
    ["GET", "/v1/items/a%2Fb", { rpc: "GetItem", vars: { uid: "a/b" } }],
    ["GET", "/v1/items/a%2fb/c%20d", { rpc: "GetItem", vars: { uid: "a/b/c d" } }],
    ["GET", "/v1/items/a%2Freadme", { rpc: "GetItem", vars: { uid: "a/readme" } }],
    ["GET", "/v1/items/a%2Fparts%2Fp1", { rpc: "GetItem", vars: { uid: "a/parts/p1" } }],
    ["GET", "/v1/items/a%2F..%2Fb", { status: 400, field: "uid" }],
    ["GET", "/v1/items/a%2F%2e", { status: 400, field: "uid" }],
    ["GET", "/v1/items/a%2F%2Fb", { status: 400, field: "uid" }],
    ["GET", "/v1/items/%2Fa", { status: 400, field: "uid" }],
    ["GET", "/v1/items/a%2F", { status: 400, field: "uid" }],
    ["GET", "/v1/owners/o%2Fx/items/i1", { rpc: "GetItem", vars: { owner: "o/x", uid: "i1" } }],
    ["GET", "/v1/items/caf%C3%A9", { rpc: "GetItem", vars: { uid: "café" } }],
    ["GET", "/v1/items/a+b", { rpc: "GetItem", vars: { uid: "a+b" } }],
    ["GET", "/v1/%69tems", { rpc: "ListItems", vars: {} }],
    // 405 lists every method whose template matched the path.
    ["PUT", "/v1/items/a1", { status: 405, allow: ["DELETE", "GET", "PATCH", "POST"] }],
    ["HEAD", "/v1/owners/o/items/i", { status: 405, allow: ["GET"] }],
    ["POST", "/v1/items:count", { status: 405, allow: ["GET"] }],
    ["OPTIONS", "/v1/exchange", { status: 405, allow: ["GET", "POST"] }],
    ["GET", "/v1/items:search", { status: 405, allow: ["SEARCH"] }],
    // 404
    ["GET", "/v1/nothing", { status: 404 }],
    ["GET", "/v1", { status: 404 }],
    ["GET", "/v1/owners/o1/items", { status: 404 }],
    ["GET", "/v1/owners/o1/items/i1/extra", { status: 404 }],
    ["GET", "/v1/exchange/x", { status: 404 }],
    ["GET", "/", { status: 404 }],
    // Malformed paths and captured values.
    ["GET", "/v1/items//x", { status: 400, field: "path" }],
    ["GET", "/v1/items//", { status: 400, field: "path" }],
    ["GET", "/v1/items/%zz", { status: 400, field: "path" }],
    ["GET", "/v1/items/a%2", { status: 400, field: "path" }],
    ["GET", "/v1/items/a/../b", { status: 400, field: "uid" }],
    ["GET", "/v1/items/./a", { status: 400, field: "uid" }],
    ["GET", "/v1/items/a/%2E%2E", { status: 400, field: "uid" }],
    ["GET", "/v1/owners/%FF/items/i", { status: 400, field: "owner" }],
  ];
  for (const [method, path, want] of cases) {
    it(`${method} ${path}`, () => {
      expect(outcome(method, path)).toEqual(want);
    });
  }
});

describe("the published v1 Registry templates", () => {
  // Literals and `*` variables after a `**` variable, verbs right after `**`, and routes that
  // share a prefix with the repo CRUD routes: each path reaches its own method.
  const registry = createRouteTable([Registry]);
  const R = "aaaa/bbbb";
  const cases: [string, string, Want][] = [
    ["GET", `/registry/v1/repos/${R}/digests/sha256:ab/size`, { rpc: "GetSize", vars: { repo_id: R, digest: "sha256:ab" } }],
    ["GET", `/registry/v1/repos/${R}/digests/sha256%3Aab/sbom`, { rpc: "GetSbom", vars: { repo_id: R, digest: "sha256:ab" } }],
    ["GET", `/registry/v1/repos/${R}/digest/d1/rawsbom`, { rpc: "GetRawSbom", vars: { repo_id: R, digest: "d1" } }],
    ["GET", "/registry/v1/repos/x/digests/y/digests/d/architectures", { rpc: "GetArchs", vars: { repo_id: "x/digests/y", digest: "d" } }],
    ["GET", `/registry/v1/repos/${R}:updatestatus`, { rpc: "GetUpdateStatus", vars: { repo_id: R } }],
    ["GET", "/registry/v1/repos/aaaa:syncstatus", { rpc: "GetSyncStatus", vars: { repo_id: "aaaa" } }],
    ["GET", `/registry/v1/repos/${R}/manifestmetdata`, { rpc: "ListManifestMetadata", vars: { repo_id: R } }],
    ["GET", `/registry/v1/repos/${R}/chart-image-bindings`, { rpc: "ListChartsByImageRepo", vars: { repo_id: R } }],
    ["POST", `/registry/v1/repos/${R}/deployment`, { rpc: "CreateDeployment", vars: { parent_id: R } }],
    ["PUT", `/registry/v1/repos/${R}/deployment`, { rpc: "UpdateDeployment", vars: { repo_id: R } }],
    ["GET", `/registry/v1/repos/${R}/deployment`, { rpc: "GetDeployment", vars: { repo_id: R } }],
    ["POST", `/registry/v1/repos/${R}`, { rpc: "CreateRepo", vars: { parent_id: R } }],
    ["PUT", `/registry/v1/repos/${R}`, { rpc: "UpdateRepo", vars: { id: R } }],
    ["DELETE", `/registry/v1/repos/${R}`, { rpc: "DeleteRepo", vars: { id: R } }],
    ["GET", "/registry/v1/repos", { rpc: "ListRepos", vars: {} }],
    ["GET", `/registry/v1/tags/${R}/history`, { rpc: "ListTagHistory", vars: { parent_id: R } }],
    ["PUT", `/registry/v1/tags/${R}`, { rpc: "UpdateTag", vars: { id: R } }],
    ["GET", "/registry/v1/versions/py3/flask", { rpc: "GetPackageVersionMetadata", vars: { package: "py3/flask" } }],
    ["GET", `/registry/v1/settings/${R}`, { rpc: "GetRegistrySettings", vars: { registry_id: R } }],
    ["PUT", `/registry/v1/settings/${R}`, { rpc: "UpdateRegistrySettings", vars: { registry_id: R } }],
    ["GET", `/registry/v1/repotagssummary/${R}`, { rpc: "GetRepoTagsSummary", vars: { repo_id: R } }],
    ["GET", `/registry/v1/repocountbysource/${R}`, { rpc: "GetRepoCountBySource", vars: { id: R } }],
    ["GET", `/registry/v1/digestcount/${R}`, { rpc: "GetManifestDigestCount", vars: { parent_id: R } }],
    // A repo itself has no GET in v1: 405 naming the repo routes, as before.
    ["GET", `/registry/v1/repos/${R}`, { status: 405, allow: ["DELETE", "POST", "PUT"] }],
    // A verb no rule registers stays part of the id.
    ["PUT", `/registry/v1/repos/${R}:other`, { rpc: "UpdateRepo", vars: { id: `${R}:other` } }],
  ];
  for (const [method, path, want] of cases) {
    it(`${method} ${path}`, () => {
      const m = registry.match(method, path);
      const got: Want =
        m.kind === "match" ? { rpc: m.route.method.name, vars: m.vars } : m.kind === "notFound" ? { status: 404 } : { status: 405, allow: [...m.allow] };
      expect(got).toEqual(want);
    });
  }
});

describe("RouteTable.handles", () => {
  const cases: [string, boolean][] = [
    ["/v1/items", true],
    ["/v1", true],
    ["/v1/whatever/else", true],
    ["/%76%31/items", true],
    ["/v2/items", false],
    ["/trellis.testing.v1.ItemService/GetItem", false],
    ["/", false],
    ["*", false],
    ["", false],
  ];
  for (const [path, want] of cases) {
    it(`${JSON.stringify(path)} → ${want}`, () => {
      expect(table.handles(path)).toBe(want);
    });
  }

  it("sees a verb on the first segment", () => {
    const t = createRouteTable([
      syntheticService([
        { name: "Count", input: "CountItemsRequest", output: "CountItemsResponse", rule: { pattern: { case: "get", value: "/things:count" } } },
      ]),
    ]);
    expect(t.handles("/things:count")).toBe(true);
    expect(t.handles("/things")).toBe(true);
    expect(t.handles("/other:count")).toBe(false);
  });
});

describe("readHttpRules", () => {
  it("flattens every rule and additional binding of the test service, in order", () => {
    const specs = readHttpRules([ItemService]).map((s) => `${s.method.name} ${s.verb} ${s.template} body=${s.body} response=${s.responseBody}`);
    expect(specs).toEqual([
      "GetItem GET /v1/items/{uid=**} body= response=",
      "GetItem GET /v1/owners/{owner}/items/{uid} body= response=",
      "ListItems GET /v1/items body= response=",
      "CreateItem POST /v1/items/{parent=**} body=item response=",
      "UpdateItem PATCH /v1/items/{item.uid=**} body=item response=",
      "DeleteItem DELETE /v1/items/{uid=**} body= response=",
      "ArchiveItem POST /v1/{name=items/*}:archive body=* response=",
      "CountItems GET /v1/items:count body= response=",
      "GetLabels GET /v1/items/{uid=**}:labels body= response=labels",
      "GetItemReadme GET /v1/items/{uid=**}/readme body= response=",
      "GetPart GET /v1/items/{item_uid=**}/parts/{part_id} body= response=",
      "SearchItems SEARCH /v1/items:search body=* response=",
      "Exchange POST /v1/exchange body= response=",
      "Exchange GET /v1/exchange body= response=",
    ]);
  });

  it("skips streaming methods and methods without a rule; upper-cases custom kinds", () => {
    const service = syntheticService([
      { name: "Watch", serverStreaming: true, rule: { pattern: { case: "get", value: "/v1/watch" } } },
      { name: "Plain" },
      { name: "Lower", rule: { pattern: { case: "custom", value: { kind: "search", path: "/v1/find" } } } },
    ]);
    expect(readHttpRules([service]).map((s) => `${s.method.name} ${s.verb} ${s.template}`)).toEqual(["Lower SEARCH /v1/find"]);
  });
});

describe("createRouteTable refuses to start", () => {
  const get = (path: string) => ({ pattern: { case: "get" as const, value: path } });
  const cases: [string, Parameters<typeof syntheticService>[0], RegExp][] = [
    ["a rule without a pattern", [{ name: "A", rule: { body: "*" } }], /Synthetic\.A: a google\.api\.http rule has no pattern/],
    [
      "custom kind '*'",
      [{ name: "A", rule: { pattern: { case: "custom", value: { kind: "*", path: "/v1/a" } } } }],
      /custom HTTP method "\*" is not supported/,
    ],
    [
      "nested additional bindings",
      [{ name: "A", rule: { ...get("/v1/a/{uid}"), additionalBindings: [{ ...get("/v1/b/{uid}"), additionalBindings: [get("/v1/c/{uid}")] }] } }],
      /\.A \(GET \/v1\/b\/\{uid\}\): an additional binding may not have additional_bindings/,
    ],
    ["a bad template", [{ name: "A", rule: get("/v1/items/{uid") }], /\.A \(GET \/v1\/items\/\{uid\): invalid path template .*unclosed variable/],
    ["a template starting with a variable", [{ name: "A", rule: get("/{uid=**}") }], /must start with a literal segment/],
    ["an unknown variable field", [{ name: "A", rule: get("/v1/{nope}") }], /variable nope: trellis\.testing\.v1\.GetItemRequest has no field "nope"/],
    ["a message leaf", [{ name: "A", input: "UpdateItemRequest", rule: get("/v1/{item}") }], /variable item must name a singular scalar or enum field/],
    [
      "a repeated leaf",
      [{ name: "A", input: "UpdateItemRequest", rule: get("/v1/{item.labels}") }],
      /variable item\.labels must name a singular scalar or enum field/,
    ],
    ["a map leaf", [{ name: "A", input: "UpdateItemRequest", rule: get("/v1/{item.annotations}") }], /variable item\.annotations must name a singular scalar/],
    [
      "a path through a repeated message",
      [{ name: "A", input: "UpdateItemRequest", rule: get("/v1/{item.parts.id}") }],
      /variable item\.parts\.id: parts is not a singular message field/,
    ],
    ["a path through a scalar", [{ name: "A", rule: get("/v1/{uid.x}") }], /variable uid\.x: uid is not a singular message field/],
    ["an unknown body field", [{ name: "A", rule: { ...get("/v1/a"), body: "nope" } }], /body names unknown field "nope"/],
    ["a scalar body field", [{ name: "A", rule: { ...get("/v1/a"), body: "owner" } }], /body field owner must be a singular message field/],
    ["an unknown response_body", [{ name: "A", rule: { ...get("/v1/a"), responseBody: "nope" } }], /response_body names unknown field "nope"/],
    [
      "two methods on the same method, template shape and verb",
      [
        { name: "First", rule: get("/v1/things/{uid=**}") },
        { name: "Second", rule: get("/v1/things/{owner=**}") },
      ],
      /conflicting HTTP rules: trellis\.testing\.synthetic\d+\.Synthetic\.First \(GET \/v1\/things\/\{uid=\*\*\}\) and trellis\.testing\.synthetic\d+\.Synthetic\.Second \(GET \/v1\/things\/\{owner=\*\*\}\)/,
    ],
    [
      "a pattern variable equivalent to literals",
      [
        { name: "First", rule: get("/v1/{uid=things/*}") },
        { name: "Second", rule: get("/v1/things/{owner}") },
      ],
      /conflicting HTTP rules: .*First.* and .*Second/,
    ],
  ];
  for (const [name, methods, message] of cases) {
    it(name, () => {
      expect(() => createRouteTable([syntheticService(methods)])).toThrow(message);
    });
  }

  it("names both methods when one service is registered twice", () => {
    expect(() => createRouteTable([ItemService, ItemService])).toThrow(
      /conflicting HTTP rules: trellis\.testing\.v1\.ItemService\.GetItem \(GET \/v1\/items\/\{uid=\*\*\}\) and trellis\.testing\.v1\.ItemService\.GetItem/,
    );
  });

  it("accepts the same template under other methods or verbs", () => {
    const t = createRouteTable([
      syntheticService([
        { name: "Get", rule: get("/v1/things/{uid}") },
        { name: "Delete", rule: { pattern: { case: "delete", value: "/v1/things/{uid}" } } },
        { name: "Touch", rule: get("/v1/things/{uid}:touch") },
      ]),
    ]);
    expect(t.routes.map((r) => `${r.httpMethod} ${r.template.source}`)).toEqual([
      "GET /v1/things/{uid}",
      "DELETE /v1/things/{uid}",
      "GET /v1/things/{uid}:touch",
    ]);
    const touched = t.match("GET", "/v1/things/t1:touch");
    expect(touched.kind === "match" && touched.route.method.name).toBe("Touch");
  });
});
