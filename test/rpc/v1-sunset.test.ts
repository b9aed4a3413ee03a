/**
 * v1's deprecation window (`--v1-sunset`, src/server/v1-sunset.ts) on every door v1 is served
 * on (gRPC, Connect JSON and proto, gRPC-web, REST; test/rpc runs again with the fast doors
 * off): before the sunset every v1 answer (success, refusal, no token) carries Deprecation,
 * Sunset and a Link to the migration guide, and nothing else does; from the sunset on (the
 * server's clock moved past it) every v1 call is UNIMPLEMENTED with reason API_VERSION_GONE,
 * before authentication; without the flag v1 answers carry none of it.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { DescMethodUnary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MIGRATION_GUIDE } from "../../gen/migration_guide.js";
import { Groups } from "../../gen/chainguard/platform/iam/groups_v1_pb.js";
import { GroupsService as GroupsV2 } from "../../gen/chainguard/platform/iam/v2/groups_pb.js";
import { GroupsService } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { Registry } from "../../gen/chainguard/platform/registry/registry_v1_pb.js";
import { parseServeConfig } from "../../src/server/config.js";
import { parseSunset } from "../../src/server/v1-sunset.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { type CallOutcome, type CallToken, callDoors } from "../support/call-method.js";
import { closeGrpcClients, Code } from "../support/transports.js";

const HOUR = 3_600_000;
/** Whole seconds: the Sunset header has no finer precision. */
const SUNSET = Math.ceil((Date.now() + HOUR) / 1000) * 1000;

let announced: TestApp;
let plain: TestApp;
beforeAll(async () => {
  [announced, plain] = await Promise.all([startTestApp({ v1SunsetAt: SUNSET }), startTestApp()]);
});
afterAll(async () => {
  closeGrpcClients();
  await Promise.all([announced?.close(), plain?.close()]);
});

/** One call and the headers of its answer. */
async function called(door: (typeof callDoors)[number], t: TestApp, method: DescMethodUnary, request: object, token?: CallToken) {
  let headers = new Headers();
  const out: CallOutcome = await door.call(t.url, token, method, request as never, {
    onResponseHeaders: (h) => {
      headers = h;
    },
  });
  return { out, headers };
}

const announcement = (t: TestApp) => ({
  deprecation: "@1795824000",
  sunset: new Date(SUNSET).toUTCString(),
  link: `<${t.url}/docs/migrating.md#v1--v2>; rel="deprecation sunset"; type="text/markdown"`,
});
const deprecationHeaders = (h: Headers) => ({ deprecation: h.get("deprecation"), sunset: h.get("sunset"), link: h.get("link") });

describe.each(callDoors)("v1 over $name", (door) => {
  it("carries Deprecation, Sunset and the guide's Link on every v1 answer before the sunset", async () => {
    const cases: [DescMethodUnary, object, CallToken, CallOutcome["ok"]][] = [
      [Groups.method.list, {}, undefined, true],
      [Registry.method.listRepos, {}, undefined, true],
      // A refusal of the request, and a call without a token: the headers all the same.
      [Groups.method.create, { group: { name: "Not A Valid Name!" } }, undefined, false],
      [Groups.method.list, {}, null, false],
    ];
    for (const [method, request, token, ok] of cases) {
      const { out, headers } = await called(door, announced, method, request, token);
      expect(out.ok, JSON.stringify(out)).toBe(ok);
      expect(deprecationHeaders(headers), `${method.name} ${JSON.stringify(out)}`).toEqual(announcement(announced));
    }
  });

  it("leaves v2 and v2beta1 answers, and v1 on a server without a sunset, as they were", async () => {
    for (const method of [GroupsV2.method.listGroups, GroupsService.method.listGroups]) {
      const { out, headers } = await called(door, announced, method, {});
      expect(out.ok).toBe(true);
      expect(deprecationHeaders(headers)).toEqual({ deprecation: null, sunset: null, link: null });
    }
    const { out, headers } = await called(door, plain, Groups.method.list, {});
    expect(out.ok).toBe(true);
    expect(deprecationHeaders(headers)).toEqual({ deprecation: null, sunset: null, link: null });
  });
});

describe("after the sunset", () => {
  let gone: TestApp;
  beforeAll(async () => {
    gone = await startTestApp({ v1SunsetAt: SUNSET });
    expect((await called(callDoors[0]!, gone, Groups.method.list, {})).out.ok).toBe(true);
    gone.advanceClock(SUNSET - Date.now());
  });
  afterAll(async () => {
    closeGrpcClients();
    await gone?.close();
  });

  it.each(callDoors)("answers every v1 call UNIMPLEMENTED API_VERSION_GONE over $name, before authentication, headers still on", async (door) => {
    for (const [method, request, token] of [
      [Groups.method.list, {}, undefined],
      [Registry.method.listRepos, {}, undefined],
      [Groups.method.list, {}, null],
      [Groups.method.create, { group: { name: "valid name" } }, "not a token"],
    ] as [DescMethodUnary, object, CallToken][]) {
      const { out, headers } = await called(door, gone, method, request, token);
      const name = `${method.parent.typeName}/${method.name}`;
      const replacement = method.parent === Groups ? "chainguard.platform.iam.v2.GroupsService" : "chainguard.platform.registry.v2.ReposService";
      expect(out).toMatchObject({
        ok: false,
        code: Code.Unimplemented,
        reason: "API_VERSION_GONE",
        metadata: { method: name, sunset: new Date(SUNSET).toISOString(), replacement, migration_guide: `${gone.url}/docs/migrating.md#v1--v2` },
      });
      if (!out.ok)
        expect(out.message).toBe(
          `Unimplemented: ${name} is gone since ${new Date(SUNSET).toISOString()} (v1's sunset); call ${replacement} instead (${gone.url}/docs/migrating.md#v1--v2)`,
        );
      if (door.name === "rest") expect(out).toMatchObject({ status: 501 });
      expect(deprecationHeaders(headers)).toEqual(announcement(gone));
    }
    // v2 is served as ever.
    expect((await called(door, gone, GroupsV2.method.listGroups, {})).out.ok).toBe(true);
  });
});

describe("the migration guide", () => {
  it("is served at the Link's path, without a token", async () => {
    const res = await fetch(`${plain.url}/docs/migrating.md`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/markdown; charset=utf-8");
    const text = await res.text();
    expect(text).toBe(MIGRATION_GUIDE);
    expect(text).toContain("\n## v1 → v2\n");
  });
});

describe("--v1-sunset", () => {
  it("takes a day or an RFC 3339 time, from the flag, the environment or the config file; anything else stops start-up", () => {
    expect(parseSunset("2027-06-30")).toBe(Date.UTC(2027, 5, 30));
    expect(parseSunset("2027-06-30T12:00:00+02:00")).toBe(Date.UTC(2027, 5, 30, 10));
    for (const bad of ["2027-02-30", "30/06/2027", "2027-06-30T12:00:00", "tomorrow", ""]) expect(() => parseSunset(bad), bad).toThrow(/--v1-sunset must be/);
    expect(parseServeConfig(["--v1-sunset", "2027-06-30"], { TRELLIS_V1_SUNSET: "2028-01-01" }).v1SunsetAt).toBe(Date.UTC(2027, 5, 30));
    expect(parseServeConfig([], { TRELLIS_V1_SUNSET: "2028-01-01" }).v1SunsetAt).toBe(Date.UTC(2028, 0, 1));
    expect(parseServeConfig([], {}).v1SunsetAt).toBeUndefined();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-sunset-"));
    try {
      const file = path.join(dir, "trellis.yaml");
      fs.writeFileSync(file, "v1_sunset: 2027-06-30\nregistry_audience: registry.example\n");
      expect(parseServeConfig(["--config", file], {})).toMatchObject({ v1SunsetAt: Date.UTC(2027, 5, 30), trust: { registryAudience: "registry.example" } });
      expect(parseServeConfig(["--config", file, "--v1-sunset", "2028-01-01"], {}).v1SunsetAt).toBe(Date.UTC(2028, 0, 1));
      fs.writeFileSync(file, "v1_sunset: 1\n");
      expect(() => parseServeConfig(["--config", file], {})).toThrow(/v1_sunset must be a date/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
