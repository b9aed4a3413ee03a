/**
 * The fast path's HandlerContext keeps connect's deadline contract (src/server/fast-unary/
 * shared.ts createLeanContext): `timeoutMs()` is the time left until the request's deadline,
 * and a handler that reads `signal` sees it abort with DEADLINE_EXCEEDED at that instant —
 * while a call nobody listens to arms no timer at all. Fake timers drive the clock.
 */
import { EventEmitter } from "node:events";
import type http from "node:http";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { GroupsService } from "../../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { createLeanContext, parseDeadline } from "../../../src/server/fast-unary/shared.js";
import { parseTimeout } from "@connectrpc/connect/protocol-grpc";

const method = GroupsService.method.getGroup;

function context(deadline: number | undefined) {
  const req = { headers: { host: "trellis.test" }, url: "/x", socket: {} } as unknown as http.IncomingMessage;
  const res = new EventEmitter() as unknown as http.ServerResponse;
  const ctx = createLeanContext(method, "grpc", req, res, new AbortController().signal, {}, {}, deadline);
  if (!ctx) throw new Error("no context");
  return ctx;
}

beforeEach(() => {
  vi.useFakeTimers({ now: 1_000_000 });
});
afterEach(() => {
  vi.useRealTimers();
});

describe("lean context deadlines", () => {
  it("parseDeadline reads the header with connect's parser, relative to now", () => {
    expect(parseDeadline(undefined, parseTimeout, 60_000)).toBeUndefined();
    expect(parseDeadline("250m", parseTimeout, 60_000)).toBe(1_000_250);
    expect(parseDeadline("2S", parseTimeout, 60_000)).toBe(1_002_000);
    expect(parseDeadline("61S", parseTimeout, 60_000)).toBe(false); // over the ceiling
    expect(parseDeadline("soon", parseTimeout, 60_000)).toBe(false);
    expect(parseDeadline(["1S", "2S"], parseTimeout, 60_000)).toBe(false);
  });

  it("timeoutMs() counts down to the deadline; undefined without one", () => {
    expect(context(undefined).timeoutMs()).toBeUndefined();
    const ctx = context(Date.now() + 500);
    expect(ctx.timeoutMs()).toBe(500);
    vi.advanceTimersByTime(200);
    expect(ctx.timeoutMs()).toBe(300);
  });

  it("the signal aborts with DEADLINE_EXCEEDED at the deadline, counted from arrival, not from the first read", () => {
    const ctx = context(Date.now() + 500);
    vi.advanceTimersByTime(300);
    const signal = ctx.signal;
    expect(signal.aborted).toBe(false);
    vi.advanceTimersByTime(199);
    expect(signal.aborted).toBe(false);
    vi.advanceTimersByTime(1);
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBeInstanceOf(ConnectError);
    expect((signal.reason as ConnectError).code).toBe(Code.DeadlineExceeded);
  });

  it("no timer is armed unless the signal is read, and cleanup() disarms it", () => {
    context(Date.now() + 500);
    expect(vi.getTimerCount()).toBe(0);
    const ctx = context(Date.now() + 500);
    void ctx.signal;
    expect(vi.getTimerCount()).toBe(1);
    ctx.cleanup();
    expect(vi.getTimerCount()).toBe(0);
  });
});
