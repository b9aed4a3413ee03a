/**
 * Rate limits (src/server/rate-limits.ts) on every door (gRPC, Connect JSON h1 and proto h2,
 * gRPC-web, REST; test/rpc runs again with the fast doors off), with small quotas and a fake
 * clock (only `Date` is faked: the limiter's windows and blocks run on it; the servers'
 * timers run as ever):
 *
 * - a caller's GA reads and writes are separate buckets; over one: RESOURCE_EXHAUSTED, reason
 *   RATE_LIMIT_EXCEEDED, then QuotaFailure and RetryInfo, `Retry-After` and the RateLimit
 *   fields, HTTP 429 on REST and Connect; the window's end refills it;
 * - v2beta1 and v1 are not limited unless the operator says so, and then they are;
 * - the token exchange is limited per peer address, and so are failed authentications (a
 *   peer past them is refused even with a good token until the window ends), on every version.
 */
import type { DescMethodUnary } from "@bufbuild/protobuf";
import { ConnectError, createClient } from "@connectrpc/connect";
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { Groups } from "../../gen/chainguard/platform/iam/groups_v1_pb.js";
import { GroupsService as GroupsV2 } from "../../gen/chainguard/platform/iam/v2/groups_pb.js";
import { GroupsService } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { SecurityTokenService } from "../../gen/chainguard/platform/oidc/oidc_pb.js";
import { ErrorInfoSchema, QuotaFailureSchema, RetryInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { parseServeConfig } from "../../src/server/config.js";
import { DEFAULT_RATE_LIMITS, type RateLimitSettings } from "../../src/server/rate-limits.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { createUserIdentity, identityToken } from "../support/auth.js";
import { type CallOutcome, type CallToken, callDoors } from "../support/call-method.js";
import { exchangeDoors } from "../support/exchange-doors.js";
import { rest } from "../support/rest.js";
import { closeGrpcClients, Code, rpcTransports } from "../support/transports.js";

const SMALL: RateLimitSettings = {
  reads: { points: 3, seconds: 60 },
  writes: { points: 2, seconds: 60 },
  exchange: { points: 2, seconds: 60 },
  failedAuthentications: { points: 3, seconds: 120 },
  versions: ["v2"],
};

let t: TestApp;
let everywhere: TestApp;
beforeAll(async () => {
  vi.useFakeTimers({ toFake: ["Date"] });
  vi.setSystemTime(Date.UTC(2030, 0, 1));
  [t, everywhere] = await Promise.all([startTestApp({ rateLimits: SMALL }), startTestApp({ rateLimits: { ...SMALL, versions: ["v2", "v2beta1", "v1"] } })]);
});
afterAll(async () => {
  closeGrpcClients();
  await Promise.all([t?.close(), everywhere?.close()]);
  vi.useRealTimers();
});
// Each case starts with full buckets: the windows of the case before have ended.
beforeEach(() => {
  vi.setSystemTime(Date.now() + 10 * 60_000);
});

type Door = (typeof callDoors)[number];

async function called(door: Door, app: TestApp, token: CallToken, method: DescMethodUnary, request: object = {}) {
  let headers = new Headers();
  const out: CallOutcome = await door.call(app.url, token, method, request as never, {
    onResponseHeaders: (h) => {
      headers = h;
    },
  });
  return { out, headers, limit: { policy: headers.get("ratelimit-policy"), state: headers.get("ratelimit"), retryAfter: headers.get("retry-after") } };
}

/** The error details in order, and QuotaFailure's and RetryInfo's content, as the door's client sees them. */
async function detailsOf(door: Door, app: TestApp, token: string, method: DescMethodUnary, request: object = {}) {
  if (door.name === "rest") {
    const path = method === GroupsV2.method.listGroups ? "/iam/v2/groups" : undefined;
    if (!path) throw new Error("detailsOf: only ListGroups over REST");
    const res = await rest(app.url, "GET", path, undefined, { authorization: `Bearer ${token}` });
    const details = res.body.details as { "@type": string; violations?: { subject: string; description: string }[]; retryDelay?: string }[];
    return {
      status: res.status,
      types: details.map((d) => d["@type"].replace("type.googleapis.com/", "")),
      violations: details[1]?.violations,
      retryDelay: details[2]?.retryDelay,
    };
  }
  const transport = rpcTransports.find((tr) => tr.name === door.name);
  if (!transport) throw new Error(`no transport ${door.name}`);
  const client = createClient(method.parent, transport.create(app.url, { token })) as unknown as Record<string, (r: object) => Promise<unknown>>;
  const err = await (client[method.localName] as (r: object) => Promise<unknown>)(request).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(ConnectError);
  const e = err as ConnectError;
  const seconds = e.findDetails(RetryInfoSchema)[0]?.retryDelay?.seconds;
  return {
    status: undefined,
    types: (e.details as { type?: string; desc?: { typeName: string } }[]).map((d) => d.type ?? d.desc?.typeName),
    violations: e.findDetails(QuotaFailureSchema)[0]?.violations.map((v) => ({ subject: v.subject, description: v.description })),
    retryDelay: seconds === undefined ? undefined : `${seconds}s`,
    reason: e.findDetails(ErrorInfoSchema)[0]?.reason,
  };
}

describe.each(callDoors.map((door, n) => ({ door, name: door.name, n })))("over $name", ({ door, n }) => {
  let uid: string;
  let token: string;
  beforeAll(async () => {
    uid = await createUserIdentity(t.dataDir, `limited-${n}`);
    token = await identityToken(t.app, uid);
  });

  it("gives a caller's GA reads a bucket of their own; over it, RESOURCE_EXHAUSTED with QuotaFailure, RetryInfo, Retry-After and RateLimit fields", async () => {
    const seen: (string | null)[] = [];
    for (let i = 0; i < 3; i++) {
      const { out, limit } = await called(door, t, token, GroupsV2.method.listGroups);
      expect(out.ok, JSON.stringify(out)).toBe(true);
      expect(limit.policy).toBe('"reads";q=3;w=60');
      seen.push(limit.state);
    }
    expect(seen).toEqual(['"reads";r=2;t=60', '"reads";r=1;t=60', '"reads";r=0;t=60']);

    vi.setSystemTime(Date.now() + 15_000);
    const { out, limit } = await called(door, t, token, GroupsV2.method.listGroups);
    expect(out).toMatchObject({
      ok: false,
      code: Code.ResourceExhausted,
      reason: "RATE_LIMIT_EXCEEDED",
      metadata: { limit: "reads", subject: `identity:${uid}` },
    });
    if (!out.ok) expect(out.message).toBe("Resource exhausted: 3 reads per 60 s per caller; retry in 45 s");
    expect(limit).toEqual({ policy: '"reads";q=3;w=60', state: '"reads";r=0;t=45', retryAfter: "45" });

    const details = await detailsOf(door, t, token, GroupsV2.method.listGroups);
    expect(details).toMatchObject({
      types: ["google.rpc.ErrorInfo", "google.rpc.QuotaFailure", "google.rpc.RetryInfo"],
      violations: [{ subject: `identity:${uid}`, description: "3 reads per 60 s per caller" }],
      retryDelay: "45s",
    });
    if (door.name === "rest") expect(details.status).toBe(429);

    // Writes are another bucket, still full; the window's end refills the reads.
    expect((await called(door, t, token, GroupsV2.method.createGroup, { group: { name: "not mine" } })).limit.state).toBe('"writes";r=1;t=60');
    vi.setSystemTime(Date.now() + 45_000);
    expect((await called(door, t, token, GroupsV2.method.listGroups)).out.ok).toBe(true);
  });

  it("limits writes apart from reads, whatever the write's outcome", async () => {
    for (const [i, group] of [{ name: `org ${n}` }, { name: "Not A Valid Name!" }].entries()) {
      // A write that succeeds, then one refused for its request: calls all the same.
      const { out, limit } = await called(door, t, token, GroupsV2.method.createGroup, { group });
      expect(out.ok).toBe(i === 0);
      expect(limit.state).toBe(`"writes";r=${1 - i};t=60`);
    }
    const { out, limit } = await called(door, t, token, GroupsV2.method.createGroup, { group: { name: "org 3" } });
    expect(out).toMatchObject({ ok: false, code: Code.ResourceExhausted, reason: "RATE_LIMIT_EXCEEDED", metadata: { limit: "writes" } });
    expect(limit.retryAfter).toBe("60");
    expect((await called(door, t, token, GroupsV2.method.listGroups)).out.ok).toBe(true);
  });

  it("leaves v2beta1 and v1 unlimited unless the operator limits them, and then limits them", async () => {
    for (let i = 0; i < 5; i++) {
      for (const method of [GroupsService.method.listGroups, Groups.method.list]) {
        const { out, limit } = await called(door, t, token, method);
        expect(out.ok).toBe(true);
        expect(limit).toEqual({ policy: null, state: null, retryAfter: null });
      }
    }
    const other = await identityToken(everywhere.app, await createUserIdentity(everywhere.dataDir, `everywhere-${n}`));
    for (const method of [GroupsService.method.listGroups, Groups.method.list, GroupsV2.method.listGroups]) {
      expect((await called(door, everywhere, other, method)).out.ok).toBe(true);
    }
    expect((await called(door, everywhere, other, GroupsService.method.listGroups)).out).toMatchObject({ ok: false, code: Code.ResourceExhausted });
    expect((await called(door, everywhere, other, Groups.method.list)).out).toMatchObject({ ok: false, code: Code.ResourceExhausted });
  });

  it("refuses a peer past its failed authentications, on every version, even with a good token, until the window ends", async () => {
    for (let i = 0; i < 3; i++) {
      const { out } = await called(door, t, "not.a.token", GroupsService.method.listGroups);
      expect(out).toMatchObject({ ok: false, code: Code.Unauthenticated });
    }
    for (const method of [GroupsService.method.listGroups, GroupsV2.method.listGroups, Groups.method.list]) {
      const { out, limit } = await called(door, t, token, method);
      expect(out, method.parent.typeName).toMatchObject({
        ok: false,
        code: Code.ResourceExhausted,
        reason: "RATE_LIMIT_EXCEEDED",
        metadata: { limit: "failed_authentications", subject: expect.stringMatching(/^peer:/) },
      });
      expect(limit.policy).toBe('"failed_authentications";q=3;w=120');
      expect(Number(limit.retryAfter)).toBeGreaterThan(0);
    }
    vi.setSystemTime(Date.now() + 120_000);
    expect((await called(door, t, token, GroupsService.method.listGroups)).out.ok).toBe(true);
  });
});

describe.each(exchangeDoors)("the token exchange over $name", (door) => {
  it("is limited per peer address", async () => {
    const request = { aud: [t.url], identity: `${"e".repeat(40)}/0123456789abcdef` };
    for (let i = 0; i < 2; i++) {
      const out = await door.call(t.url, "not.an.idp.token", SecurityTokenService.method.exchange, request);
      expect(out).toMatchObject({ ok: false });
      expect(out.ok === false && out.code).not.toBe(Code.ResourceExhausted);
    }
    const out = await door.call(t.url, "not.an.idp.token", SecurityTokenService.method.exchange, request);
    expect(out).toMatchObject({
      ok: false,
      code: Code.ResourceExhausted,
      reason: "RATE_LIMIT_EXCEEDED",
      metadata: { limit: "exchange", subject: expect.stringMatching(/^peer:/) },
    });
    if (door.name.startsWith("rest")) expect(out).toMatchObject({ status: 429 });
  });
});

describe("Connect's HTTP answer", () => {
  it("is 429 with Retry-After and the RateLimit fields", async () => {
    const token = await identityToken(t.app, await createUserIdentity(t.dataDir, "connect-raw"));
    const send = () =>
      fetch(`${t.url}/chainguard.platform.iam.v2.GroupsService/ListGroups`, {
        method: "POST",
        headers: { "content-type": "application/json", "connect-protocol-version": "1", authorization: `Bearer ${token}` },
        body: "{}",
      });
    for (let i = 0; i < 3; i++) expect((await send()).status).toBe(200);
    const res = await send();
    expect(res.status).toBe(429);
    expect(res.headers.get("retry-after")).toBe("60");
    expect(res.headers.get("ratelimit-policy")).toBe('"reads";q=3;w=60');
    expect(res.headers.get("ratelimit")).toBe('"reads";r=0;t=60');
    expect((await res.json()).code).toBe("resource_exhausted");
  });
});

describe("configuration", () => {
  it("has documented defaults, changed by the config file, TRELLIS_RATE_LIMITS and --rate-limit (in that order)", async () => {
    expect(parseServeConfig([], {}).rateLimits).toEqual(DEFAULT_RATE_LIMITS);
    const fs = await import("node:fs");
    const os = await import("node:os");
    const path = await import("node:path");
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-limits-"));
    try {
      const file = path.join(dir, "trellis.yaml");
      fs.writeFileSync(file, "rate_limits:\n  reads: 10/1\n  writes: off\n  versions: [v2, v2beta1]\n");
      expect(parseServeConfig(["--config", file], {}).rateLimits).toEqual({
        ...DEFAULT_RATE_LIMITS,
        reads: { points: 10, seconds: 1 },
        writes: "off",
        versions: ["v2", "v2beta1"],
      });
      expect(
        parseServeConfig(["--config", file, "--rate-limit", "reads=20/2", "--rate-limit", "versions=none"], { TRELLIS_RATE_LIMITS: "reads=30/3 exchange=5/60" })
          .rateLimits,
      ).toEqual({ ...DEFAULT_RATE_LIMITS, reads: { points: 20, seconds: 2 }, writes: "off", exchange: { points: 5, seconds: 60 }, versions: [] });
      for (const [flag, message] of [
        ["reads", /takes NAME=VALUE/],
        ["reads=0/60", /reads must be POINTS\/SECONDS/],
        ["reads=10/100000", /reads must be POINTS\/SECONDS/],
        ["speed=1/1", /unknown rate limit "speed"/],
        ["versions=v3", /versions must list v2, v2beta1, v1/],
      ] as const) {
        expect(() => parseServeConfig(["--rate-limit", flag], {}), flag).toThrow(message);
      }
      fs.writeFileSync(file, "rate_limits: 5\n");
      expect(() => parseServeConfig(["--config", file], {})).toThrow(/rate_limits must be a mapping/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
