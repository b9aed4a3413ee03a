/**
 * The process under `trellis serve`: the reported request that used to end it (a Connect
 * ListGroups over HTTP/1.1 with `Host: %zz`, no token) and its twins on the other doors are
 * answered while the real process keeps serving; and the process-level handlers
 * (src/server/process-guard.ts) keep serving through what is scoped to one request or
 * connection and stop gracefully, once, when the state is unknown. The handlers are driven
 * through an emitter standing in for `process`: nothing outside can make the real server
 * throw any more, which is the point of the first test.
 */
import { EventEmitter } from "node:events";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import pino from "pino";
import { afterAll, describe, expect, it } from "vitest";
import { installProcessGuards, isConnectionScoped } from "../../src/server/process-guard.js";
import { rawHttp1, rawHttp2 } from "../support/raw-http.js";
import { envelope, grpcWebTrailers, statusOfTrailers } from "../support/raw-rpc.js";
import { startServe } from "../support/serve.js";

const LIST = "/chainguard.platform.iam.v2beta1.GroupsService/ListGroups";
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-guard-"));
afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

describe("trellis serve survives the reported request", () => {
  it("a bad Host or :authority on Connect, REST, gRPC-web and gRPC is refused and the process keeps serving", { timeout: 30_000 }, async () => {
    const server = await startServe(["--addr", "127.0.0.1:0", "--data", dataDir]);
    try {
      // The report, byte for byte.
      const connect = await rawHttp1(server.url, `POST ${LIST} HTTP/1.1\r\nHost: %zz\r\nContent-Type: application/json\r\nContent-Length: 2`, "{}");
      expect(connect.status).toBe(400);
      expect(JSON.parse(connect.body.toString()).code).toBe("invalid_argument");
      const restRes = await rawHttp1(server.url, "GET /iam/v2beta1/groups HTTP/1.1\r\nHost: %zz");
      expect(restRes.status).toBe(400);
      const web = await rawHttp1(
        server.url,
        `POST ${LIST} HTTP/1.1\r\nHost: a.09\r\nContent-Type: application/grpc-web+proto\r\nContent-Length: 5`,
        envelope(Buffer.alloc(0)),
      );
      expect(statusOfTrailers(grpcWebTrailers(web.body)).code).toBe(3);
      const grpc = await rawHttp2(
        server.url,
        { ":method": "POST", ":path": LIST, ":authority": "%zz", "content-type": "application/grpc", te: "trailers" },
        envelope(Buffer.alloc(0)),
      );
      expect(statusOfTrailers(grpc.headers).code).toBe(3);

      const health = await rawHttp1(
        server.url,
        "POST /grpc.health.v1.Health/Check HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 2",
        "{}",
      );
      expect(JSON.parse(health.body.toString()).status).toBe("SERVING");
      expect(server.child.exitCode).toBeNull();
      expect(server.stderr).not.toMatch(/uncaught|unhandled|Invalid URL/i);
    } finally {
      server.child.kill("SIGTERM");
    }
    expect(await server.exited).toBe(0);
  });
});

describe("process-level handlers", () => {
  function setup() {
    const target = new EventEmitter();
    const lines: { level: number; msg: string; suppressed?: number; err?: { message?: string } }[] = [];
    const log = pino({ level: "info" }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    let clock = 1_000_000;
    const fatal: unknown[] = [];
    const remove = installProcessGuards({ log, target, now: () => clock, onFatal: (err) => fatal.push(err) });
    return { target, lines, fatal, remove, tick: (ms: number) => (clock += ms) };
  }

  it("an unhandled rejection is logged and the server keeps serving", () => {
    const { target, lines, fatal } = setup();
    target.emit("unhandledRejection", new Error("forgotten promise"), Promise.resolve());
    expect(fatal).toEqual([]);
    expect(lines).toHaveLength(1);
    expect(lines[0]?.level).toBe(50);
    expect(lines[0]?.err?.message).toBe("forgotten promise");
  });

  it("an uncaught error Node raised for one connection or stream is logged and the server keeps serving", () => {
    const { target, lines, fatal } = setup();
    const writeAfterEnd = Object.assign(new Error("write after end"), { code: "ERR_STREAM_WRITE_AFTER_END" });
    const epipe = Object.assign(new Error("write EPIPE"), { code: "EPIPE", syscall: "write", errno: -32 });
    const h2 = Object.assign(new Error("stream closed"), { code: "ERR_HTTP2_INVALID_STREAM" });
    for (const err of [writeAfterEnd, epipe, h2]) target.emit("uncaughtException", err, "uncaughtException");
    expect(fatal).toEqual([]);
    expect(lines.map((l) => l.level)).toEqual([50, 50, 50]);
  });

  it("any other uncaught exception leaves the state unknown: logged as fatal, and a graceful stop is asked for once", () => {
    const { target, lines, fatal } = setup();
    const bug = new TypeError("Cannot read properties of undefined");
    target.emit("uncaughtException", bug, "uncaughtException");
    target.emit("uncaughtException", new Error("second while stopping"), "uncaughtException");
    expect(fatal).toEqual([bug]);
    expect(lines.map((l) => l.level)).toEqual([60, 50]);
    expect(isConnectionScoped(bug)).toBe(false);
    expect(isConnectionScoped("a string")).toBe(false);
  });

  it("a fault that repeats is written at most 10 lines a second; the rest are counted in the next line", () => {
    const { target, lines, tick } = setup();
    for (let i = 0; i < 25; i++) target.emit("unhandledRejection", new Error(`r${i}`), Promise.resolve());
    expect(lines).toHaveLength(10);
    tick(1000);
    target.emit("unhandledRejection", new Error("later"), Promise.resolve());
    expect(lines).toHaveLength(11);
    expect(lines[10]?.suppressed).toBe(15);
  });

  it("removing the handlers leaves the emitter as it was", () => {
    const { target, remove } = setup();
    remove();
    expect(target.listenerCount("unhandledRejection")).toBe(0);
    expect(target.listenerCount("uncaughtException")).toBe(0);
  });
});
