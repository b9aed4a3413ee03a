/**
 * The RPC matrix runs twice (vitest.config.ts): in project `all` with the fast unary doors on,
 * in `rpc-fast-path-off` with them off. This proves each run is what its name says: a call's
 * HandlerContext is the fast doors' lean one exactly when the fast path is on.
 */
import { createClient } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { GroupsService } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { LEAN_CONTEXT } from "../../src/server/fast-unary/shared.js";
import { FAST_UNARY_OFF, startTestApp, type TestApp } from "../support/app.js";
import { closeGrpcClients, rpcTransports } from "../support/transports.js";

// A call hook for this file's servers (test/support/seams.ts).
vi.mock(import("../../src/server/call-pipeline.js"), async (original) => (await import("../support/seams.js")).withCallHook(await original()));

const served: boolean[] = [];
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp(
    {},
    {},
    {
      callHook: async (_method, context) => {
        served.push(LEAN_CONTEXT in context);
      },
    },
  );
});
afterAll(async () => {
  closeGrpcClients();
  await t.close();
});

describe.each(rpcTransports.map((tr) => [tr.name, tr] as const))("%s", (_name, transport) => {
  it(`takes the ${FAST_UNARY_OFF ? "connect-node path (fast path off)" : "fast path"}`, async () => {
    served.length = 0;
    await createClient(GroupsService, transport.create(t.url)).listGroups({});
    expect(served).toEqual([!FAST_UNARY_OFF]);
  });
});
