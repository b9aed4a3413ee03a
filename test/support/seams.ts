/**
 * What a test adds to a real server that the server has no hook for (it carries none for
 * tests):
 *
 * - a call hook: one more before-call hook, run on every door after authentication and
 *   authorization, where a test stands in for a slow or failing handler, or looks at the
 *   HandlerContext a door built;
 * - a dispatch step: run by the front door before any door, where a test throws to prove that
 *   a failure outside every door's own handling is that request's alone.
 *
 * Both go in through the public factories the composition root (src/server/create-app.ts)
 * builds the server from: the call pipeline's `beforeCall` hooks (createCallPipeline) and the
 * front door's list of doors (frontDoor). A test file that needs one replaces that factory for
 * its own module graph with vitest's module mocking, next to its imports:
 *
 *   vi.mock(import("../../src/server/call-pipeline.js"), async (original) => (await import("../support/seams.js")).withCallHook(await original()));
 *   vi.mock(import("../../src/server/front-door.js"), async (original) => (await import("../support/seams.js")).withDispatchStep(await original()));
 *
 * and names what the next server it starts gets: `startTestApp(config, limits, { callHook,
 * dispatchStep })`, or `seamsForNextApp({ callHook })` right before `startApp` itself. Each is
 * taken by the next server that starts, and by that one only (servers in a file start one
 * after another).
 */
import type { BeforeCallHook } from "../../src/server/call-pipeline.js";
import type { NodeRequest, NodeResponse } from "../../src/server/front-door.js";

type CallPipelineModule = typeof import("../../src/server/call-pipeline.js");
type FrontDoorModule = typeof import("../../src/server/front-door.js");

/** What the next server started gets (module comment). */
export interface Seams {
  readonly callHook?: BeforeCallHook;
  readonly dispatchStep?: (req: NodeRequest, res: NodeResponse) => void;
}

let pending: { callHook?: BeforeCallHook; dispatchStep?: Seams["dispatchStep"] } = {};
const installed = { callHook: false, dispatchStep: false };

/**
 * Hands `seams` to the next server this file starts.
 * @throws when the test file did not replace the factory a seam goes through (module comment).
 */
export function seamsForNextApp(seams: Seams): void {
  for (const name of ["callHook", "dispatchStep"] as const) {
    if (seams[name] !== undefined && !installed[name]) {
      const module = name === "callHook" ? "call-pipeline" : "front-door";
      throw new Error(`a ${name} needs vi.mock(import(".../src/server/${module}.js"), ...) in the test file (test/support/seams.ts)`);
    }
  }
  pending = { ...seams };
}

/** createCallPipeline with the next server's call hook after the server's own hooks. */
export function withCallHook(original: CallPipelineModule): CallPipelineModule {
  installed.callHook = true;
  return {
    ...original,
    createCallPipeline(options) {
      const hook = pending.callHook;
      pending.callHook = undefined;
      return original.createCallPipeline(hook ? { ...options, beforeCall: [...(options.beforeCall ?? []), hook] } : options);
    },
  };
}

/** frontDoor with the next server's dispatch step before its first door. */
export function withDispatchStep(original: FrontDoorModule): FrontDoorModule {
  installed.dispatchStep = true;
  return {
    ...original,
    frontDoor(doors, onFailure) {
      const prepare = pending.dispatchStep;
      pending.dispatchStep = undefined;
      return original.frontDoor(prepare ? [original.step(prepare), ...doors] : doors, onFailure);
    },
  };
}
