import { describe, expect, it } from "vitest";
import { GroupsService } from "../../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { RestHandlerContext } from "../../../src/transcode/handler-context.js";

function make(request = new AbortController(), shutdown = new AbortController()) {
  const ctx = new RestHandlerContext({
    method: GroupsService.method.getGroup,
    requestMethod: "GET",
    url: "/v2beta1/groups/x",
    requestHeader: new Headers({ authorization: "Bearer t" }),
    requestSignal: () => request.signal,
    shutdownSignal: shutdown.signal,
  });
  return { ctx, request, shutdown };
}

describe("RestHandlerContext (the REST door's lean HandlerContext)", () => {
  it("describes the call like connect's context", () => {
    const { ctx } = make();
    expect(ctx.protocolName).toBe("rest");
    expect(ctx.service).toBe(GroupsService);
    expect(ctx.method).toBe(GroupsService.method.getGroup);
    expect(ctx.requestHeader.get("authorization")).toBe("Bearer t");
    expect(ctx.timeoutMs()).toBeUndefined();
    ctx.responseHeader.set("a", "1");
    expect(ctx.responseHeader.get("a")).toBe("1");
  });

  it("aborts its signal when the client goes away", () => {
    const { ctx, request } = make();
    expect(ctx.signal.aborted).toBe(false);
    request.abort();
    expect(ctx.signal.aborted).toBe(true);
  });

  it("aborts its signal on shutdown, and is born aborted after it", () => {
    const { ctx, shutdown } = make();
    const s = ctx.signal;
    shutdown.abort();
    expect(s.aborted).toBe(true);
    expect(make(undefined, shutdown).ctx.signal.aborted).toBe(true);
  });

  it("aborts a signal that was read when the call is released, and unhooks from shutdown", () => {
    const { ctx, shutdown } = make();
    const s = ctx.signal;
    ctx.release();
    expect(s.aborted).toBe(true);
    let seen = 0;
    s.addEventListener("abort", () => seen++);
    shutdown.abort();
    expect(seen).toBe(0);
  });

  it("never reads the request signal when nobody reads its own", () => {
    let read = 0;
    const ctx = new RestHandlerContext({
      method: GroupsService.method.getGroup,
      requestMethod: "GET",
      url: "/",
      requestHeader: new Headers(),
      requestSignal: () => {
        read++;
        return new AbortController().signal;
      },
      shutdownSignal: new AbortController().signal,
    });
    ctx.release();
    expect(read).toBe(0);
  });
});
