/**
 * Hostile inputs (docs/security.md "Hostile input") that no well-behaved client sends, so they go raw:
 * invalid UTF-8 inside a protobuf string (T25), prototype-pollution keys (T28), HTTP/1.1
 * request smuggling shapes (T32), and an HTTP/2 rapid-reset flood (T44). Each must be refused
 * cleanly, write nothing, and leave the server serving others.
 */
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import { create, toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CreateGroupRequestSchema } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { expectRejectedAndUnchanged } from "../support/db.js";
import { rest } from "../support/rest.js";

const CREATE = "/chainguard.platform.iam.v2beta1.GroupsService/CreateGroup";

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t.close());

function post(path: string, headers: Record<string, string>, body: Buffer | string) {
  const u = new URL(t.url);
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, method: "POST", path, headers }, (res) => {
      let text = "";
      res.setEncoding("latin1").on("data", (c) => {
        text += c;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** Sends raw bytes on a fresh TCP connection; resolves with the first response line. */
function rawHttp(bytes: string): Promise<string> {
  const u = new URL(t.url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(u.port), u.hostname, () => socket.write(bytes));
    let data = "";
    socket.setEncoding("latin1").on("data", (c) => {
      data += c;
    });
    socket.on("error", reject);
    socket.on("close", () => resolve(data.split("\r\n")[0]));
    setTimeout(() => socket.destroy(), 2000);
  });
}

/** A CreateGroupRequest whose group name bytes are not UTF-8. */
function badUtf8Create(): Buffer {
  const good = Buffer.from(toBinary(CreateGroupRequestSchema, create(CreateGroupRequestSchema, { group: { name: "abcd" } })));
  const at = good.indexOf(Buffer.from("abcd"));
  good[at + 1] = 0xff;
  good[at + 2] = 0xfe;
  return good;
}

const rejectedUnchanged = (fn: () => Promise<{ status: number; body: string }>) =>
  expectRejectedAndUnchanged(t, async () => {
    const res = await fn();
    throw res;
  }) as Promise<{ status: number; body: string }>;

describe("hostile inputs", () => {
  it("T25: a protobuf string that is not UTF-8 is INVALID_ARGUMENT, never stored as U+FFFD", async () => {
    const connect = await rejectedUnchanged(() => post(CREATE, { "content-type": "application/proto" }, badUtf8Create()));
    expect(connect.status).toBe(400);
    expect(JSON.parse(connect.body).code).toBe("invalid_argument");
    const msg = badUtf8Create();
    const framed = Buffer.concat([Buffer.from([0, 0, 0, 0, msg.length]), msg]);
    const web = await rejectedUnchanged(() => post(CREATE, { "content-type": "application/grpc-web+proto" }, framed));
    expect(web.body).toContain("grpc-status: 3");
  });

  it("T28: prototype-pollution keys are unknown fields, and nothing is polluted", async () => {
    const res = await rejectedUnchanged(async () => {
      const r = await rest(t.url, "POST", "/iam/v2beta1/groups", {
        ["__proto__"]: { admin: true },
        constructor: { prototype: { x: 1 } },
        name: "okay",
      });
      return { status: r.status, body: JSON.stringify(r.body) };
    });
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body).details[1].fieldViolations[0].field).toBe("__proto__");
    expect(({} as Record<string, unknown>).admin).toBeUndefined();
    // Sent with the raw text too: JSON.stringify above would drop a literal __proto__ key.
    const raw = await post("/iam/v2beta1/groups", { "content-type": "application/json" }, '{"__proto__":{"admin":true},"name":"okay"}');
    expect(raw.status).toBe(400);
    expect(({} as Record<string, unknown>).admin).toBeUndefined();
  });

  it("T32: Content-Length with Transfer-Encoding, obs-fold and bare LF are 400", async () => {
    expect(await rawHttp("POST /iam/v2beta1/groups HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")).toBe(
      "HTTP/1.1 400 Bad Request",
    );
    expect(await rawHttp("GET /iam/v2beta1/groups HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\n\r\n")).toBe("HTTP/1.1 400 Bad Request");
    expect(await rawHttp("GET /iam/v2beta1/groups HTTP/1.1\nHost: x\n\n")).toBe("HTTP/1.1 400 Bad Request");
  });

  it("T44: an HTTP/2 rapid-reset flood ends that session while other clients are served", { timeout: 40_000 }, async () => {
    const flood = http2.connect(t.url);
    flood.on("error", () => {});
    const closed = new Promise<void>((resolve) => flood.on("close", () => resolve()));
    // GOAWAY arrives before the session closes; a close without it (or no answer within the
    // generous fallback, sized for a loaded 2-core CI box) is a failure.
    const goaway = new Promise<boolean>((resolve) => {
      flood.on("goaway", () => resolve(true));
      flood.on("close", () => resolve(false));
      setTimeout(() => resolve(false), 15_000);
    });
    await new Promise<void>((resolve) => flood.on("connect", () => resolve()));
    for (let i = 0; i < 20_000 && !flood.destroyed && !flood.closed; i++) {
      try {
        const s = flood.request({ ":method": "POST", ":path": CREATE, "content-type": "application/json" });
        s.on("error", () => {});
        s.close(http2.constants.NGHTTP2_CANCEL);
      } catch {
        break; // the session is going away
      }
    }
    const sawGoaway = await goaway;
    flood.destroy();
    await closed;
    expect(sawGoaway).toBe(true);
    const res = await rest(t.url, "GET", "/iam/v2beta1/groups");
    expect(res.status).toBe(200);
  });
});
