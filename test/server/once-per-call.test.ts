/**
 * Once per call, on every door, with the fast path on and off: the before-call hooks (and so
 * the token's verification) run once, the token verification counter moves by one, the call
 * is counted once, and an unexpected failure is converted and logged once — a door that ran
 * the pipeline twice, or converted an error the pipeline had already converted as if it were
 * new, would show here as a second count or a second log line.
 *
 * A call hook (test/support/seams.ts: one more before-call hook, after authentication and
 * authorization) counts the calls it sees and throws a plain Error for one sentinel uid, the
 * way a bug in a handler would.
 */
import { Writable } from "node:stream";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { GroupsService } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { callDoors } from "../support/call-method.js";
import { closeGrpcClients } from "../support/transports.js";

// A call hook for this file's servers (test/support/seams.ts).
vi.mock(import("../../src/server/call-pipeline.js"), async (original) => (await import("../support/seams.js")).withCallHook(await original()));

afterAll(() => closeGrpcClients());

/** A root group uid no test creates: the hook fails the call with a plain Error. */
const SENTINEL = "f".repeat(40);

/** The sum of the samples whose line matches (every protocol's, for a call counter). */
function metric(text: string, line: RegExp): number {
  return text
    .split("\n")
    .filter((l) => line.test(l))
    .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(" ") + 1)), 0);
}

describe.each([true, false])("once per call (fast path %s)", (fastUnary) => {
  let t: TestApp;
  let hookCalls = 0;
  const logLines: Record<string, unknown>[] = [];

  beforeAll(async () => {
    const sink = new Writable({
      write(chunk, _enc, done) {
        for (const line of String(chunk).split("\n")) if (line) logLines.push(JSON.parse(line));
        done();
      },
    });
    t = await startTestApp(
      {},
      {},
      {
        log: pino({ level: "info" }, sink),
        fastUnary,
        callHook(_method, _context, request) {
          hookCalls++;
          if ((request as { uid?: string }).uid === SENTINEL) throw new Error("a handler's bug");
        },
      },
    );
  });
  afterAll(async () => {
    await t?.close();
  });

  const counters = async () => {
    const text = await (await fetch(`${t.url}/metrics`)).text();
    return {
      valid: metric(text, /^trellis_token_verifications_total\{outcome="valid"\}/),
      getGroup: (code: string) => metric(text, new RegExp(`^trellis_calls_total\\{.*method="GetGroup".*code="${code}"\\}`)),
    };
  };

  for (const door of callDoors) {
    it(`${door.name}: a successful call passes the hooks once and verifies its token once`, async () => {
      const created = await door.call(t.url, t.token, GroupsService.method.createGroup, {
        parent: "",
        group: { name: `once-${door.name.replace(/[^a-z0-9]+/g, "-")}` },
      });
      if (!created.ok) throw new Error(`CreateGroup failed: ${created.message}`);
      const groupUid = created.body.uid as string;
      const before = { hooks: hookCalls, ...(await counters()) };
      const beforeOk = before.getGroup("OK");
      const got = await door.call(t.url, t.token, GroupsService.method.getGroup, { uid: groupUid });
      expect(got).toMatchObject({ ok: true, body: { uid: groupUid } });
      const after = await counters();
      expect(hookCalls - before.hooks).toBe(1);
      expect(after.valid - before.valid).toBe(1);
      expect(after.getGroup("OK") - beforeOk).toBe(1);
    });

    it(`${door.name}: an unexpected failure is converted once: INTERNAL with ErrorInfo, one log line, one count`, async () => {
      const before = { hooks: hookCalls, lines: logLines.length, ...(await counters()) };
      const beforeInternal = before.getGroup("INTERNAL");
      const got = await door.call(t.url, t.token, GroupsService.method.getGroup, { uid: SENTINEL });
      expect(got).toMatchObject({ ok: false, code: 13, reason: "INTERNAL", message: "Internal error" });
      const after = await counters();
      expect(hookCalls - before.hooks).toBe(1);
      expect(after.valid - before.valid).toBe(1);
      expect(after.getGroup("INTERNAL") - beforeInternal).toBe(1);
      const lines = logLines.slice(before.lines);
      expect(lines.filter((l) => l.msg === "unexpected error")).toHaveLength(1);
      expect(lines.filter((l) => l.msg === "request failed outside the call pipeline")).toHaveLength(0);
      expect(lines.filter((l) => l.msg === "call" && l.code === "INTERNAL")).toHaveLength(1);
    });
  }
});
