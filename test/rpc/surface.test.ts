/**
 * The whole published surface is registered: reflection lists every service (checked with the
 * real buf CLI), health answers, and every method without an implementation yet answers
 * UNIMPLEMENTED with ErrorInfo on every RPC protocol — nothing pretends to work.
 */
import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import type { DescMethodUnary } from "@bufbuild/protobuf";
import { ConnectError, createClient } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { Health, HealthCheckResponse_ServingStatus } from "../../gen/grpc/health/v1/health_pb.js";
import type { ServiceContext } from "../../src/services/context.js";
import { apiServices } from "../../src/server/routes.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { closeGrpcClients, Code, rpcTransports } from "../support/transports.js";

const run = promisify(execFile);
const BUF = path.resolve("node_modules/.bin/buf");

// The service list does not depend on the context; a stub is enough to enumerate it.
// The token exchange is built outside the service context (create-app passes it in), so
// its presence is marked here the same way.
const entries = apiServices({ store: {} } as unknown as ServiceContext, { securityTokenService: { exchange: async () => ({}) } });
const unimplemented = entries.flatMap(({ service, impl }) =>
  service.methods
    .filter((m) => m.methodKind === "unary" && !(m.localName in impl))
    .map((m) => m as DescMethodUnary),
);

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  closeGrpcClients();
  await t.close();
});

describe("the registered surface", () => {
  it("lists every API service plus health and reflection over gRPC reflection (buf curl)", async () => {
    const { stdout } = await run(BUF, ["curl", "--protocol", "grpc", "--http2-prior-knowledge", "--list-services", t.url]);
    const listed = stdout.trim().split("\n").sort();
    const expected = [
      ...entries.map((e) => e.service.typeName),
      "grpc.health.v1.Health",
      "grpc.reflection.v1.ServerReflection",
      "grpc.reflection.v1alpha.ServerReflection",
    ].sort();
    expect(listed).toEqual(expected);
  });

  it("calls a method through reflection alone (buf curl --reflect)", async () => {
    const { stdout } = await run(BUF, [
      "curl",
      "--protocol",
      "grpc",
      "--http2-prior-knowledge",
      "-H",
      `Authorization: Bearer ${t.token}`,
      "-d",
      JSON.stringify({ group: { name: "via reflection" } }),
      `${t.url}/chainguard.platform.iam.v2beta1.GroupsService/CreateGroup`,
    ]);
    expect(JSON.parse(stdout).name).toBe("via reflection");
  });

  it("reports SERVING on grpc.health.v1.Health", async () => {
    const health = createClient(Health, rpcTransports[0]!.create(t.url));
    expect((await health.check({ service: "" })).status).toBe(HealthCheckResponse_ServingStatus.SERVING);
  });
});

describe.each(rpcTransports)("methods not built yet over $name", (transport) => {
  it(`answer UNIMPLEMENTED with ErrorInfo (${unimplemented.length} methods)`, async () => {
    expect(unimplemented.length).toBeGreaterThan(0);
    const tr = transport.create(t.url);
    for (const method of unimplemented) {
      const err = await tr.unary(method, undefined, undefined, undefined, {}).catch((e: unknown) => e);
      expect(err, method.name).toBeInstanceOf(ConnectError);
      const ce = err as ConnectError;
      expect(ce.code, `${method.parent.typeName}/${method.name}`).toBe(Code.Unimplemented);
      const info = ce.findDetails(ErrorInfoSchema)[0];
      expect(info?.reason).toBe("UNIMPLEMENTED");
      expect(info?.metadata.method).toBe(`${method.parent.typeName}/${method.name}`);
    }
  });
});
