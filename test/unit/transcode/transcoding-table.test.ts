/**
 * The transcoder as a table: request → bound message (or error), through createRestHandler on
 * a real node:http server, against a test-only service (test/proto/items.proto) that uses
 * every template form. The proto is compiled by buf at test time and loaded as descriptors;
 * an echo implementation returns the bound request, so each case sees exactly what was bound.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import {
  create,
  createFileRegistry,
  type DescService,
  fromBinary,
  type Message,
  toJsonString,
} from "@bufbuild/protobuf";
import { FileDescriptorSetSchema, timestampFromMs } from "@bufbuild/protobuf/wkt";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unauthenticated } from "../../../src/errors/api-error.js";
import { createRestHandler } from "../../../src/transcode/rest-handler.js";
import { createRouteTable } from "../../../src/transcode/route-table.js";

let service: DescService;
let server: http.Server;
let base: string;

function loadTestService(): DescService {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-proto-"));
  try {
    fs.mkdirSync(path.join(dir, "google/api"), { recursive: true });
    for (const f of ["annotations", "http", "field_behavior"]) {
      fs.copyFileSync(path.resolve(`proto/google/api/${f}.proto`), path.join(dir, `google/api/${f}.proto`));
    }
    fs.copyFileSync(path.resolve("test/proto/items.proto"), path.join(dir, "items.proto"));
    fs.writeFileSync(path.join(dir, "buf.yaml"), "version: v2\n");
    const out = path.join(dir, "image.binpb");
    execFileSync(path.resolve("node_modules/.bin/buf"), ["build", dir, "--as-file-descriptor-set", "-o", out], { stdio: "pipe" });
    const registry = createFileRegistry(fromBinary(FileDescriptorSetSchema, fs.readFileSync(out)));
    const s = registry.getService("trellis.testing.v1.ItemService");
    if (!s) throw new Error("test service not found");
    return s;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

beforeAll(async () => {
  service = loadTestService();
  const rest = createRestHandler({
    services: [service],
    errorDomain: "test.example",
    maxBodyBytes: 4096,
    async invokeUnary(method, request, call) {
      if (call.headers.get("x-fail") === "unauthenticated") throw unauthenticated("TOKEN_MISSING", "no bearer token");
      const bound = `${method.name} ${toJsonString(method.input, request, { useProtoFieldName: true })}`;
      return create(method.output, {
        bound,
        labels: ["x", "y"],
        at: timestampFromMs(Date.UTC(2026, 10, 22, 10, 0, 0)),
        big: 12n,
      } as never) as Message;
    },
  });
  server = http.createServer((req, res) => {
    rest.handle(req, res).then((handled) => {
      if (!handled) {
        res.writeHead(418);
        res.end();
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterAll(async () => {
  await new Promise((r) => server.close(r));
});

function send(method: string, p: string, body?: string, contentType = "application/json") {
  return new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }>((resolve, reject) => {
    const u = new URL(base);
    // Options, not a URL string: a URL would be normalised ("/a/../b" → "/b") before sending.
    const req = http.request({
      host: u.hostname,
      port: u.port,
      path: p,
      method,
      headers: body === undefined ? {} : { "content-type": contentType, "content-length": String(Buffer.byteLength(body)) },
    });
    req.on("response", (res) => {
      let text = "";
      res.setEncoding("utf8").on("data", (c) => {
        text += c;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

interface Case {
  readonly name: string;
  readonly method: string;
  readonly path: string;
  readonly body?: string;
  readonly contentType?: string;
  /** Expected "<Method> <bound proto JSON>" for successes. */
  readonly bound?: string;
  /** Expected HTTP status and violation field for failures. */
  readonly status?: number;
  readonly field?: string;
}

const U = "a".repeat(8);
const cases: Case[] = [
  // Routing
  { name: "list", method: "GET", path: "/v1/items", bound: "ListItems {}" },
  { name: "get, multi-segment", method: "GET", path: `/v1/items/${U}/b2`, bound: `GetItem {"uid":"${U}/b2"}` },
  { name: "create with zero-length **", method: "POST", path: "/v1/items", body: '{"name":"x"}', bound: 'CreateItem {"item":{"name":"x"}}' },
  { name: "trailing slash ignored", method: "GET", path: "/v1/items/", bound: "ListItems {}" },
  { name: "registered verb beats ** and list", method: "GET", path: "/v1/items:count", bound: "CountItems {}" },
  { name: "unregistered colon stays in the value", method: "GET", path: "/v1/items/user:123", bound: 'GetItem {"uid":"user:123"}' },
  { name: "literal suffix beats **", method: "GET", path: `/v1/items/${U}/c/readme`, bound: `GetReadme {"uid":"${U}/c"}` },
  { name: "additional binding, single segments", method: "GET", path: "/v1/owners/o1/items/i1", bound: 'GetItem {"uid":"i1","owner":"o1"}' },
  { name: "patterned variable with verb", method: "POST", path: "/v1/items/i9:archive", body: '{"reason":"old"}', bound: 'ArchiveItem {"name":"items/i9","reason":"old"}' },
  { name: "unknown path", method: "GET", path: "/v1/nothing", status: 404 },
  { name: "wrong method", method: "PUT", path: `/v1/items/${U}`, status: 405 },
  // Path decoding
  { name: "%2F kept encoded in **", method: "GET", path: "/v1/items/a%2Fb", bound: 'GetItem {"uid":"a%2Fb"}' },
  { name: "%2F decoded in a single segment", method: "GET", path: "/v1/owners/o%2Fx/items/i1", bound: 'GetItem {"uid":"i1","owner":"o/x"}' },
  { name: "unicode escapes", method: "GET", path: "/v1/items/caf%C3%A9", bound: 'GetItem {"uid":"café"}' },
  { name: "+ is literal in paths", method: "GET", path: "/v1/items/a+b", bound: 'GetItem {"uid":"a+b"}' },
  { name: "malformed escape", method: "GET", path: "/v1/items/%zz", status: 400, field: "path" },
  { name: "dot segment", method: "GET", path: "/v1/items/a/../b", status: 400, field: "uid" },
  { name: "escaped colon is not a verb", method: "GET", path: "/v1/items/a%3Alabels", bound: 'GetItem {"uid":"a:labels"}' },
  // Query parameters
  { name: "proto and JSON names", method: "GET", path: "/v1/items?page_size=10&pageToken=t", bound: 'ListItems {"page_size":10,"page_token":"t"}' },
  { name: "nested by both names", method: "GET", path: "/v1/items?filter.descendants_of=X&filter.childrenOf=Y", bound: 'ListItems {"filter":{"descendants_of":"X","children_of":"Y"}}' },
  { name: "repeated keys", method: "GET", path: "/v1/items?labels=a&labels=b", bound: 'ListItems {"labels":["a","b"]}' },
  { name: "no comma splitting", method: "GET", path: "/v1/items?labels=a,b", bound: 'ListItems {"labels":["a,b"]}' },
  { name: "int32 not a number", method: "GET", path: "/v1/items?page_size=abc", status: 400, field: "page_size" },
  { name: "singular twice", method: "GET", path: "/v1/items?page_size=1&page_size=2", status: 400, field: "page_size" },
  { name: "int32 overflow", method: "GET", path: "/v1/items?page_size=3000000000", status: 400, field: "page_size" },
  { name: "enum by name", method: "GET", path: "/v1/items?kind=KIND_A", bound: 'ListItems {"kind":"KIND_A"}' },
  { name: "enum by number", method: "GET", path: "/v1/items?kind=2", bound: 'ListItems {"kind":"KIND_B"}' },
  { name: "enum lower case", method: "GET", path: "/v1/items?kind=kind_a", status: 400, field: "kind" },
  { name: "timestamp", method: "GET", path: "/v1/items?since=2024-01-02T03:04:05Z", bound: 'ListItems {"since":"2024-01-02T03:04:05Z"}' },
  { name: "raw + in a timestamp", method: "GET", path: "/v1/items?since=2024-01-02T03:04:05+01:00", status: 400, field: "since" },
  { name: "escaped + in a timestamp", method: "GET", path: "/v1/items?since=2024-01-02T03:04:05%2B01:00", bound: 'ListItems {"since":"2024-01-02T02:04:05Z"}' },
  { name: "duration", method: "GET", path: "/v1/items?maxAge=1.5s", bound: 'ListItems {"max_age":"1.500s"}' },
  { name: "Go-style duration", method: "GET", path: "/v1/items?maxAge=90m", status: 400, field: "max_age" },
  { name: "wrapper", method: "GET", path: "/v1/items?minScore=0.5", bound: 'ListItems {"min_score":0.5}' },
  { name: "field mask, camel and snake", method: "GET", path: "/v1/items?viewMask=displayName,create_time", bound: 'ListItems {"view_mask":"displayName,createTime"}' },
  { name: "map in query", method: "GET", path: "/v1/items?attrs.k=v", status: 400, field: "attrs.k" },
  { name: "message as leaf", method: "GET", path: "/v1/items?filter=x", status: 400, field: "filter" },
  { name: "repeated message", method: "GET", path: "/v1/items?filters.children_of=x", status: 400, field: "filters.children_of" },
  { name: "unknown parameter", method: "GET", path: "/v1/items?unknown=1", status: 400, field: "unknown" },
  { name: "query names a path field", method: "GET", path: `/v1/items/${U}?uid=other`, status: 400, field: "uid" },
  { name: "query names a body field", method: "POST", path: "/v1/items/p?item.name=y", body: '{"name":"x"}', status: 400, field: "item.name" },
  { name: "query with body *", method: "POST", path: "/v1/items/i1:archive?reason=z", body: "{}", status: 400, field: "reason" },
  { name: "form decoding of values", method: "GET", path: "/v1/items?name=a%26b+c", bound: 'ListItems {"name":"a&b c"}' },
  { name: "int64 as decimal", method: "GET", path: "/v1/items?big=9007199254740993", bound: 'ListItems {"big":"9007199254740993"}' },
  { name: "bool", method: "GET", path: "/v1/items?flag=true", bound: 'ListItems {"flag":true}' },
  { name: "bool spelled 1", method: "GET", path: "/v1/items?flag=1", status: 400, field: "flag" },
  { name: "uint32 negative", method: "GET", path: "/v1/items?small=-1", status: 400, field: "small" },
  { name: "bytes base64", method: "GET", path: "/v1/items?blob=aGk%3D", bound: 'ListItems {"blob":"aGk="}' },
  // Bodies and updates
  { name: "unknown JSON field", method: "POST", path: "/v1/items/p", body: '{"name":"x","nmae":"y"}', status: 400, field: "nmae" },
  { name: "truncated JSON", method: "POST", path: "/v1/items/p", body: '{"name":', status: 400, field: "body" },
  { name: "empty body", method: "POST", path: "/v1/items/p", body: "", bound: 'CreateItem {"parent":"p","item":{}}' },
  { name: "body on a body-less rule", method: "GET", path: "/v1/items", body: "{}", status: 400, field: "body" },
  { name: "text/plain", method: "POST", path: "/v1/items/p", body: "{}", contentType: "text/plain", status: 415 },
  { name: "proto names in bodies", method: "POST", path: "/v1/items/p", body: '{"create_time":"2024-01-01T00:00:00Z","name":"n"}', bound: 'CreateItem {"parent":"p","item":{"name":"n","create_time":"2024-01-01T00:00:00Z"}}' },
  { name: "explicit mask", method: "PATCH", path: `/v1/items/${U}?updateMask=name`, body: '{"name":"y"}', bound: `UpdateItem {"item":{"uid":"${U}","name":"y"},"update_mask":"name"}` },
  { name: "mask inferred from body keys", method: "PATCH", path: `/v1/items/${U}`, body: '{"name":"y","description":"","nested":{"childrenOf":"c"},"labels":[],"createTime":"2024-01-01T00:00:00Z"}', bound: `UpdateItem {"item":{"uid":"${U}","name":"y","create_time":"2024-01-01T00:00:00Z","nested":{"children_of":"c"}},"update_mask":"description,labels,name,nested.childrenOf"}` },
  { name: "body uid contradicts path", method: "PATCH", path: `/v1/items/${U}`, body: '{"uid":"b2","name":"y"}', status: 400, field: "item.uid" },
  { name: "body uid equal to path", method: "PATCH", path: `/v1/items/${U}`, body: `{"uid":"${U}"}`, bound: `UpdateItem {"item":{"uid":"${U}"},"update_mask":""}` },
  { name: "int64 as number or string in JSON", method: "POST", path: "/v1/items/i1:archive", body: '{"reason":"r"}', bound: 'ArchiveItem {"name":"items/i1","reason":"r"}' },
  { name: "POST on a GET-only verb route", method: "POST", path: "/v1/items:count", body: "labels=a&labels=b", contentType: "application/x-www-form-urlencoded", status: 405 },
  { name: "body over the cap", method: "POST", path: "/v1/items/p", body: JSON.stringify({ name: "x".repeat(5000) }), status: 413 },
];

describe("transcoding table", () => {
  it("has at least 40 cases", () => {
    expect(cases.length).toBeGreaterThanOrEqual(40);
  });

  for (const c of cases) {
    it(`${c.name}: ${c.method} ${c.path}`, async () => {
      const res = await send(c.method, c.path, c.body, c.contentType);
      if (c.bound !== undefined) {
        expect(res.status, res.body).toBe(200);
        expect(JSON.parse(res.body).bound ?? JSON.parse(res.body)).toBe(c.bound);
      } else {
        expect(res.status, res.body).toBe(c.status);
        const body = JSON.parse(res.body);
        expect(body.details[0]["@type"]).toBe("type.googleapis.com/google.rpc.ErrorInfo");
        if (c.field) {
          const bad = body.details.find((d: { "@type": string }) => d["@type"].endsWith("BadRequest"));
          expect(bad?.fieldViolations?.[0]?.field).toBe(c.field);
        }
      }
    });
  }

  it("renders response_body, int64 strings and three-digit timestamps", async () => {
    // A verb after a ** value routes to GetLabels, whose response_body is the labels list.
    const labels = await send("GET", `/v1/items/${U}:labels`);
    expect(JSON.parse(labels.body)).toEqual(["x", "y"]);
    const full = JSON.parse((await send("GET", "/v1/items")).body);
    expect(full.at).toBe("2026-11-22T10:00:00.000Z");
    expect(full.big).toBe("12");
  });

  it("answers UNAUTHENTICATED with 401, WWW-Authenticate: Bearer and the Status body", async () => {
    const res = await new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }>((resolve, reject) => {
      const req = http.request(`${base}/v1/items`, { headers: { "x-fail": "unauthenticated" } }, (r) => {
        let text = "";
        r.setEncoding("utf8").on("data", (c) => {
          text += c;
        });
        r.on("end", () => resolve({ status: r.statusCode ?? 0, headers: r.headers, body: text }));
      });
      req.on("error", reject);
      req.end();
    });
    expect(res.status).toBe(401);
    expect(res.headers["www-authenticate"]).toBe("Bearer");
    expect(JSON.parse(res.body)).toMatchObject({ code: 16, details: [{ reason: "TOKEN_MISSING", domain: "test.example" }] });
  });

  it("refuses conflicting rules at build time, naming both methods", () => {
    expect(() => createRouteTable([service, service])).toThrow(/conflicting HTTP rules: trellis\.testing\.v1\.ItemService\.GetItem and trellis\.testing\.v1\.ItemService\.GetItem/);
  });
});
