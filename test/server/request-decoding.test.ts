/**
 * Request bodies that decode to something other than what the client sent are refused on every
 * door, never stored: invalid UTF-8 inside a JSON string (a lenient decoder would store
 * U+FFFD), a JSON object with a key twice (JSON.parse would keep the last), and a compressed
 * body that does not decompress (the client's bytes, so INVALID_ARGUMENT, not INTERNAL).
 *
 * Two servers: the default one, whose Connect unary calls take the fast path
 * (src/server/fast-unary/), and one with it off, where connect-node serves them. Each case is
 * sent raw on HTTP/1.1 and h2 where the door speaks both, and leaves the database unchanged.
 */
import { brotliCompressSync, gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "../support/app.js";
import { defaultToken } from "../support/auth.js";
import { snapshotDb } from "../support/db.js";
import { type Door, type HeaderPairs, type Outcome, outcomeOf, rawRequest } from "../support/doors.js";
import { envelope } from "../support/raw-rpc.js";

const CREATE = "/chainguard.platform.iam.v2beta1.GroupsService/CreateGroup";
const LIST = "/chainguard.platform.iam.v2beta1.GroupsService/ListGroups";

let fast: TestApp;
let slow: TestApp;
beforeAll(async () => {
  fast = await startTestApp();
  slow = await startTestApp({}, {}, { fastUnary: false });
});
afterAll(async () => {
  await fast?.close();
  await slow?.close();
});

interface Case {
  readonly name: string;
  readonly door: Door;
  readonly h2: boolean;
  readonly server: () => TestApp;
  /** The request for a JSON body (already compressed where the case says so). */
  readonly send: (t: TestApp, json: Buffer) => Promise<Outcome>;
}

const auth = (t: TestApp): [string, string] => ["authorization", `Bearer ${defaultToken(t.url)}`];

function connectCase(server: () => TestApp, label: string, h2: boolean, extra: HeaderPairs = []): Case {
  return {
    name: `connect json ${h2 ? "h2" : "http/1.1"} (${label})`,
    door: "connect",
    h2,
    server,
    send: async (t, json) =>
      outcomeOf("connect", await rawRequest(t.url, { h2, path: CREATE, headers: [auth(t), ["content-type", "application/json"], ...extra], body: json })),
  };
}

/** gRPC (h2) or gRPC-web (HTTP/1.1) with `+json`: always connect-node's. */
function envelopedCase(door: "grpc" | "grpc-web", h2: boolean, compressed = false): Case {
  return {
    name: `${door}+json ${h2 ? "h2" : "http/1.1"}`,
    door,
    h2,
    server: () => fast,
    send: async (t, json) => {
      const framed = envelope(json);
      if (compressed) framed[0] = 1;
      const headers: HeaderPairs = [
        auth(t),
        ["content-type", `application/${door}+json`],
        ...(door === "grpc" ? ([["te", "trailers"]] as const) : []),
        ...(compressed ? ([["grpc-encoding", "gzip"]] as const) : []),
      ];
      return outcomeOf(door, await rawRequest(t.url, { h2, path: CREATE, headers, body: framed }));
    },
  };
}

const restCase = (h2: boolean, extra: HeaderPairs = []): Case => ({
  name: `rest ${h2 ? "h2" : "http/1.1"}`,
  door: "rest",
  h2,
  server: () => fast,
  send: async (t, json) =>
    outcomeOf(
      "rest",
      await rawRequest(t.url, { h2, path: "/iam/v2beta1/groups", headers: [auth(t), ["content-type", "application/json"], ...extra], body: json }),
    ),
});

const JSON_DOORS: Case[] = [
  connectCase(() => fast, "fast path", false),
  connectCase(() => fast, "fast path", true),
  connectCase(() => slow, "connect-node", false),
  connectCase(() => slow, "connect-node", true),
  envelopedCase("grpc", true),
  envelopedCase("grpc-web", false),
  envelopedCase("grpc-web", true),
  restCase(false),
  restCase(true),
];

/** Sends and asserts the database did not change; returns what the door answered. */
async function refusedUnchanged(c: Case, body: Buffer): Promise<Outcome> {
  const t = c.server();
  const before = await snapshotDb(t);
  const out = await c.send(t, body);
  expect(await snapshotDb(t), "a refused request changed the database").toBe(before);
  return out;
}

/** `{"group": {"name": …, "description": "ab<bytes>cd"}}` as raw bytes (REST's body is the group itself). */
function groupWithDescriptionBytes(door: Door, bytes: number[]): Buffer {
  const inner = Buffer.concat([Buffer.from('{"name":"utf8 probe","description":"ab'), Buffer.from(bytes), Buffer.from('cd"}')]);
  return door === "rest" ? inner : Buffer.concat([Buffer.from('{"group":'), inner, Buffer.from("}")]);
}

describe("invalid UTF-8 inside a JSON string", () => {
  // A lone continuation byte, an overlong encoding of "/", a surrogate half encoded in UTF-8,
  // and a truncated 3-byte sequence: each one a lenient decoder turns into U+FFFD.
  const BAD: number[][] = [[0xff], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xe2, 0x82]];
  it.each(JSON_DOORS)("is INVALID_ARGUMENT with ErrorInfo on $name", async (c) => {
    for (const bytes of BAD) {
      const out = await refusedUnchanged(c, groupWithDescriptionBytes(c.door, bytes));
      expect(out.code, `${c.name} ${bytes}`).toBe(3);
      expect(out.reason).toBe("INVALID_ARGUMENT");
      expect(out.message).toMatch(/UTF-8/);
    }
  });

  it.each(JSON_DOORS)("a lone surrogate written as a \\u escape (valid bytes, invalid text) is refused too on $name", async (c) => {
    const inner = '{"name":"utf8 probe","description":"ab\\ud800cd"}';
    const out = await refusedUnchanged(c, Buffer.from(c.door === "rest" ? inner : `{"group":${inner}}`));
    expect(out.code, out.message).toBe(3);
    expect(out.reason).toBe("INVALID_ARGUMENT");
  });

  it.each(JSON_DOORS)("still takes well-formed multi-byte text on $name", async (c) => {
    const t = c.server();
    const out = await c.send(t, groupWithDescriptionBytes(c.door, [...Buffer.from("é ü 漢 😀")]));
    expect(out.code, out.message).toBe(0);
    const json = c.door === "grpc" || c.door === "grpc-web" ? undefined : JSON.parse(out.text);
    if (json) expect(json.description).toBe("abé ü 漢 😀cd");
  });
});

describe("a JSON object with the same key twice", () => {
  it.each(JSON_DOORS)("is INVALID_ARGUMENT naming the key on $name", async (c) => {
    const inner = '{"name":"first","description":"x","name":"second"}';
    const body = Buffer.from(c.door === "rest" ? inner : `{"group":${inner}}`);
    const out = await refusedUnchanged(c, body);
    expect(out.code).toBe(3);
    expect(out.reason).toBe("INVALID_ARGUMENT");
    expect(out.message).toContain('duplicate object key "name"');
  });

  it.each(JSON_DOORS)("is refused at the top level and when one copy is spelled with an escape on $name", async (c) => {
    const top = c.door === "rest" ? '{"name":"a","name":"b"}' : '{"group":{"name":"a"},"group":{"name":"b"}}';
    expect((await refusedUnchanged(c, Buffer.from(top))).code).toBe(3);
    const escaped = c.door === "rest" ? '{"name":"a","\\u006eame":"b"}' : '{"group":{"name":"a","\\u006eame":"b"}}';
    const out = await refusedUnchanged(c, Buffer.from(escaped));
    expect(out.code).toBe(3);
    expect(out.message).toContain('duplicate object key "name"');
  });
});

describe("a JSON key twice on REST", () => {
  it("is named in a `body` violation, even when the key holds a quote or a backslash", async () => {
    for (const key of ["name", 'a"b', "a\\b"]) {
      const k = JSON.stringify(key);
      const out = await refusedUnchanged(restCase(false), Buffer.from(`{${k}:"x",${k}:"y"}`));
      expect(out.code).toBe(3);
      expect(out.fields).toEqual(["body"]);
      expect(out.message).toBe(`Invalid argument: body: duplicate object key ${k}`);
    }
  });
});

describe("a compressed body that does not decompress", () => {
  const json = Buffer.from('{"pageSize": 1}');
  const good = gzipSync(json);
  /** Not gzip at all, cut short, and with a wrong CRC (last 8 bytes: CRC32, size). */
  const CORRUPT: Record<string, Buffer> = {
    "not gzip": Buffer.from("definitely not gzip"),
    truncated: good.subarray(0, good.length - 6),
    "bad crc": Buffer.concat([good.subarray(0, good.length - 8), Buffer.from([1, 2, 3, 4]), good.subarray(good.length - 4)]),
    "bad deflate data": Buffer.concat([good.subarray(0, 10), Buffer.from([0xff, 0xff, 0xff, 0xff]), good.subarray(14)]),
  };

  const listCase = (server: () => TestApp, label: string, h2: boolean): Case => ({
    name: `connect json ${h2 ? "h2" : "http/1.1"} (${label})`,
    door: "connect",
    h2,
    server,
    send: async (t, body) =>
      outcomeOf(
        "connect",
        await rawRequest(t.url, {
          h2,
          path: LIST,
          headers: [auth(t), ["content-type", "application/json"], ["content-encoding", "gzip"]],
          body,
        }),
      ),
  });
  const envelopedList = (door: "grpc" | "grpc-web", h2: boolean, server: () => TestApp): Case => ({
    name: `${door}+proto ${h2 ? "h2" : "http/1.1"}, grpc-encoding gzip`,
    door,
    h2,
    server,
    send: async (t, body) => {
      const framed = envelope(body);
      framed[0] = 1; // the compressed flag
      const headers: HeaderPairs = [
        auth(t),
        ["content-type", `application/${door}`],
        ["grpc-encoding", "gzip"],
        ...(door === "grpc" ? ([["te", "trailers"]] as const) : []),
      ];
      return outcomeOf(door, await rawRequest(t.url, { h2, path: LIST, headers, body: framed }));
    },
  });
  const DOORS: Case[] = [
    listCase(() => fast, "fast path", false),
    listCase(() => fast, "fast path", true),
    listCase(() => slow, "connect-node", false),
    listCase(() => slow, "connect-node", true),
    envelopedList("grpc", true, () => fast),
    envelopedList("grpc", true, () => slow),
    envelopedList("grpc-web", false, () => fast),
    envelopedList("grpc-web", true, () => slow),
  ];

  it.each(DOORS)("is INVALID_ARGUMENT with ErrorInfo on $name", async (c) => {
    for (const [kind, body] of Object.entries(CORRUPT)) {
      // ListGroups writes nothing; the gzip case on CreateGroup below covers the database.
      const out = await c.send(c.server(), c.door === "connect" ? body : Buffer.from(body));
      expect(out.code, `${c.name}, ${kind}: ${out.message}`).toBe(3);
      expect(out.reason).toBe("INVALID_ARGUMENT");
      expect(out.errorInfoFirst).toBe(true);
      expect(out.message).toContain("does not decompress");
      if (c.door === "connect") expect(out.status).toBe(400);
    }
  });

  it("a brotli body that does not decompress is INVALID_ARGUMENT too (Connect, both paths)", async () => {
    const br = brotliCompressSync(json);
    for (const server of [() => fast, () => slow]) {
      for (const body of [br.subarray(0, br.length - 3), Buffer.from("not brotli at all")]) {
        const t = server();
        const res = await rawRequest(t.url, {
          h2: false,
          path: LIST,
          headers: [auth(t), ["content-type", "application/json"], ["content-encoding", "br"]],
          body,
        });
        const out = outcomeOf("connect", res);
        expect(out.code, out.message).toBe(3);
        expect(out.status).toBe(400);
        expect(out.reason).toBe("INVALID_ARGUMENT");
      }
    }
  });

  it.each(DOORS)("a well-formed gzip body is still served on $name", async (c) => {
    const body = c.door === "connect" ? good : gzipSync(Buffer.alloc(0));
    const out = await c.send(c.server(), body);
    expect(out.code, out.message).toBe(0);
  });

  it("a corrupt gzip CreateGroup writes nothing (Connect, gRPC-web)", async () => {
    for (const c of [connectCase(() => fast, "fast path", false, [["content-encoding", "gzip"]]), envelopedCase("grpc-web", false, true)]) {
      const out = await refusedUnchanged(c, CORRUPT.truncated);
      expect(out.code, c.name).toBe(3);
    }
  });

  it("REST decompresses nothing: a gzip body, corrupt or not, is INVALID_ARGUMENT (400) on `body`", async () => {
    for (const h2 of [false, true]) {
      for (const body of [good, CORRUPT.truncated]) {
        const out = await refusedUnchanged(restCase(h2, [["content-encoding", "gzip"]]), body);
        expect(out.status).toBe(400);
        expect(out.code).toBe(3);
        expect(out.reason).toBe("INVALID_ARGUMENT");
        expect(out.fields).toContain("body");
        expect(out.message).toContain('content encoding "gzip"');
      }
    }
    // identity is no encoding at all
    const plain = await restCase(false, [["content-encoding", "identity"]]).send(fast, Buffer.from('{"name":"identity probe"}'));
    expect(plain.code, plain.message).toBe(0);
  });
});
