/**
 * createRestHandler end to end: a real node:http server on 127.0.0.1 (port 0) serving the test
 * ItemService through an echo `invokeUnary` that records the bound request and returns a
 * response built from it. Requests go through plain fetch (node:http only where fetch cannot
 * send the bytes: dot segments, which fetch normalises, a body on GET, and a chunked upload).
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { create, type DescMethodUnary, type JsonObject, type Message, toJson } from "@bufbuild/protobuf";
import { reflect } from "@bufbuild/protobuf/reflect";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApiError, GrpcCode, unauthenticated } from "../../../src/errors/api-error.js";
import { httpStatusOf } from "../../../src/errors/codes.js";
import { createRestHandler, type RestCall, type RestHandlerOptions } from "../../../src/transcode/rest-handler.js";
import { ItemSchema, ItemService } from "../../gen/trellis/testing/v1/items_pb.js";

interface Seen {
  readonly rpc: string;
  readonly request: JsonObject;
  readonly call: RestCall;
}

let seen: Seen | undefined;
/** Read through a call: TypeScript would keep `seen` narrowed to undefined after a reset. */
const lastSeen = (): Seen | undefined => seen;
const unexpected: unknown[] = [];

/** Copies same-named scalar fields from request to response; Items get fixed extras. */
function echoResponse(method: DescMethodUnary, request: Message): Message | object {
  if (method.output.typeName === "google.protobuf.Empty") return {}; // an init shape, not a Message
  const out = create(method.output);
  const src = reflect(method.input, request);
  const dst = reflect(method.output, out);
  for (const f of method.output.fields) {
    const g = method.input.fields.find((x) => x.name === f.name);
    if (g && f.fieldKind === "scalar" && g.fieldKind === "scalar" && f.scalar === g.scalar) dst.set(f, src.get(g));
  }
  if (method.output === ItemSchema) {
    Object.assign(out, { labels: ["x", "y"], createTime: timestampFromMs(Date.UTC(2026, 10, 22, 10, 0, 0)), revision: 12n });
  }
  return out;
}

const echo: RestHandlerOptions["invokeUnary"] = async (method, request, call) => {
  seen = { rpc: method.name, request: toJson(method.input, request, { useProtoFieldName: true }) as JsonObject, call };
  const code = call.headers.get("x-fail-code");
  if (code) throw new ApiError(Number(code) as GrpcCode, `Failed: with code ${code}`);
  switch (call.headers.get("x-fail")) {
    case "unauthenticated":
      throw unauthenticated("TOKEN_MISSING", "no bearer token");
    case "crash":
      throw new Error("secret internal detail");
    case "wait":
      await new Promise((resolve) => call.signal.addEventListener("abort", resolve));
      return create(method.output);
  }
  return echoResponse(method, request);
};

async function serve(options: Partial<RestHandlerOptions>): Promise<{ server: http.Server; base: string }> {
  const rest = createRestHandler({
    services: [ItemService],
    errorDomain: "test.example",
    maxBodyBytes: 4096,
    invokeUnary: echo,
    openApi: false,
    onUnexpectedError: (cause) => unexpected.push(cause),
    ...options,
  });
  const server = http.createServer((req, res) => {
    void rest.handle(req, res).then((handled) => {
      if (!handled) {
        res.writeHead(418);
        res.end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

let main: { server: http.Server; base: string };
beforeAll(async () => {
  main = await serve({});
});
afterAll(async () => {
  main.server.closeAllConnections();
  await new Promise((resolve) => main.server.close(resolve));
});

interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
}

async function send(method: string, path: string, body?: string, headers: Record<string, string> = {}): Promise<Answer> {
  const init: RequestInit = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.body = body;
    (init.headers as Record<string, string>)["content-type"] ??= "application/json";
  }
  const res = await fetch(main.base + path, init);
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** node:http for bytes fetch will not send as given. */
function sendRaw(method: string, path: string, body?: string, headers: Record<string, string> = {}): Promise<Answer> {
  const u = new URL(main.base);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, method, path, headers }, (res) => {
      let text = "";
      res.setEncoding("utf8").on("data", (c) => {
        text += c;
      });
      res.on("end", () => {
        const h = new Headers();
        for (const [k, v] of Object.entries(res.headers)) if (typeof v === "string") h.set(k, v);
        resolve({ status: res.statusCode ?? 0, headers: h, text });
      });
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
  readonly headers?: Record<string, string>;
  /** Send with node:http instead of fetch. */
  readonly raw?: true;
  /** Success: the method reached and the request it got (proto JSON, proto names). */
  readonly rpc?: string;
  readonly request?: JsonObject;
  /** The rendered success body, when the case pins it. */
  readonly response?: unknown;
  /** Failure: HTTP status, gRPC code and the first violation's field. */
  readonly status?: number;
  readonly code?: number;
  readonly field?: string;
}

const U = "a1";
const FORM = { "content-type": "application/x-www-form-urlencoded" };
const cases: Case[] = [
  // routing (docs/rest.md "Routing")
  { name: "list", method: "GET", path: "/v1/items", rpc: "ListItems", request: {}, response: { items: [], nextPageToken: "", skipped: 0 } },
  { name: "multi-segment get", method: "GET", path: "/v1/items/a1/b2", rpc: "GetItem", request: { uid: "a1/b2" } },
  { name: "create through a zero-length **", method: "POST", path: "/v1/items", body: '{"name":"x"}', rpc: "CreateItem", request: { item: { name: "x" } } },
  { name: "trailing slash stripped", method: "POST", path: "/v1/items/", body: '{"name":"x"}', rpc: "CreateItem", request: { item: { name: "x" } } },
  { name: "GET with trailing slash is the list", method: "GET", path: "/v1/items/", rpc: "ListItems", request: {} },
  { name: "registered verb", method: "GET", path: "/v1/items:count", rpc: "CountItems", request: {}, response: { count: "0" } },
  { name: "verb after ** with response_body", method: "GET", path: "/v1/items/a1:labels", rpc: "GetLabels", request: { uid: "a1" }, response: ["x", "y"] },
  { name: "unregistered colon stays in the id", method: "GET", path: "/v1/items/user:123", rpc: "GetItem", request: { uid: "user:123" } },
  { name: "additional binding", method: "GET", path: "/v1/owners/o1/items/i1", rpc: "GetItem", request: { uid: "i1", owner: "o1" } },
  {
    name: "literal suffix after **",
    method: "GET",
    path: "/v1/items/a/b/readme",
    rpc: "GetItemReadme",
    request: { uid: "a/b" },
    response: { uid: "a/b", content: "" },
  },
  {
    name: "patterned variable and verb, body *",
    method: "POST",
    path: "/v1/items/i9:archive",
    body: '{"reason":"old"}',
    rpc: "ArchiveItem",
    request: { name: "items/i9", reason: "old" },
  },
  { name: "custom HTTP method", method: "SEARCH", path: "/v1/items:search", body: '{"query":"q"}', rpc: "SearchItems", request: { query: "q" } },
  { name: "wrong method", method: "PUT", path: `/v1/items/${U}`, body: "{}", status: 405, code: 12 },
  { name: "no implicit HEAD", method: "HEAD", path: "/v1/owners/o/items/i", status: 405 },
  { name: "unknown path under a REST prefix", method: "GET", path: "/v1/nothing", status: 404, code: 5 },
  { name: "delete answers {}", method: "DELETE", path: `/v1/items/${U}?etag=e`, rpc: "DeleteItem", request: { uid: U, etag: "e" }, response: {} },
  // path decoding
  { name: "%2F decoded in **", method: "GET", path: "/v1/items/a%2Fb", rpc: "GetItem", request: { uid: "a/b" } },
  { name: "%2F decoded in a single segment", method: "GET", path: "/v1/owners/o%2Fx/items/i1", rpc: "GetItem", request: { uid: "i1", owner: "o/x" } },
  { name: "UTF-8 escapes", method: "GET", path: "/v1/items/caf%C3%A9", rpc: "GetItem", request: { uid: "café" } },
  { name: "+ is literal in paths", method: "GET", path: "/v1/items/a+b", rpc: "GetItem", request: { uid: "a+b" } },
  { name: "malformed escape", method: "GET", path: "/v1/items/%zz", status: 400, code: 3, field: "path" },
  { name: "empty segment", method: "GET", path: "/v1/items/a//b", status: 400, code: 3, field: "path" },
  { name: "dot segments", method: "GET", path: "/v1/items/a/../b", raw: true, status: 400, code: 3, field: "uid" },
  { name: "escaped colon is not a verb", method: "GET", path: "/v1/items/a%3Alabels", rpc: "GetItem", request: { uid: "a:labels" } },
  // query (docs/rest.md "Requests")
  { name: "proto and JSON names", method: "GET", path: "/v1/items?page_size=10&pageToken=t", rpc: "ListItems", request: { page_size: 10, page_token: "t" } },
  { name: "nested names", method: "GET", path: "/v1/items?filter.descendantsOf=X", rpc: "ListItems", request: { filter: { descendants_of: "X" } } },
  { name: "repeated keys", method: "GET", path: "/v1/items?labels=a&labels=b", rpc: "ListItems", request: { labels: ["a", "b"] } },
  { name: "bad int", method: "GET", path: "/v1/items?page_size=abc", status: 400, code: 3, field: "page_size" },
  { name: "unknown parameter", method: "GET", path: "/v1/items?unknown=1", status: 400, code: 3, field: "unknown" },
  { name: "access_token is unknown", method: "GET", path: "/v1/items?access_token=secret", status: 400, code: 3, field: "access_token" },
  { name: "raw + in a timestamp", method: "GET", path: "/v1/items?since=2024-01-02T03:04:05+01:00", status: 400, code: 3, field: "since" },
  { name: "form decoding", method: "GET", path: "/v1/items?name=a%26b+c", rpc: "ListItems", request: { name: "a&b c" } },
  { name: "enum by name", method: "GET", path: "/v1/items?kind=KIND_A", rpc: "ListItems", request: { kind: "KIND_A" } },
  { name: "malformed query escape", method: "GET", path: "/v1/items?name=%zz", status: 400, code: 3, field: "name" },
  { name: "query names a path field", method: "GET", path: `/v1/items/${U}?uid=b2`, status: 400, code: 3, field: "uid" },
  { name: "query names a body field", method: "POST", path: "/v1/items/p?item.name=y", body: '{"name":"x"}', status: 400, code: 3, field: "item.name" },
  { name: "query with body *", method: "POST", path: "/v1/items/i1:archive?reason=z", body: "{}", status: 400, code: 3, field: "reason" },
  // bodies
  { name: "unknown JSON field", method: "POST", path: "/v1/items/p", body: '{"name":"x","nmae":"y"}', status: 400, code: 3, field: "nmae" },
  { name: "truncated JSON", method: "POST", path: "/v1/items/p", body: '{"name":', status: 400, code: 3, field: "body" },
  { name: "empty body", method: "POST", path: "/v1/items/p", rpc: "CreateItem", request: { parent: "p", item: {} } },
  {
    name: "JSON body on a body-less GET",
    method: "GET",
    path: "/v1/items",
    body: "{}",
    raw: true,
    headers: { "content-type": "application/json", "content-length": "2" },
    status: 400,
    code: 3,
    field: "body",
  },
  { name: "text/plain", method: "POST", path: "/v1/items/p", body: "{}", headers: { "content-type": "text/plain" }, status: 400, code: 3, field: "body" },
  {
    name: "PATCH with an explicit mask",
    method: "PATCH",
    path: `/v1/items/${U}?updateMask=name`,
    body: '{"name":"y","description":"d"}',
    rpc: "UpdateItem",
    request: { item: { uid: U, name: "y", description: "d" }, update_mask: "name" },
  },
  {
    name: "PATCH without a mask",
    method: "PATCH",
    path: `/v1/items/${U}`,
    body: '{"name":"y","description":""}',
    rpc: "UpdateItem",
    request: { item: { uid: U, name: "y" }, update_mask: "description,name" },
  },
  { name: "PATCH uid contradicts the path", method: "PATCH", path: `/v1/items/${U}`, body: '{"uid":"b2"}', status: 400, code: 3, field: "item.uid" },
  {
    name: "form POST on a body-less rule",
    method: "POST",
    path: "/v1/exchange",
    body: "aud=a&aud=b&identity=x",
    headers: FORM,
    rpc: "Exchange",
    request: { aud: ["a", "b"], identity: "x" },
  },
  {
    name: "form fields are checked like query parameters",
    method: "POST",
    path: "/v1/exchange",
    body: "aud=a&nope=1",
    headers: FORM,
    status: 400,
    code: 3,
    field: "nope",
  },
  { name: "body over the cap", method: "POST", path: "/v1/items/p", body: JSON.stringify({ name: "x".repeat(5000) }), status: 429, code: 8 },
];

describe("createRestHandler, end to end", () => {
  it("has a table of at least 40 cases", () => {
    expect(cases.length).toBeGreaterThanOrEqual(40);
  });

  for (const c of cases) {
    it(`${c.name}: ${c.method} ${c.path}`, async () => {
      seen = undefined;
      const res = c.raw ? await sendRaw(c.method, c.path, c.body, c.headers) : await send(c.method, c.path, c.body, c.headers);
      if (c.rpc !== undefined) {
        expect(res.status, res.text).toBe(200);
        expect(res.headers.get("content-type")).toBe("application/json");
        expect({ rpc: lastSeen()?.rpc, request: lastSeen()?.request }).toEqual({ rpc: c.rpc, request: c.request });
        if (c.response !== undefined) expect(JSON.parse(res.text)).toEqual(c.response);
        return;
      }
      expect(res.status, res.text).toBe(c.status);
      expect(lastSeen(), "nothing is called for a rejected request").toBeUndefined();
      if (c.method === "HEAD") return;
      expect(res.headers.get("content-type")).toBe("application/json");
      const body = JSON.parse(res.text);
      expect(body.code).toBe(c.code);
      expect(body.details[0]).toMatchObject({ "@type": "type.googleapis.com/google.rpc.ErrorInfo", domain: "test.example" });
      if (c.field !== undefined) {
        const bad = body.details.find((d: { "@type": string }) => d["@type"] === "type.googleapis.com/google.rpc.BadRequest");
        expect(bad?.fieldViolations?.[0]?.field).toBe(c.field);
      }
    });
  }

  it("leaves paths outside the REST prefixes to the caller (resolves false)", async () => {
    expect((await send("POST", "/trellis.testing.v1.ItemService/GetItem", "{}")).status).toBe(418);
    expect((await send("GET", "/v2/items")).status).toBe(418);
    expect((await send("GET", "/openapi.json")).status).toBe(418); // openApi: false
  });

  it("405 carries Allow and reason METHOD_NOT_ALLOWED; HEAD too", async () => {
    const put = await send("PUT", `/v1/items/${U}`, "{}");
    expect(put.headers.get("allow")).toBe("DELETE, GET, PATCH, POST");
    expect(JSON.parse(put.text).details[0].reason).toBe("METHOD_NOT_ALLOWED");
    expect((await send("HEAD", "/v1/exchange")).headers.get("allow")).toBe("GET, POST");
  });

  it("renders the response: three-digit timestamps, int64 strings, defaults", async () => {
    const res = await send("GET", `/v1/items/${U}`);
    expect(JSON.parse(res.text)).toEqual({
      uid: U,
      name: "",
      description: "",
      createTime: "2026-11-22T10:00:00.000Z",
      labels: ["x", "y"],
      annotations: {},
      parts: [],
      revision: "12",
      partsById: {},
    });
  });

  it("maps every handler error code to its HTTP status, in the Status form", async () => {
    for (const code of Object.values(GrpcCode).map(String)) {
      const res = await send("GET", "/v1/items", undefined, { "x-fail-code": code });
      expect({ code, status: res.status }).toEqual({ code, status: httpStatusOf(Number(code)) });
      const body = JSON.parse(res.text);
      expect(body).toMatchObject({ code: Number(code), message: `Failed: with code ${code}` });
      expect(body.details[0]["@type"]).toBe("type.googleapis.com/google.rpc.ErrorInfo");
    }
  });

  it("answers UNAUTHENTICATED with 401 and WWW-Authenticate: Bearer, never echoing the token", async () => {
    const res = await send("GET", "/v1/items", undefined, { "x-fail": "unauthenticated", authorization: "Bearer s3cr3t-token" });
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toBe("Bearer");
    expect(JSON.parse(res.text)).toMatchObject({ code: 16, details: [{ reason: "TOKEN_MISSING", domain: "test.example" }] });
    expect(res.text).not.toContain("s3cr3t");
    const other = await send("GET", "/v1/items", undefined, { "x-fail-code": "7" });
    expect(other.headers.get("www-authenticate")).toBeNull();
  });

  it("hides unexpected errors behind INTERNAL and hands the cause to onUnexpectedError", async () => {
    unexpected.length = 0;
    const res = await send("GET", "/v1/items", undefined, { "x-fail": "crash" });
    expect(res.status).toBe(500);
    expect(JSON.parse(res.text)).toMatchObject({ code: 13, message: "Internal error" });
    expect(res.text).not.toContain("secret internal detail");
    expect(unexpected).toHaveLength(1);
  });

  it("forwards request headers, authorization included, without hop-by-hop ones", async () => {
    seen = undefined;
    await sendRaw("GET", "/v1/items?page_size=1", undefined, {
      authorization: "Bearer t",
      "x-custom": "v",
      connection: "keep-alive, x-drop-me",
      "x-drop-me": "1",
      te: "trailers",
    });
    const h = lastSeen()?.call.headers as Headers;
    expect(h.get("authorization")).toBe("Bearer t");
    expect(h.get("x-custom")).toBe("v");
    for (const name of ["host", "connection", "x-drop-me", "te", "content-length", "transfer-encoding"]) expect(h.has(name), name).toBe(false);
    expect(lastSeen()?.call.httpMethod).toBe("GET");
    expect(lastSeen()?.call.url).toBe("/v1/items?page_size=1");
  });

  it("aborts the call's signal when the client goes away", async () => {
    seen = undefined;
    const controller = new AbortController();
    const pending = fetch(`${main.base}/v1/items`, { headers: { "x-fail": "wait" }, signal: controller.signal }).catch(() => undefined);
    for (let i = 0; i < 100 && lastSeen()?.rpc !== "ListItems"; i++) await new Promise((r) => setTimeout(r, 10));
    const signal = lastSeen()?.call.signal as AbortSignal;
    expect(signal.aborted).toBe(false);
    controller.abort();
    await pending;
    for (let i = 0; i < 100 && !signal.aborted; i++) await new Promise((r) => setTimeout(r, 10));
    expect(signal.aborted).toBe(true);
  });

  it("refuses a body over the cap: declared (429, connection closed) and streamed without a length", async () => {
    seen = undefined;
    const declared = await sendRaw("POST", "/v1/items/p", "x".repeat(5000), { "content-type": "application/json", "content-length": "5000" });
    expect(declared.status).toBe(429);
    expect(declared.headers.get("connection")).toBe("close");
    expect(JSON.parse(declared.text)).toMatchObject({ code: 8, details: [{ metadata: { limit_bytes: "4096" } }] });
    const chunked = await sendRaw("POST", "/v1/items/p", `{"name":"${"x".repeat(5000)}"}`, {
      "content-type": "application/json",
      "transfer-encoding": "chunked",
    });
    expect(chunked.status).toBe(429);
    expect(lastSeen()).toBeUndefined();
  });
});

describe("createRestHandler options", () => {
  it("serves the generated OpenAPI document by default", async () => {
    const withDoc = await serve({ openApi: undefined });
    try {
      const doc = await fetch(`${withDoc.base}/openapi.json`);
      expect(doc.status).toBe(200);
      expect((await doc.json()).paths["/v1/items"].get.operationId).toBe("ItemService_ListItems");
    } finally {
      withDoc.server.closeAllConnections();
      await new Promise((resolve) => withDoc.server.close(resolve));
    }
  });

  it("leaves CORS to the server: a preflight is an ordinary OPTIONS (405 with Allow)", async () => {
    const res = await fetch(`${main.base}/v1/items/a1`, {
      method: "OPTIONS",
      headers: { origin: "https://app.example", "access-control-request-method": "GET" },
    });
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("DELETE, GET, PATCH, POST");
    expect(res.headers.get("access-control-allow-origin")).toBeNull();
  });

  it("fails at construction on conflicting rules", () => {
    expect(() => createRestHandler({ services: [ItemService, ItemService], errorDomain: "x", invokeUnary: echo })).toThrow(/conflicting HTTP rules/);
  });
});
