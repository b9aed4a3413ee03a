/**
 * The whole published surface is registered and reachable.
 *
 * The list of services and methods is read from the generated descriptors of proto/ (every
 * `gen/chainguard/**\/*_pb.ts` and `gen/trellis/**\/*_pb.ts`), not from the server's own route list and not written here,
 * so a method added to a proto is walked without editing this file, and a service declared
 * in a proto but not registered fails the first test.
 *
 * - Reflection lists every declared service (checked with the real buf CLI), health answers.
 * - Every method of every declared service, on every door (gRPC, Connect JSON, Connect proto
 *   over h2, gRPC-web and REST laid out by the method's own google.api.http rule), answers
 *   with a real status: OK, or an error carrying ErrorInfo. Never a bare 404 (a method the
 *   RPC doors do not know, or a REST path no route takes) or a 405 (a path whose template
 *   lacks the verb): the REST answer must not be a routing miss, an UNIMPLEMENTED answer must
 *   name the very method called (so it came from the call pipeline, not from the protocol
 *   layer), and all five doors must give the same code and reason for the same request.
 * - Both versions: the generally available (v2) services are declared beside their v2beta1
 *   twins, so the walk covers every method of both, and each v2 method must answer exactly as
 *   its twin does, door for door (one implementation, src/server/api-versions.ts).
 * - The methods Trellis cannot answer (image content) say what they would need, and only
 *   after authentication and authorization, like any method.
 */
import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { type DescField, type DescMethodUnary, fromBinary, fromJson, type JsonObject, toBinary } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Registry } from "../../gen/chainguard/platform/registry/registry_v1_pb.js";
import { ReposService as ReposServiceV2 } from "../../gen/chainguard/platform/registry/v2/repos_pb.js";
import { ReposService } from "../../gen/chainguard/platform/registry/v2beta1/repos_pb.js";
import { Health, HealthCheckResponse_ServingStatus } from "../../gen/grpc/health/v1/health_pb.js";
import { apiServices } from "../../src/server/routes.js";
import type { ServiceContext } from "../../src/services/context.js";
import { IMAGE_CONTENT_NEEDS } from "../../src/services/legacy/registry-v1-image-content.js";
import { createRouteTable } from "../../src/transcode/route-table.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { createUserIdentity, identityToken } from "../support/auth.js";
import { type CallOutcome, callDoors } from "../support/call-method.js";
import { rest } from "../support/rest.js";
import { declaredServices } from "../support/declared-services.js";
import { closeGrpcClients, Code, rpcTransports } from "../support/transports.js";

const run = promisify(execFile);
const BUF = path.resolve("node_modules/.bin/buf");

const DECLARED = await declaredServices();
const METHODS = DECLARED.flatMap((s) => s.methods.filter((m) => m.methodKind === "unary") as DescMethodUnary[]);
const fullName = (m: DescMethodUnary) => `${m.parent.typeName}/${m.name}`;

// The registered list does not depend on the context; a stub is enough to enumerate it. The
// token exchange is built outside the service context (create-app passes it in).
const entries = apiServices({ store: {} } as unknown as ServiceContext, {
  securityTokenService: { exchange: async () => ({}), exchangeRefreshToken: async () => ({}) },
});
const notBuilt = entries.flatMap(({ service, impl }) =>
  service.methods.filter((m) => m.methodKind === "unary" && !(m.localName in impl)).map((m) => m as DescMethodUnary),
);

/**
 * A request that a REST client can lay out by the method's HTTP rule: every path variable
 * holds a well-formed value (a digest for `digest`, a package name for `package`, otherwise a
 * valid UIDP naming nothing, so no call finds or changes a row), everything else is unset.
 */
const NOBODY = `${"0".repeat(40)}/0123456789abcdef`;
const DIGEST = `sha256:${"ab".repeat(32)}`;
const routeTable = createRouteTable(DECLARED);
function requestFor(method: DescMethodUnary) {
  const route = routeTable.routes.find((r) => r.method === method);
  const json: JsonObject = {};
  for (const chain of route?.variableFields ?? []) {
    let at = json;
    chain.slice(0, -1).forEach((f: DescField) => {
      at[f.jsonName] ??= {};
      at = at[f.jsonName] as JsonObject;
    });
    const leaf = chain[chain.length - 1] as DescField;
    at[leaf.jsonName] = leaf.name.includes("digest") ? DIGEST : leaf.name === "package" ? "openssl" : NOBODY;
  }
  return fromJson(method.input, json);
}

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  closeGrpcClients();
  await t.close();
});

describe("the registered surface", () => {
  it("registers every service declared in proto/, and nothing else", () => {
    expect(DECLARED.length).toBeGreaterThan(0);
    const declared = DECLARED.map((s) => s.typeName).sort();
    expect(entries.map((e) => e.service.typeName).sort()).toEqual(declared);
  });

  it("lists every declared service plus health and reflection over gRPC reflection (buf curl)", async () => {
    const { stdout } = await run(BUF, ["curl", "--protocol", "grpc", "--http2-prior-knowledge", "--list-services", t.url]);
    const listed = stdout.trim().split("\n").sort();
    const expected = [
      ...DECLARED.map((s) => s.typeName),
      "grpc.health.v1.Health",
      "grpc.reflection.v1.ServerReflection",
      "grpc.reflection.v1alpha.ServerReflection",
    ].sort();
    expect(listed).toEqual(expected);
  });

  it("describes every declared method over reflection (buf curl --list-methods)", async () => {
    const { stdout } = await run(BUF, ["curl", "--protocol", "grpc", "--http2-prior-knowledge", "--list-methods", t.url]);
    const listed = new Set(stdout.trim().split("\n"));
    expect(METHODS.map(fullName).filter((m) => !listed.has(m))).toEqual([]);
  });

  it.each(["v2beta1", "v2"])("calls a %s method through reflection alone (buf curl --reflect)", async (version) => {
    const { stdout } = await run(BUF, [
      "curl",
      "--protocol",
      "grpc",
      "--http2-prior-knowledge",
      "-H",
      `Authorization: Bearer ${t.token}`,
      "-d",
      JSON.stringify({ group: { name: `via reflection ${version}` } }),
      `${t.url}/chainguard.platform.iam.${version}.GroupsService/CreateGroup`,
    ]);
    expect(JSON.parse(stdout).name).toBe(`via reflection ${version}`);
  });

  it("resolves a method returning another package's message through reflection (v1 GetSbom → tenant.Sbom2)", async () => {
    // buf needs the tenant file from reflection to build the call; the answer is the
    // method's own UNIMPLEMENTED, so the whole descriptor chain was served.
    const err = (await run(BUF, [
      "curl",
      "--protocol",
      "grpc",
      "--http2-prior-knowledge",
      "-H",
      `Authorization: Bearer ${t.token}`,
      "-d",
      JSON.stringify({ repoId: NOBODY, digest: DIGEST }),
      `${t.url}/chainguard.platform.registry.Registry/GetSbom`,
    ]).catch((e: unknown) => e)) as { stderr?: string };
    expect(err.stderr).toContain('"code": "unimplemented"');
    expect(err.stderr).toContain("needs the image's SBOM");
  });

  it("reports SERVING on grpc.health.v1.Health", async () => {
    const health = createClient(Health, rpcTransports[0]!.create(t.url));
    expect((await health.check({ service: "" })).status).toBe(HealthCheckResponse_ServingStatus.SERVING);
  });

  it("gives every declared method an HTTP rule the REST door routes", () => {
    expect(METHODS.filter((m) => !routeTable.routes.some((r) => r.method === m)).map(fullName)).toEqual([]);
  });
});

/** A GA (v2) method's v2beta1 twin: the method the same implementation serves under v2beta1. */
function twinOf(m: DescMethodUnary): DescMethodUnary | undefined {
  const twinService = m.parent.typeName.replace(/^(chainguard\.platform\.\w+)\.v2\./, "$1.v2beta1.");
  if (twinService === m.parent.typeName) return undefined;
  return DECLARED.find((s) => s.typeName === twinService)?.methods.find((x) => x.name === m.name) as DescMethodUnary | undefined;
}

describe(`every declared method on every door (${METHODS.length} methods × ${callDoors.length} doors)`, () => {
  // Named in full (it.each's $name would cut a long method name short, and two methods would
  // share a test name that -t could not pick alone).
  for (const m of METHODS) {
    it(fullName(m), async () => {
      const request = requestFor(m);
      const seen: { door: string; out: CallOutcome }[] = [];
      for (const door of callDoors) {
        const out = await door.call(t.url, t.token, m, request);
        const where = `${door.name}: ${JSON.stringify(out)}`;
        seen.push({ door: door.name, out });
        if (out.ok) continue;
        expect(Number.isInteger(out.code) && out.code > 0 && out.code <= 16, where).toBe(true);
        // ErrorInfo on every error: the AIP-193 body on REST, the status details elsewhere.
        expect(out.reason, where).toBeDefined();
        // Not a routing miss of the REST door (404 "no route", 405 "method not allowed").
        expect(out.reason, where).not.toBe("METHOD_NOT_ALLOWED");
        expect(out.metadata.http_method, where).toBeUndefined();
        // An UNIMPLEMENTED made by the call pipeline for this very method, not by a protocol
        // layer that does not know it.
        if (out.code === Code.Unimplemented) expect(out.metadata.method, where).toBe(fullName(m));
      }
      const summary = (o: CallOutcome) => (o.ok ? "OK" : `${o.code} ${o.reason}`);
      const first = summary(seen[0]!.out);
      for (const s of seen) expect(`${s.door}: ${summary(s.out)}`).toBe(`${s.door}: ${first}`);
      // A GA method answers as its v2beta1 twin does, on every door (one implementation).
      const twin = twinOf(m);
      if (twin) {
        const twinRequest = fromBinary(twin.input, toBinary(m.input, request));
        for (const door of callDoors) {
          expect(`${door.name}: ${summary(await door.call(t.url, t.token, twin, twinRequest))}`).toBe(`${door.name}: ${first}`);
        }
      }
    });
  }

  it("walks both versions: every v2beta1 method of a published area has its GA (v2) twin", () => {
    const beta = METHODS.filter((m) => /^chainguard\.platform\.\w+\.v2beta1\./.test(m.parent.typeName));
    const ga = METHODS.filter((m) => twinOf(m) !== undefined);
    expect(beta.length).toBeGreaterThan(0);
    expect(ga.map((m) => fullName(twinOf(m) as DescMethodUnary)).sort()).toEqual(beta.map(fullName).sort());
  });
});

describe("methods served from local state", () => {
  // The registry's local-state methods are all built: of the v1 Registry only the image
  // content methods (below) answer UNIMPLEMENTED, and every ReposService method is served.
  it("leaves no v1 Registry or v2beta1 / v2 ReposService method unbuilt", () => {
    const registryServices = new Set([Registry.typeName, ReposService.typeName, ReposServiceV2.typeName]);
    expect(notBuilt.filter((m) => registryServices.has(m.parent.typeName)).map(fullName)).toEqual([]);
    const served = Registry.methods.filter((m) => !(m.localName in IMAGE_CONTENT_NEEDS));
    expect(served.map((m) => m.name).sort()).toEqual(
      [
        "CreateDeployment",
        "CreateRepo",
        "CreateTag",
        "DeleteRepo",
        "DeleteTag",
        "GetDeployment",
        "GetRegistrySettings",
        "GetRepoCountBySource",
        "GetRepoTagsSummary",
        "ListEolTags",
        "ListRepos",
        "ListTagHistory",
        "ListTags",
        "UpdateDeployment",
        "UpdateRegistrySettings",
        "UpdateRepo",
        "UpdateTag",
      ].sort(),
    );
  });
});

describe("every method has an implementation", () => {
  // A method left out of its service's implementation would answer connect-node's generic
  // UNIMPLEMENTED, saying nothing of why. Every published method is served or, where it needs
  // what Trellis does not hold, implemented to say so (the image-content methods below,
  // CheckAccountAssociation).
  it("no registered service leaves a unary method out", () => {
    expect(notBuilt.map(fullName)).toEqual([]);
  });
});

describe("v1 Registry methods about image content", () => {
  const imageMethods = Object.entries(IMAGE_CONTENT_NEEDS).map(([localName, needs]) => {
    const m = Registry.methods.find((x) => x.localName === localName) as DescMethodUnary;
    return { m, needs, name: m.name };
  });
  const REPO = `${"a".repeat(40)}/0123456789abcdef`;
  const requestOf = (m: DescMethodUnary) => {
    const json: JsonObject = {};
    for (const f of m.input.fields) {
      if (f.name === "repo_id" || f.name === "parent_id" || f.name === "registry_id") json[f.jsonName] = REPO;
      if (f.name === "digest") json[f.jsonName] = DIGEST;
      if (f.name === "package") json[f.jsonName] = "openssl";
      // Narrowed to a group, so a caller without rights there is refused (an unnarrowed
      // List-like call is never refused: it just sees nothing).
      if (f.name === "uidp") json[f.jsonName] = { descendantsOf: "a".repeat(40) };
    }
    return fromJson(m.input, json);
  };

  describe.each(callDoors)("over $name", (door) => {
    it.each(imageMethods)("$name says what it would need, after authentication and authorization", async ({ m, needs }) => {
      const request = requestOf(m);
      const out = await door.call(t.url, t.token, m, request);
      expect(out).toMatchObject({ ok: false, code: Code.Unimplemented, reason: "UNIMPLEMENTED", metadata: { method: fullName(m), needs } });
      if (!out.ok) expect(out.message).toBe(`Unimplemented: ${fullName(m)} needs ${needs}, which this server does not hold`);

      // No token: refused before the method is reached.
      const anonymous = await door.call(t.url, "", m, request);
      expect(anonymous).toMatchObject({ ok: false, code: Code.Unauthenticated });
      // A signed-in user bound nowhere holds none of the method's capabilities anywhere.
      const stranger = await identityToken(t.app, await createUserIdentity(t.dataDir, `stranger-${door.name}-${m.name}`));
      expect(await door.call(t.url, stranger, m, request)).toMatchObject({ ok: false, code: Code.PermissionDenied, reason: "PERMISSION_DENIED" });
    });
  });

  it("REST paths under a repo reach their method, not a 405 of the repo routes", async () => {
    const cases: [string, string, string][] = [
      ["GET", `/registry/v1/repos/${REPO}/digests/${DIGEST}/size?arch=arm64`, "GetSize"],
      ["GET", `/registry/v1/repos/${REPO}/digests/${DIGEST}/architectures`, "GetArchs"],
      ["GET", `/registry/v1/repos/${REPO}/digest/${DIGEST}/rawsbom`, "GetRawSbom"],
      ["GET", `/registry/v1/repos/${REPO}:updatestatus`, "GetUpdateStatus"],
      ["GET", `/registry/v1/repos/${REPO}:syncstatus`, "GetSyncStatus"],
      ["GET", `/registry/v1/repos/${REPO}/manifestmetdata`, "ListManifestMetadata"],
      ["GET", `/registry/v1/repos/${REPO}/chart-image-bindings`, "ListChartsByImageRepo"],
      ["GET", "/registry/v1/versions/openssl", "GetPackageVersionMetadata"],
      ["GET", "/registry/v1/buildstatus", "GetBuildStatus"],
    ];
    for (const [verb, p, method] of cases) {
      const r = await rest(t.url, verb, p);
      expect({ p, status: r.status }).toEqual({ p, status: 501 });
      expect(r.body.details[0]).toMatchObject({ reason: "UNIMPLEMENTED", metadata: { method: `chainguard.platform.registry.Registry/${method}` } });
    }
  });
});
