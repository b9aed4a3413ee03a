/**
 * bindRequest on the test ItemService: request (method, path, query, body) → the bound message
 * (as proto JSON with proto names) or the INVALID_ARGUMENT violation it must raise.
 * docs/rest.md "Requests", plus the value-parsing edges.
 */
import { type JsonObject, type Message, toJson } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { ApiError } from "../../../src/errors/api-error.js";
import { bindRequest } from "../../../src/transcode/bind-request.js";
import { parseFormEncoded } from "../../../src/transcode/query-params.js";
import { createRouteTable } from "../../../src/transcode/route-table.js";
import { ItemService, type ListItemsRequest, type UpdateItemRequest } from "../../gen/trellis/testing/v1/items_pb.js";

const table = createRouteTable([ItemService]);

interface Req {
  readonly body?: string | Uint8Array;
  /** Default application/json when there is a body. */
  readonly contentType?: string | null;
}

type Outcome = { rpc: string; request: JsonObject } | { error: number; field: string | undefined };

function bindMessage(method: string, target: string, req: Req = {}): { rpc: string; message: Message } {
  const q = target.indexOf("?");
  const path = q < 0 ? target : target.slice(0, q);
  const m = table.match(method, path);
  if (m.kind !== "match") throw new Error(`no route for ${method} ${path}`);
  const body = typeof req.body === "string" ? new TextEncoder().encode(req.body) : req.body;
  const contentType = req.contentType === null ? undefined : (req.contentType ?? (body ? "application/json" : undefined));
  const message = bindRequest(m.route, m.vars, {
    query: parseFormEncoded(q < 0 ? "" : target.slice(q + 1), "query"),
    body,
    contentType,
  });
  return { rpc: m.route.method.name, message };
}

function bind(method: string, target: string, req: Req = {}): Outcome {
  try {
    const { rpc, message } = bindMessage(method, target, req);
    const m = ItemService.methods.find((x) => x.name === rpc);
    return { rpc, request: toJson(m?.input as never, message as never, { useProtoFieldName: true }) as JsonObject };
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    return { error: err.code, field: err.fieldViolations[0]?.field };
  }
}

const ok = (rpc: string, request: JsonObject): Outcome => ({ rpc, request });
const bad = (field: string): Outcome => ({ error: 3, field });

interface Case {
  readonly name: string;
  readonly method: string;
  readonly target: string;
  readonly req?: Req;
  readonly want: Outcome;
}

const A = "a1";

describe("bindRequest: query parameters", () => {
  const cases: Case[] = [
    { name: "proto and JSON names", method: "GET", target: "/v1/items?page_size=10&pageToken=t", want: ok("ListItems", { page_size: 10, page_token: "t" }) },
    {
      name: "dotted names into a nested message, both spellings",
      method: "GET",
      target: "/v1/items?filter.descendants_of=X&filter.childrenOf=Y",
      want: ok("ListItems", { filter: { descendants_of: "X", children_of: "Y" } }),
    },
    { name: "repeated keys", method: "GET", target: "/v1/items?labels=a&labels=b", want: ok("ListItems", { labels: ["a", "b"] }) },
    {
      name: "repeated keys under both names, in order",
      method: "GET",
      target: "/v1/items?filter.ids=a&filter.ids=b",
      want: ok("ListItems", { filter: { ids: ["a", "b"] } }),
    },
    { name: "no comma splitting", method: "GET", target: "/v1/items?labels=a,b", want: ok("ListItems", { labels: ["a,b"] }) },
    { name: "int32 not a number", method: "GET", target: "/v1/items?page_size=abc", want: bad("page_size") },
    { name: "int32 in exponent form", method: "GET", target: "/v1/items?page_size=1e3", want: bad("page_size") },
    { name: "int32 with trailing junk", method: "GET", target: "/v1/items?page_size=10abc", want: bad("page_size") },
    { name: "int32 with a plus sign (%2B)", method: "GET", target: "/v1/items?page_size=%2B5", want: bad("page_size") },
    { name: "int32 overflow", method: "GET", target: "/v1/items?page_size=3000000000", want: bad("page_size") },
    {
      name: "int32 bounds",
      method: "GET",
      target: "/v1/items?page_size=-2147483648&skip=2147483647",
      want: ok("ListItems", { page_size: -2147483648, skip: 2147483647 }),
    },
    { name: "a singular field twice", method: "GET", target: "/v1/items?page_size=1&page_size=2", want: bad("page_size") },
    { name: "a singular field under both names", method: "GET", target: "/v1/items?page_size=1&pageSize=1", want: bad("page_size") },
    { name: "enum by name", method: "GET", target: "/v1/items?kind=KIND_A", want: ok("ListItems", { kind: "KIND_A" }) },
    { name: "enum by number", method: "GET", target: "/v1/items?kind=2", want: ok("ListItems", { kind: "KIND_B" }) },
    { name: "enum in lower case", method: "GET", target: "/v1/items?kind=kind_a", want: bad("kind") },
    { name: "enum unknown name", method: "GET", target: "/v1/items?kind=BOGUS", want: bad("kind") },
    { name: "enum unknown number", method: "GET", target: "/v1/items?kind=7", want: bad("kind") },
    { name: "repeated enum", method: "GET", target: "/v1/items?kinds=KIND_A&kinds=2", want: ok("ListItems", { kinds: ["KIND_A", "KIND_B"] }) },
    { name: "timestamp", method: "GET", target: "/v1/items?since=2024-01-02T03:04:05Z", want: ok("ListItems", { since: "2024-01-02T03:04:05Z" }) },
    { name: "timestamp with a raw + (decodes to a space)", method: "GET", target: "/v1/items?since=2024-01-02T03:04:05+01:00", want: bad("since") },
    {
      name: "timestamp with %2B",
      method: "GET",
      target: "/v1/items?since=2024-01-02T03:04:05.5%2B01:00",
      want: ok("ListItems", { since: "2024-01-02T02:04:05.500Z" }),
    },
    { name: "timestamp on a day that does not exist", method: "GET", target: "/v1/items?since=2024-02-30T00:00:00Z", want: bad("since") },
    { name: "timestamp in words", method: "GET", target: "/v1/items?since=yesterday", want: bad("since") },
    { name: "duration", method: "GET", target: "/v1/items?maxAge=1.5s", want: ok("ListItems", { max_age: "1.500s" }) },
    { name: "Go-style duration", method: "GET", target: "/v1/items?max_age=90m", want: bad("max_age") },
    { name: "duration with a space", method: "GET", target: "/v1/items?max_age=1s+", want: bad("max_age") },
    { name: "wrapper", method: "GET", target: "/v1/items?minScore=0.5", want: ok("ListItems", { min_score: 0.5 }) },
    {
      name: "int64 and bool wrappers",
      method: "GET",
      target: "/v1/items?max_revision=5&archived=false",
      want: ok("ListItems", { max_revision: "5", archived: false }),
    },
    { name: "map field (dotted)", method: "GET", target: "/v1/items?attrs.k=v", want: bad("attrs.k") },
    { name: "map field (bracket)", method: "GET", target: "/v1/items?attrs%5Bk%5D=v", want: bad("attrs[k]") },
    { name: "a message as a leaf", method: "GET", target: "/v1/items?filter=x", want: bad("filter") },
    { name: "into a repeated message", method: "GET", target: "/v1/items?filters.children_of=x", want: bad("filters.children_of") },
    { name: "into a Struct", method: "GET", target: "/v1/items?meta.x=1", want: bad("meta.x") },
    { name: "into a Timestamp", method: "GET", target: "/v1/items?since.seconds=1", want: bad("since.seconds") },
    { name: "unknown parameter", method: "GET", target: "/v1/items?unknown=1", want: bad("unknown") },
    { name: "a token in the URL is just unknown", method: "GET", target: "/v1/items?access_token=secret", want: bad("access_token") },
    { name: "int64 beyond 2^53", method: "GET", target: "/v1/items?big=9007199254740993", want: ok("ListItems", { big: "9007199254740993" }) },
    { name: "int64 overflow", method: "GET", target: "/v1/items?big=-9223372036854775809", want: bad("big") },
    { name: "uint64 max", method: "GET", target: "/v1/items?huge=18446744073709551615", want: ok("ListItems", { huge: "18446744073709551615" }) },
    { name: "uint64 negative", method: "GET", target: "/v1/items?huge=-1", want: bad("huge") },
    { name: "uint32 negative", method: "GET", target: "/v1/items?small=-1", want: bad("small") },
    { name: "sint32 negative", method: "GET", target: "/v1/items?delta=-5", want: ok("ListItems", { delta: -5 }) },
    { name: "repeated int64", method: "GET", target: "/v1/items?revisions=1&revisions=2", want: ok("ListItems", { revisions: ["1", "2"] }) },
    { name: "bool", method: "GET", target: "/v1/items?flag=true", want: ok("ListItems", { flag: true }) },
    { name: "bool spelled 1", method: "GET", target: "/v1/items?flag=1", want: bad("flag") },
    { name: "bool in capitals", method: "GET", target: "/v1/items?flag=TRUE", want: bad("flag") },
    { name: "bytes, padded", method: "GET", target: "/v1/items?blob=aGk%3D", want: ok("ListItems", { blob: "aGk=" }) },
    { name: "bytes, unpadded", method: "GET", target: "/v1/items?blob=aGk", want: ok("ListItems", { blob: "aGk=" }) },
    { name: "bytes, URL-safe", method: "GET", target: "/v1/items?blob=_-8", want: ok("ListItems", { blob: "/+8=" }) },
    { name: "bytes, not base64", method: "GET", target: "/v1/items?blob=a", want: bad("blob") },
    { name: "float overflow", method: "GET", target: "/v1/items?ratio=3.5e39", want: bad("ratio") },
    { name: "double NaN", method: "GET", target: "/v1/items?score=NaN&ratio=1.5", want: ok("ListItems", { ratio: 1.5, score: "NaN" }) },
    { name: "double in hex", method: "GET", target: "/v1/items?score=0x10", want: bad("score") },
    { name: "proto3 optional set to its default", method: "GET", target: "/v1/items?note=", want: ok("ListItems", { note: "" }) },
    { name: "two members of a oneof", method: "GET", target: "/v1/items?folder=a&depth=3", want: bad("depth") },
    { name: "one member of a oneof", method: "GET", target: "/v1/items?depth=3", want: ok("ListItems", { depth: 3 }) },
    { name: "custom json_name", method: "GET", target: "/v1/items?id=x", want: ok("ListItems", { legacy_id: "x" }) },
    { name: "custom json_name: lowerCamel is not a name", method: "GET", target: "/v1/items?legacyId=x", want: bad("legacyId") },
    { name: "form decoding of values", method: "GET", target: "/v1/items?name=a%26b+c%2Bd", want: ok("ListItems", { name: "a&b c+d" }) },
    { name: "query names a path field (different value)", method: "GET", target: `/v1/items/${A}?uid=b2`, want: bad("uid") },
    { name: "query names a path field (same value)", method: "GET", target: `/v1/items/${A}?uid=${A}`, want: ok("GetItem", { uid: A }) },
    { name: "query names a path field twice", method: "GET", target: `/v1/items/${A}?uid=${A}&uid=${A}`, want: bad("uid") },
    { name: "query sets a field the path does not bind", method: "GET", target: `/v1/items/${A}?owner=o`, want: ok("GetItem", { uid: A, owner: "o" }) },
    {
      name: "query beside a body field",
      method: "POST",
      target: "/v1/items/p?request_id=r",
      req: { body: '{"name":"x"}' },
      want: ok("CreateItem", { parent: "p", item: { name: "x" }, request_id: "r" }),
    },
    { name: "query names a body field", method: "POST", target: "/v1/items/p?item.name=y", req: { body: '{"name":"x"}' }, want: bad("item.name") },
    { name: "query with body * (known field)", method: "POST", target: "/v1/items/i1:archive?reason=z", req: { body: "{}" }, want: bad("reason") },
    { name: "query with body * (unknown name)", method: "POST", target: "/v1/items/i1:archive?nope=z", req: { body: "{}" }, want: bad("nope") },
    { name: "query on DELETE", method: "DELETE", target: "/v1/items/a?etag=e", want: ok("DeleteItem", { uid: "a", etag: "e" }) },
  ];
  for (const c of cases) {
    it(`${c.name}: ${c.method} ${c.target}`, () => {
      expect(bind(c.method, c.target, c.req)).toEqual(c.want);
    });
  }

  it("leaves an absent wrapper unset (not 0) and stores FieldMask paths in snake_case", () => {
    const absent = bindMessage("GET", "/v1/items").message as ListItemsRequest;
    expect(absent.minScore).toBeUndefined();
    const camel = bindMessage("GET", "/v1/items?viewMask=displayName,createTime,spec.tagNames").message as ListItemsRequest;
    expect(camel.viewMask?.paths).toEqual(["display_name", "create_time", "spec.tag_names"]);
    const snake = bindMessage("GET", "/v1/items?view_mask=display_name").message as ListItemsRequest;
    expect(snake.viewMask?.paths).toEqual(["display_name"]);
  });
});

describe("bindRequest: bodies", () => {
  const deep = `${'{"metadata":'.repeat(1)}${"[".repeat(70)}${"]".repeat(70)}}`;
  const cases: Case[] = [
    {
      name: "body field",
      method: "POST",
      target: "/v1/items/p",
      req: { body: '{"name":"x","spec":{"color":"red"}}' },
      want: ok("CreateItem", { parent: "p", item: { name: "x", spec: { color: "red" } } }),
    },
    { name: "zero-length ** parent", method: "POST", target: "/v1/items", req: { body: '{"name":"x"}' }, want: ok("CreateItem", { item: { name: "x" } }) },
    { name: "unknown JSON field", method: "POST", target: "/v1/items/p", req: { body: '{"name":"x","nmae":"y"}' }, want: bad("nmae") },
    { name: "unknown nested JSON field", method: "POST", target: "/v1/items/p", req: { body: '{"spec":{"colour":"red"}}' }, want: bad("spec.colour") },
    {
      name: "unknown field in a repeated message",
      method: "POST",
      target: "/v1/items/p",
      req: { body: '{"parts":[{"id":"1"},{"nope":1}]}' },
      want: bad("parts.nope"),
    },
    {
      name: "unknown field in a map value",
      method: "POST",
      target: "/v1/items/p",
      req: { body: '{"partsById":{"k":{"nope":1}}}' },
      want: bad("parts_by_id.nope"),
    },
    { name: "truncated JSON", method: "POST", target: "/v1/items/p", req: { body: '{"name":' }, want: bad("body") },
    { name: "a JSON array", method: "POST", target: "/v1/items/p", req: { body: "[]" }, want: bad("body") },
    { name: "a JSON string", method: "POST", target: "/v1/items/p", req: { body: '"x"' }, want: bad("body") },
    { name: "empty body counts as {}", method: "POST", target: "/v1/items/p", req: { body: "" }, want: ok("CreateItem", { parent: "p", item: {} }) },
    { name: "invalid UTF-8", method: "POST", target: "/v1/items/p", req: { body: new Uint8Array([0x7b, 0x22, 0xff, 0x22, 0x7d]) }, want: bad("body") },
    { name: "lone surrogate from an escape", method: "POST", target: "/v1/items/p", req: { body: '{"name":"ok\\ud800"}' }, want: bad("name") },
    { name: "nesting too deep", method: "POST", target: "/v1/items/p", req: { body: deep }, want: bad("body") },
    { name: "wrong JSON type", method: "POST", target: "/v1/items/p", req: { body: '{"name":5}' }, want: bad("name") },
    { name: "wrong JSON type, nested", method: "POST", target: "/v1/items/p", req: { body: '{"spec":{"size":"big"}}' }, want: bad("spec.size") },
    { name: "wrong JSON type in a list", method: "POST", target: "/v1/items/p", req: { body: '{"labels":[1]}' }, want: bad("labels") },
    { name: "bad timestamp in the body", method: "POST", target: "/v1/items/p", req: { body: '{"createTime":"soon"}' }, want: bad("create_time") },
    {
      name: "int64 as a number",
      method: "POST",
      target: "/v1/items/p",
      req: { body: '{"revision":42}' },
      want: ok("CreateItem", { parent: "p", item: { revision: "42" } }),
    },
    {
      name: "int64 as a string",
      method: "POST",
      target: "/v1/items/p",
      req: { body: '{"revision":"42"}' },
      want: ok("CreateItem", { parent: "p", item: { revision: "42" } }),
    },
    {
      name: "proto names in bodies",
      method: "POST",
      target: "/v1/items/p",
      req: { body: '{"create_time":"2024-01-01T00:00:00Z","parts_by_id":{}}' },
      want: ok("CreateItem", { parent: "p", item: { create_time: "2024-01-01T00:00:00Z" } }),
    },
    {
      name: "charset utf-8",
      method: "POST",
      target: "/v1/items/p",
      req: { body: "{}", contentType: "application/json; charset=UTF-8" },
      want: ok("CreateItem", { parent: "p", item: {} }),
    },
    {
      name: "no content type",
      method: "POST",
      target: "/v1/items/p",
      req: { body: "{}", contentType: null },
      want: ok("CreateItem", { parent: "p", item: {} }),
    },
    {
      name: "text/plain",
      method: "POST",
      target: "/v1/items/p",
      req: { body: "{}", contentType: "text/plain" },
      want: bad("body"),
    },
    {
      name: "another charset",
      method: "POST",
      target: "/v1/items/p",
      req: { body: "{}", contentType: "application/json; charset=latin1" },
      want: bad("body"),
    },
    {
      name: "a form on a JSON rule",
      method: "POST",
      target: "/v1/items/p",
      req: { body: "name=x", contentType: "application/x-www-form-urlencoded" },
      want: bad("body"),
    },
    { name: "a body on a body-less rule", method: "GET", target: "/v1/items", req: { body: "{}" }, want: bad("body") },
    { name: "JSON on the form-style rule", method: "POST", target: "/v1/exchange", req: { body: '{"aud":["x"]}' }, want: bad("body") },
    {
      name: "form POST binds like the query",
      method: "POST",
      target: "/v1/exchange",
      req: { body: "aud=a&aud=b&identity=x&ttl=60s", contentType: "application/x-www-form-urlencoded" },
      want: ok("Exchange", { aud: ["a", "b"], identity: "x", ttl: "60s" }),
    },
    {
      name: "form fields after query fields",
      method: "POST",
      target: "/v1/exchange?aud=q",
      req: { body: "aud=a", contentType: "application/x-www-form-urlencoded; charset=utf-8" },
      want: ok("Exchange", { aud: ["q", "a"] }),
    },
    {
      name: "a form field repeating a query field",
      method: "POST",
      target: "/v1/exchange?identity=q",
      req: { body: "identity=x", contentType: "application/x-www-form-urlencoded" },
      want: bad("identity"),
    },
    {
      name: "an unknown form field",
      method: "POST",
      target: "/v1/exchange",
      req: { body: "audience=x", contentType: "application/x-www-form-urlencoded" },
      want: bad("audience"),
    },
    {
      name: "a malformed form escape",
      method: "POST",
      target: "/v1/exchange",
      req: { body: "identity=%zz", contentType: "application/x-www-form-urlencoded" },
      want: bad("identity"),
    },
    {
      name: "a form body on GET",
      method: "GET",
      target: "/v1/exchange",
      req: { body: "aud=a", contentType: "application/x-www-form-urlencoded" },
      want: bad("body"),
    },
    {
      name: "body * binds the whole request",
      method: "SEARCH",
      target: "/v1/items:search",
      req: { body: '{"query":"q","pageSize":5}' },
      want: ok("SearchItems", { query: "q", page_size: 5 }),
    },
    {
      name: "body * contradicting the path",
      method: "POST",
      target: "/v1/items/i9:archive",
      req: { body: '{"name":"items/other","reason":"r"}' },
      want: bad("name"),
    },
    {
      name: "body * agreeing with the path",
      method: "POST",
      target: "/v1/items/i9:archive",
      req: { body: '{"name":"items/i9"}' },
      want: ok("ArchiveItem", { name: "items/i9" }),
    },
    {
      name: "body * with the default value",
      method: "POST",
      target: "/v1/items/i9:archive",
      req: { body: '{"name":"","force":true}' },
      want: ok("ArchiveItem", { name: "items/i9", force: true }),
    },
  ];
  for (const c of cases) {
    it(`${c.name}: ${c.method} ${c.target}`, () => {
      expect(bind(c.method, c.target, c.req)).toEqual(c.want);
    });
  }
});

describe("bindRequest: PATCH and update_mask (docs/published-api.md, Update masks)", () => {
  const cases: Case[] = [
    {
      name: "explicit mask wins",
      method: "PATCH",
      target: `/v1/items/${A}?updateMask=name`,
      req: { body: '{"name":"y","description":"d"}' },
      want: ok("UpdateItem", { item: { uid: A, name: "y", description: "d" }, update_mask: "name" }),
    },
    {
      name: "mask inferred from the keys present",
      method: "PATCH",
      target: `/v1/items/${A}`,
      req: { body: '{"name":"y","description":""}' },
      want: ok("UpdateItem", { item: { uid: A, name: "y" }, update_mask: "description,name" }),
    },
    {
      name: "nested objects to leaves; lists, maps and WKTs whole; output-only and path fields left out",
      method: "PATCH",
      target: `/v1/items/${A}`,
      req: {
        body: `{"uid":"${A}","spec":{"color":"red","tags":[]},"labels":[],"annotations":{"a":"b"},"parts":[{"id":"1"}],"metadata":{"x":1},"nickname":"n","createTime":"2024-01-01T00:00:00Z","kind":"KIND_A"}`,
      },
      want: ok("UpdateItem", {
        item: {
          uid: A,
          create_time: "2024-01-01T00:00:00Z",
          spec: { color: "red" },
          annotations: { a: "b" },
          parts: [{ id: "1" }],
          kind: "KIND_A",
          metadata: { x: 1 },
          nickname: "n",
        },
        update_mask: "annotations,kind,labels,metadata,nickname,parts,spec.color,spec.tags",
      }),
    },
    {
      name: "an empty object is the field itself",
      method: "PATCH",
      target: `/v1/items/${A}`,
      req: { body: '{"spec":{}}' },
      want: ok("UpdateItem", { item: { uid: A, spec: {} }, update_mask: "spec" }),
    },
    {
      name: "null is the field itself",
      method: "PATCH",
      target: `/v1/items/${A}`,
      req: { body: '{"spec":null}' },
      want: ok("UpdateItem", { item: { uid: A }, update_mask: "spec" }),
    },
    {
      name: "an empty explicit mask is inferred",
      method: "PATCH",
      target: `/v1/items/${A}?update_mask=`,
      req: { body: '{"name":"y"}' },
      want: ok("UpdateItem", { item: { uid: A, name: "y" }, update_mask: "name" }),
    },
    {
      name: "the mask given twice",
      method: "PATCH",
      target: `/v1/items/${A}?update_mask=name&updateMask=description`,
      req: { body: "{}" },
      want: bad("update_mask"),
    },
    { name: "body uid contradicts the path", method: "PATCH", target: `/v1/items/${A}`, req: { body: '{"uid":"b2","name":"y"}' }, want: bad("item.uid") },
    {
      name: "body uid equal to the path",
      method: "PATCH",
      target: `/v1/items/${A}`,
      req: { body: `{"uid":"${A}"}` },
      want: ok("UpdateItem", { item: { uid: A }, update_mask: "" }),
    },
    { name: "empty body: an empty mask", method: "PATCH", target: `/v1/items/${A}`, want: ok("UpdateItem", { item: { uid: A }, update_mask: "" }) },
    {
      name: "other query fields beside the body",
      method: "PATCH",
      target: `/v1/items/${A}?allow_missing=true`,
      req: { body: '{"name":"y"}' },
      want: ok("UpdateItem", { item: { uid: A, name: "y" }, update_mask: "name", allow_missing: true }),
    },
  ];
  for (const c of cases) {
    it(`${c.name}: ${c.method} ${c.target}`, () => {
      expect(bind(c.method, c.target, c.req)).toEqual(c.want);
    });
  }

  it("stores the inferred mask as proto (snake_case) names, sorted", () => {
    const { message } = bindMessage("PATCH", `/v1/items/${A}`, { body: '{"spec":{"color":"r"},"description":"d","partsById":{}}' });
    expect((message as UpdateItemRequest).updateMask?.paths).toEqual(["description", "parts_by_id", "spec.color"]);
  });
});

describe("parseFormEncoded", () => {
  it("decodes + as a space and %XX strictly, skipping empty pairs", () => {
    expect([...parseFormEncoded("a=1+2&&b=%C3%A9&c&d=", "query")]).toEqual([
      ["a", "1 2"],
      ["b", "é"],
      ["c", ""],
      ["d", ""],
    ]);
  });
  it("rejects malformed escapes, naming the parameter or the source", () => {
    const field = (text: string) => {
      try {
        parseFormEncoded(text, "query");
      } catch (err) {
        return (err as ApiError).fieldViolations[0]?.field;
      }
      return undefined;
    };
    expect(field("name=%zz")).toBe("name");
    expect(field("name=%FF")).toBe("name");
    expect(field("na%zzme=x")).toBe("query");
  });
});
