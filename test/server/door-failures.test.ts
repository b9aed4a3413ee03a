/**
 * No request can stop the server, on every door, with the fast unary path on and off:
 *
 * - A malformed authority (`Host: %zz` over HTTP/1.1, `:authority: %zz` over h2, and the
 *   other shapes `new URL` refuses) used to throw out of the dispatcher and end the process.
 *   It is the client's error: 400 with ErrorInfo INVALID_AUTHORITY on REST and the plain GET
 *   documents, INVALID_ARGUMENT with ErrorInfo on gRPC, gRPC-web and Connect (health and
 *   reflection included), nothing written, and the server keeps serving.
 * - A failure outside the call pipeline is INTERNAL (with ErrorInfo) for that request alone,
 *   written in its own protocol, and logged: a throw in the dispatcher before any door (a
 *   dispatch step, test/support/seams.ts) and an answer that cannot be written (a response
 *   header Node refuses, set by a call hook in the handler's place) — the second is the promise the
 *   fast doors used to leave without a `.catch`, and the write connect-node only printed.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { CreateGroupRequestSchema } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { HealthCheckResponse_ServingStatus } from "../../gen/grpc/health/v1/health_pb.js";
import { ServerReflectionRequestSchema } from "../../gen/grpc/reflection/v1/reflection_pb.js";
import { connectRoutes } from "../../src/server/connect-door.js";
import { registerHealth } from "../../src/server/health.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { snapshotDb } from "../support/db.js";
import { type RawResponse, rawHttp1, rawHttp2 } from "../support/raw-http.js";
import { GrpcCode } from "../../src/errors/codes.js";
import { connectCode, envelope, grpcWebTrailers, statusOfTrailers } from "../support/raw-rpc.js";

// The faults below go in through the factories the server is built from (test/support/seams.ts).
vi.mock(import("../../src/server/call-pipeline.js"), async (original) => (await import("../support/seams.js")).withCallHook(await original()));
vi.mock(import("../../src/server/front-door.js"), async (original) => (await import("../support/seams.js")).withDispatchStep(await original()));

const CREATE = "/chainguard.platform.iam.v2beta1.GroupsService/CreateGroup";
const HEALTH_CHECK = "/grpc.health.v1.Health/Check";
const REFLECTION = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo";
const ORIGIN = "https://app.example.test";

type Dialect = "rest" | "connect" | "grpc" | "grpc-web";

interface Request {
  readonly method: string;
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body: Buffer;
}

interface Door {
  readonly name: string;
  readonly dialect: Dialect;
  readonly h2: boolean;
  /** Passes through the call pipeline (so a before-call hook runs for it). */
  readonly pipeline: boolean;
  request(token: string, name: string): Request;
}

const json = (value: unknown) => Buffer.from(JSON.stringify(value));
const createProto = (name: string) => Buffer.from(toBinary(CreateGroupRequestSchema, create(CreateGroupRequestSchema, { group: { name } })));
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

const restCreate = (token: string, name: string): Request => ({
  method: "POST",
  path: "/iam/v2beta1/groups",
  headers: { "content-type": "application/json", ...bearer(token) },
  body: json({ name }),
});
const connectCreate = (token: string, name: string): Request => ({
  method: "POST",
  path: CREATE,
  headers: { "content-type": "application/json", ...bearer(token) },
  body: json({ group: { name } }),
});
const grpcWebCreate = (token: string, name: string): Request => ({
  method: "POST",
  path: CREATE,
  headers: { "content-type": "application/grpc-web+proto", ...bearer(token) },
  body: envelope(createProto(name)),
});
const grpcCreate = (token: string, name: string): Request => ({
  method: "POST",
  path: CREATE,
  headers: { "content-type": "application/grpc", te: "trailers", ...bearer(token) },
  body: envelope(createProto(name)),
});

const DOORS: readonly Door[] = [
  { name: "REST over HTTP/1.1", dialect: "rest", h2: false, pipeline: false, request: restCreate },
  { name: "REST over HTTP/2", dialect: "rest", h2: true, pipeline: false, request: restCreate },
  { name: "Connect over HTTP/1.1", dialect: "connect", h2: false, pipeline: true, request: connectCreate },
  { name: "Connect over HTTP/2", dialect: "connect", h2: true, pipeline: true, request: connectCreate },
  { name: "gRPC-web over HTTP/1.1", dialect: "grpc-web", h2: false, pipeline: true, request: grpcWebCreate },
  { name: "gRPC-web over HTTP/2", dialect: "grpc-web", h2: true, pipeline: true, request: grpcWebCreate },
  { name: "gRPC over HTTP/2", dialect: "grpc", h2: true, pipeline: true, request: grpcCreate },
  {
    name: "health over gRPC",
    dialect: "grpc",
    h2: true,
    pipeline: false,
    request: () => ({ method: "POST", path: HEALTH_CHECK, headers: { "content-type": "application/grpc", te: "trailers" }, body: envelope(Buffer.alloc(0)) }),
  },
  {
    name: "reflection over gRPC",
    dialect: "grpc",
    h2: true,
    pipeline: false,
    request: () => ({
      method: "POST",
      path: REFLECTION,
      headers: { "content-type": "application/grpc", te: "trailers" },
      body: envelope(
        Buffer.from(toBinary(ServerReflectionRequestSchema, create(ServerReflectionRequestSchema, { messageRequest: { case: "listServices", value: "" } }))),
      ),
    }),
  },
  {
    name: "the issuer's JWKS over HTTP/1.1",
    dialect: "rest",
    h2: false,
    pipeline: false,
    request: () => ({ method: "GET", path: "/.well-known/jwks.json", headers: {}, body: Buffer.alloc(0) }),
  },
  {
    name: "a CORS preflight over HTTP/1.1",
    dialect: "rest",
    h2: false,
    pipeline: false,
    request: () => ({
      method: "OPTIONS",
      path: "/iam/v2beta1/groups",
      headers: { origin: ORIGIN, "access-control-request-method": "POST" },
      body: Buffer.alloc(0),
    }),
  },
];

/** Sends `r` through `door` naming `authority` (none at all: an HTTP/1.0 request without Host). */
function send(t: TestApp, door: Door, r: Request, authority: string | undefined, extra: Record<string, string> = {}): Promise<RawResponse> {
  const headers = { ...r.headers, ...extra };
  if (door.h2) {
    return rawHttp2(t.url, { ":method": r.method, ":path": r.path, ...(authority === undefined ? {} : { ":authority": authority }), ...headers }, r.body);
  }
  const lines = [`${r.method} ${r.path} HTTP/1.${authority === undefined ? 0 : 1}`];
  if (authority !== undefined) lines.push(`host: ${authority}`);
  for (const [k, v] of Object.entries(headers)) lines.push(`${k}: ${v}`);
  lines.push(`content-length: ${r.body.length}`);
  return rawHttp1(t.url, lines.join("\r\n"), r.body);
}

/** The status code (gRPC numbering) and ErrorInfo reason of an error answer in `dialect`. */
function errorOf(dialect: Dialect, res: RawResponse): { code: number; reason: string | undefined; httpStatus: number } {
  if (dialect === "grpc" || dialect === "grpc-web") {
    const trailers = dialect === "grpc" ? res.headers : grpcWebTrailers(res.body);
    const { code, details } = statusOfTrailers(trailers);
    return { code, reason: details?.info?.reason, httpStatus: res.status };
  }
  const body = JSON.parse(res.body.toString("utf8"));
  const first = body.details?.[0];
  if (dialect === "rest") {
    expect(first?.["@type"]).toBe("type.googleapis.com/google.rpc.ErrorInfo");
    return { code: body.code, reason: first?.reason, httpStatus: res.status };
  }
  expect(first?.type).toBe("google.rpc.ErrorInfo");
  return { code: connectCode(body.code), reason: fromBinary(ErrorInfoSchema, Buffer.from(first.value, "base64")).reason, httpStatus: res.status };
}

/** A health check over Connect and a create over REST both succeed: the server is up and writing. */
async function expectServing(t: TestApp): Promise<void> {
  const health = await rawHttp1(t.url, `POST ${HEALTH_CHECK} HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: 2`, "{}");
  expect(health.status).toBe(200);
  expect(JSON.parse(health.body.toString()).status).toBe("SERVING");
}

for (const fastUnary of [true, false]) {
  const mode = fastUnary ? "fast path on" : "fast path off";

  describe(`door failures (${mode})`, () => {
    let t: TestApp;
    const logLines: { level: number; msg: string; path?: string; err?: { message?: string } }[] = [];
    beforeAll(async () => {
      const sink = { write: (line: string) => void logLines.push(JSON.parse(line)) };
      t = await startTestApp(
        { corsOrigins: [ORIGIN] },
        {},
        {
          fastUnary,
          log: pino({ level: "error" }, sink),
          dispatchStep(req) {
            if (req.headers["x-test-fault"] === "dispatch") throw new Error("injected dispatcher fault");
          },
          async callHook(_method, context) {
            // Headers Node refuses when the answer is written, after the handler has returned:
            // a control character in a value (HTTP/1.1), a connection-specific header (HTTP/2).
            if (context.requestHeader.get("x-test-fault") === "response-header") {
              context.responseHeader.set("x-fault", "\u0001");
              context.responseHeader.set("transfer-encoding", "chunked");
            }
          },
        },
      );
    });
    afterAll(async () => t.close());

    describe(`a malformed authority is the client's error on every door (${mode})`, () => {
      for (const door of DOORS) {
        it(`${door.name}: Host/:authority %zz is ${door.dialect === "rest" ? "400" : "INVALID_ARGUMENT"} with ErrorInfo, writes nothing, and the server keeps serving (${mode})`, async () => {
          const before = await snapshotDb(t);
          const res = await send(t, door, door.request(t.token, "bad authority"), "%zz");
          const error = errorOf(door.dialect, res);
          expect(error.code).toBe(GrpcCode.InvalidArgument);
          expect(error.reason).toBe("INVALID_AUTHORITY");
          expect(error.httpStatus).toBe(door.dialect === "grpc" || door.dialect === "grpc-web" ? 200 : 400);
          expect(await snapshotDb(t)).toBe(before);
          await expectServing(t);
        });
      }

      it(`a request that names no host at all (HTTP/1.0 without Host) is refused on every HTTP/1.1 door (${mode})`, async () => {
        for (const door of DOORS.filter((d) => !d.h2)) {
          const before = await snapshotDb(t);
          const error = errorOf(door.dialect, await send(t, door, door.request(t.token, "no host"), undefined));
          expect(error.code, door.name).toBe(GrpcCode.InvalidArgument);
          expect(error.reason, door.name).toBe("INVALID_AUTHORITY");
          expect(await snapshotDb(t)).toBe(before);
        }
        await expectServing(t);
      });

      it(`every shape the URL parser refuses is refused, and well-formed ones are served (${mode})`, async () => {
        const connect = DOORS.find((d) => d.name === "Connect over HTTP/1.1") as Door;
        const grpc = DOORS.find((d) => d.name === "gRPC over HTTP/2") as Door;
        // "xn--zz" (a label that is not valid punycode) is refused only where the runtime's URL
        // parser refuses it: Node 20's does, Node 24's does not. Either way no door throws.
        const urlRefusesPunycode = !URL.canParse("http://xn--zz/");
        const bad = [
          "%zz",
          "a.09",
          "1.2.3.999",
          "host:99999",
          ...(urlRefusesPunycode ? ["xn--zz"] : []),
          "[::1",
          "a@b",
          "a/b",
          "a?b",
          "a#b",
          "a\\b",
          "",
          "h".repeat(400),
        ];
        for (const authority of bad) {
          for (const door of [connect, grpc]) {
            const before = await snapshotDb(t);
            const res = await send(t, door, door.request(t.token, "bad shape"), authority);
            // nghttp2 itself resets a stream whose :authority holds characters outside the
            // RFC 3986 authority set (or none at all) before Node sees the request.
            // The nghttp2 of Node 24 also resets one holding userinfo ('@'); Node 20's passes it on.
            if (door.h2 && (/^$|[/?#\\]/.test(authority) || (authority.includes("@") && res.status === 0))) {
              expect(res.status, JSON.stringify(authority)).toBe(0);
              expect(await snapshotDb(t)).toBe(before);
              continue;
            }
            const error = errorOf(door.dialect, res);
            expect(error.code, `${door.name} ${JSON.stringify(authority)} ${res.status}`).toBe(GrpcCode.InvalidArgument);
            expect(await snapshotDb(t)).toBe(before);
          }
        }
        const good = ["localhost", "127.0.0.1:1", "[::1]:8080", "example.com.", "Example.COM:443", "a_b-c~d", ...(urlRefusesPunycode ? [] : ["xn--zz"])];
        for (const [i, authority] of good.entries()) {
          const res = await send(t, connect, connect.request(t.token, `good host ${fastUnary ? "f" : "s"}${i}`), authority);
          expect(res.status, authority).toBe(200);
          const viaGrpc = await send(t, grpc, grpc.request(t.token, `good grpc ${fastUnary ? "f" : "s"}${i}`), authority);
          expect(statusOfTrailers(viaGrpc.headers).code, authority).toBe(0);
        }
      });
    });

    describe(`a failure outside the call pipeline is INTERNAL for that request alone (${mode})`, () => {
      for (const door of DOORS) {
        it(`${door.name}: a throw in the dispatcher is a logged INTERNAL with ErrorInfo, and the server keeps serving (${mode})`, async () => {
          const before = await snapshotDb(t);
          const from = logLines.length;
          const res = await send(t, door, door.request(t.token, "dispatch fault"), "localhost", { "x-test-fault": "dispatch" });
          const error = errorOf(door.dialect, res);
          expect(error.code).toBe(GrpcCode.Internal);
          expect(error.reason).toBe("INTERNAL");
          expect(error.httpStatus).toBe(door.dialect === "grpc" || door.dialect === "grpc-web" ? 200 : 500);
          expect(await snapshotDb(t)).toBe(before);
          const logged = logLines.slice(from).filter((l) => l.msg === "request failed outside the call pipeline");
          expect(logged).toHaveLength(1);
          expect(logged[0]?.err?.message).toBe("injected dispatcher fault");
          expect(logged[0]?.path).toBe(door.request(t.token, "").path);
          await expectServing(t);
        });
      }

      for (const door of DOORS.filter((d) => d.pipeline)) {
        it(`${door.name}: an answer that cannot be written is a logged INTERNAL with ErrorInfo, and the server keeps serving (${mode})`, async () => {
          const from = logLines.length;
          const res = await send(
            t,
            door,
            door.request(t.token, `unwritable ${door.name.replace(/[^a-z]/gi, "").toLowerCase()} ${fastUnary ? "f" : "s"}`),
            "localhost",
            {
              "x-test-fault": "response-header",
            },
          );
          const error = errorOf(door.dialect, res);
          expect(error.code).toBe(GrpcCode.Internal);
          expect(error.reason).toBe("INTERNAL");
          expect(res.headers["x-fault"]).toBeUndefined();
          const logged = logLines.slice(from).filter((l) => l.msg === "request failed outside the call pipeline");
          expect(logged).toHaveLength(1);
          await expectServing(t);
        });
      }
    });
  });
}

describe("connect-node's door on its own, behind the dispatcher's authority check", () => {
  it("a bad or missing authority that reaches connect-node's request conversion is that request's failure, not a throw", async () => {
    const failures: unknown[] = [];
    const door = connectRoutes({ routes: (router) => registerHealth(router, () => HealthCheckResponse_ServingStatus.SERVING) }).door({
      onFailure(_req, res, err) {
        failures.push(err);
        res.writeHead(500);
        res.end();
      },
      onUnknownPath(_req, res) {
        res.writeHead(404);
        res.end();
      },
    });
    // A bare HTTP/1.1 server: no dispatcher in front, so connect-node sees the Host as sent.
    const server = http.createServer((req, res) => door(req, res));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const check = `POST ${HEALTH_CHECK} HTTP/1.1\r\ncontent-type: application/json\r\ncontent-length: 2`;
      expect((await rawHttp1(url, `${check}\r\nhost: %zz`, "{}")).status).toBe(500);
      expect((await rawHttp1(url, check.replace("HTTP/1.1", "HTTP/1.0"), "{}")).status).toBe(500);
      expect(failures.map((e) => (e as Error).message)).toEqual([
        "Invalid URL",
        "[internal] unable to determine request authority from Node.js server request",
      ]);
      const fine = await rawHttp1(url, `${check}\r\nhost: localhost`, "{}");
      expect(JSON.parse(fine.body.toString()).status).toBe("SERVING");
    } finally {
      server.close();
    }
  });
});
