/**
 * grpc.health.v1.Health (src/server/health.ts) on a real h2c connect-node server, through the
 * connect-node gRPC client.
 */
import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { Code, ConnectError, createClient, type ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter, createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GroupsService } from "../../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { Health, HealthCheckResponse_ServingStatus as ServingStatus } from "../../../gen/grpc/health/v1/health_pb.js";
import { type PollWait, registerHealth } from "../../../src/server/health.js";
import { registerReflection } from "../../../src/server/reflection.js";

const GROUPS = "chainguard.platform.iam.v2beta1.GroupsService";

let server: http2.Http2Server;
const sessions = new Set<http2.ServerHttp2Session>();
let serving = ServingStatus.SERVING;
let statusCalls = 0;
let health: ReturnType<typeof createClient<typeof Health>>;

// Watch's clock, advanced by hand: `tick()` ends every pending poll wait; an aborted call's
// wait rejects and leaves the set, so `waiting.size` says how many Watch calls are polling.
const waiting = new Set<() => void>();
const manualPoll: PollWait = (signal) =>
  new Promise((resolve, reject) => {
    const done = () => {
      waiting.delete(done);
      resolve(undefined);
    };
    waiting.add(done);
    signal.addEventListener(
      "abort",
      () => {
        waiting.delete(done);
        reject(signal.reason);
      },
      { once: true },
    );
  });
const tick = () => {
  for (const done of [...waiting]) done();
};
/** Lets the event loop turn (I/O included) until `condition` holds; a bound on turns, not on time. */
async function until(condition: () => boolean, what: string): Promise<void> {
  for (let turn = 0; turn < 100_000; turn++) {
    if (condition()) return;
    await new Promise((r) => setImmediate(r));
  }
  throw new Error(`never happened: ${what}`);
}

beforeAll(async () => {
  const routes = (router: ConnectRouter) => {
    // Health first: names registered after it must count as known too.
    registerHealth(
      router,
      () => {
        statusCalls++;
        return serving;
      },
      manualPoll,
    );
    router.service(GroupsService, {});
    registerReflection(router, [GroupsService, Health]);
  };
  server = http2.createServer(connectNodeAdapter({ routes }));
  server.on("session", (s) => {
    sessions.add(s);
    s.on("close", () => sessions.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  health = createClient(Health, createGrpcTransport({ baseUrl }));
});

afterAll(async () => {
  for (const s of sessions) s.destroy();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

async function checkError(service: string): Promise<ConnectError> {
  try {
    await health.check({ service });
  } catch (e) {
    return ConnectError.from(e);
  }
  throw new Error(`Check(${JSON.stringify(service)}) succeeded`);
}

describe("grpc.health.v1.Health", () => {
  it("Check reports the current status for the server and for registered services", async () => {
    serving = ServingStatus.SERVING;
    expect((await health.check({ service: "" })).status).toBe(ServingStatus.SERVING);
    expect((await health.check({ service: GROUPS })).status).toBe(ServingStatus.SERVING);
    expect((await health.check({ service: "grpc.reflection.v1.ServerReflection" })).status).toBe(ServingStatus.SERVING);
    serving = ServingStatus.NOT_SERVING;
    try {
      expect((await health.check({ service: "" })).status).toBe(ServingStatus.NOT_SERVING);
      expect((await health.check({ service: GROUPS })).status).toBe(ServingStatus.NOT_SERVING);
    } finally {
      serving = ServingStatus.SERVING;
    }
  });

  it("Check answers NOT_FOUND for an unknown service", async () => {
    const err = await checkError("no.such.Service");
    expect(err.code).toBe(Code.NotFound);
    expect(err.rawMessage).toContain("no.such.Service");
  });

  it("List reports the server and every registered service", async () => {
    const { statuses } = await health.list({});
    expect(Object.keys(statuses).sort()).toEqual(
      ["", GROUPS, "grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection"].sort(),
    );
    for (const s of Object.values(statuses)) expect(s.status).toBe(ServingStatus.SERVING);
  });

  it("Watch sends the current status, then each change, and stops polling when the client goes away", async () => {
    serving = ServingStatus.SERVING;
    const abort = new AbortController();
    const seen: ServingStatus[] = [];
    const stream = health.watch({ service: "" }, { signal: abort.signal })[Symbol.asyncIterator]();
    try {
      const first = await stream.next();
      seen.push(first.value.status);
      serving = ServingStatus.NOT_SERVING;
      await until(() => waiting.size === 1, "Watch waits for its next poll");
      tick();
      const second = await stream.next();
      seen.push(second.value.status);
      serving = ServingStatus.SERVING;
      await until(() => waiting.size === 1, "Watch waits for its next poll");
      tick();
      const third = await stream.next();
      seen.push(third.value.status);
    } finally {
      serving = ServingStatus.SERVING;
      abort.abort();
    }
    expect(seen).toEqual([ServingStatus.SERVING, ServingStatus.NOT_SERVING, ServingStatus.SERVING]);
    await expect(stream.next()).rejects.toMatchObject({ code: Code.Canceled });

    // The server side noticed: its wait ended with the call, and ticks poll nothing more.
    await until(() => waiting.size === 0, "the server's Watch ends when the client goes");
    const before = statusCalls;
    tick();
    tick();
    await new Promise((r) => setImmediate(r));
    expect(statusCalls).toBe(before);
  });

  it("Watch sends SERVICE_UNKNOWN for an unknown service without ending the call", async () => {
    const abort = new AbortController();
    const stream = health.watch({ service: "no.such.Service" }, { signal: abort.signal })[Symbol.asyncIterator]();
    try {
      const first = await stream.next();
      expect(first.done).toBe(false);
      expect(first.value.status).toBe(ServingStatus.SERVICE_UNKNOWN);
      // Still open after a few polls: the next read does not complete.
      const next = stream.next();
      let answered = false;
      next.then(
        () => {
          answered = true;
        },
        () => {},
      );
      for (let poll = 0; poll < 3; poll++) {
        await until(() => waiting.size === 1, "Watch waits for its next poll");
        tick(); // ends the wait at once (waiting.size is 0 until Watch polls again)
      }
      await until(() => waiting.size === 1, "Watch waits for its next poll");
      expect(answered).toBe(false);
      next.catch(() => {}); // rejected by the abort below
    } finally {
      abort.abort();
    }
  });
});
