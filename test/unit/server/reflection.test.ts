/**
 * gRPC server reflection (src/server/reflection.ts) on a real h2c connect-node server:
 * driven through the connect-node gRPC client for v1 and v1alpha, then through `buf curl`,
 * the tool people will actually point at the server.
 */
import { execFile } from "node:child_process";
import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { fromBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { createClient, type ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter, createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GroupsService } from "../../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { file_google_rpc_error_details } from "../../../gen/google/rpc/error_details_pb.js";
import { Health, HealthCheckResponse_ServingStatus } from "../../../gen/grpc/health/v1/health_pb.js";
import * as v1 from "../../../gen/grpc/reflection/v1/reflection_pb.js";
import * as v1alpha from "../../../gen/grpc/reflection/v1alpha/reflection_pb.js";
import { registerHealth } from "../../../src/server/health.js";
import { registerReflection } from "../../../src/server/reflection.js";

const BUF = fileURLToPath(new URL("../../../node_modules/.bin/buf", import.meta.url));
const GROUPS = "chainguard.platform.iam.v2beta1.GroupsService";
const GROUPS_FILE = "chainguard/platform/iam/v2beta1/groups.proto";
const ALL_SERVICES = [GROUPS, "grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection"];

let server: http2.Http2Server;
const sessions = new Set<http2.ServerHttp2Session>();
let baseUrl = "";

beforeAll(async () => {
  const routes = (router: ConnectRouter) => {
    router.service(GroupsService, {});
    registerHealth(router, () => HealthCheckResponse_ServingStatus.SERVING);
    registerReflection(router, [GroupsService, Health], [file_google_rpc_error_details]);
  };
  server = http2.createServer(connectNodeAdapter({ routes }));
  server.on("session", (s) => {
    sessions.add(s);
    s.on("close", () => sessions.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const s of sessions) s.destroy();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

type Request = v1.ServerReflectionRequest["messageRequest"];
type Response = v1.ServerReflectionResponse["messageResponse"];

const versions = [
  { name: "v1", service: v1.ServerReflection },
  { name: "v1alpha", service: v1alpha.ServerReflection },
] as const;

/** Sends all requests on ONE reflection stream and returns the responses in order. */
async function reflect(version: (typeof versions)[number], requests: Request[]): Promise<Response[]> {
  const transport = createGrpcTransport({ baseUrl }); // always HTTP/2 (h2c here); connect-node 2 has no httpVersion option for gRPC;
  async function* input() {
    for (const messageRequest of requests) yield { host: "localhost", messageRequest };
  }
  const out: Response[] = [];
  if (version.name === "v1") {
    for await (const res of createClient(v1.ServerReflection, transport).serverReflectionInfo(input())) {
      expect(res.validHost).toBe("localhost");
      expect(res.originalRequest?.messageRequest).toEqual(requests[out.length]);
      out.push(res.messageResponse);
    }
  } else {
    // v1alpha messages are wire-identical; the `case` names are the same too.
    const alpha = createClient(v1alpha.ServerReflection, transport);
    for await (const res of alpha.serverReflectionInfo(input() as AsyncIterable<{ host: string; messageRequest: never }>)) {
      expect(res.validHost).toBe("localhost");
      out.push(res.messageResponse as Response);
    }
  }
  expect(out).toHaveLength(requests.length);
  return out;
}

function fileNames(res: Response): string[] {
  if (res.case !== "fileDescriptorResponse") throw new Error(`expected file descriptors, got ${res.case}: ${JSON.stringify(res.value)}`);
  return res.value.fileDescriptorProto.map((b) => fromBinary(FileDescriptorProtoSchema, b).name);
}

describe.each(versions)("reflection $name via the connect-node gRPC client", (version) => {
  it("lists the given services plus both reflection services", async () => {
    const [res] = await reflect(version, [{ case: "listServices", value: "*" }]);
    expect(res!.case).toBe("listServicesResponse");
    const names = res!.case === "listServicesResponse" ? res!.value.service.map((s) => s.name) : [];
    expect([...names].sort()).toEqual([...ALL_SERVICES].sort());
  });

  it("file_containing_symbol returns the file and its transitive dependencies, each once per stream", async () => {
    const [first, again, annotations, method] = await reflect(version, [
      { case: "fileContainingSymbol", value: GROUPS },
      { case: "fileContainingSymbol", value: `.${GROUPS}` }, // leading dot is stripped
      { case: "fileByFilename", value: "google/api/annotations.proto" },
      { case: "fileContainingSymbol", value: `${GROUPS}.GetGroup` },
    ]);
    const names = fileNames(first!);
    expect(names[0]).toBe(GROUPS_FILE);
    expect(names).toEqual(
      expect.arrayContaining([
        "google/api/annotations.proto",
        "google/api/http.proto", // transitive, via annotations.proto
        "google/protobuf/descriptor.proto", // transitive WKT
        "google/protobuf/empty.proto",
        "google/protobuf/field_mask.proto",
        "google/protobuf/timestamp.proto",
        "chainguard/platform/common/uidp.proto",
      ]),
    );
    expect(new Set(names).size).toBe(names.length);
    // The descriptor really is groups.proto, with the service in it.
    const groups = fromBinary(FileDescriptorProtoSchema, (first!.value as { fileDescriptorProto: Uint8Array[] }).fileDescriptorProto[0]!);
    expect(groups.service.map((s) => s.name)).toEqual(["GroupsService"]);
    // Later answers on the same stream: the requested file again, nothing already sent.
    expect(fileNames(again!)).toEqual([GROUPS_FILE]);
    expect(fileNames(annotations!)).toEqual(["google/api/annotations.proto"]);
    expect(fileNames(method!)).toEqual([GROUPS_FILE]);
  });

  it("starts afresh on a new stream", async () => {
    const [res] = await reflect(version, [{ case: "fileByFilename", value: "google/api/annotations.proto" }]);
    expect(fileNames(res!)).toEqual(["google/api/annotations.proto", "google/api/http.proto", "google/protobuf/descriptor.proto"]);
  });

  it("resolves nested messages, enums, WKTs and extra files", async () => {
    const res = await reflect(version, [
      { case: "fileContainingSymbol", value: "chainguard.platform.iam.v2beta1.Group.ResourceLimitsEntry" },
      { case: "fileContainingSymbol", value: "chainguard.platform.iam.v2beta1.OrgKind" },
      { case: "fileContainingSymbol", value: "google.protobuf.Empty" },
      { case: "fileContainingSymbol", value: "google.rpc.ErrorInfo" },
      { case: "fileContainingSymbol", value: "grpc.health.v1.Health.Watch" },
      { case: "fileByFilename", value: "grpc/reflection/v1alpha/reflection.proto" },
    ]);
    expect(res.map((r) => fileNames(r)[0])).toEqual([
      GROUPS_FILE,
      GROUPS_FILE,
      "google/protobuf/empty.proto",
      "google/rpc/error_details.proto",
      "grpc/health/v1/health.proto",
      "grpc/reflection/v1alpha/reflection.proto",
    ]);
  });

  it("answers extension queries from the indexed files", async () => {
    const [byExt, numbers, none, unknownType, unknownExt] = await reflect(version, [
      // google.api.http is extension 72295728 of MethodOptions (google/api/annotations.proto)
      {
        case: "fileContainingExtension",
        value: { $typeName: "grpc.reflection.v1.ExtensionRequest", containingType: ".google.protobuf.MethodOptions", extensionNumber: 72295728 },
      },
      { case: "allExtensionNumbersOfType", value: "google.protobuf.FieldOptions" },
      { case: "allExtensionNumbersOfType", value: "google.protobuf.Empty" },
      { case: "allExtensionNumbersOfType", value: "no.such.Message" },
      {
        case: "fileContainingExtension",
        value: { $typeName: "grpc.reflection.v1.ExtensionRequest", containingType: "google.protobuf.MethodOptions", extensionNumber: 1 },
      },
    ]);
    expect(fileNames(byExt!)[0]).toBe("google/api/annotations.proto");
    expect(numbers!.case).toBe("allExtensionNumbersResponse");
    const fieldOptionExts = numbers!.case === "allExtensionNumbersResponse" ? numbers!.value : undefined;
    expect(fieldOptionExts?.baseTypeName).toBe("google.protobuf.FieldOptions");
    expect(fieldOptionExts?.extensionNumber).toContain(1052); // google.api.field_behavior
    expect(none).toMatchObject({ case: "allExtensionNumbersResponse", value: { baseTypeName: "google.protobuf.Empty", extensionNumber: [] } });
    expect(unknownType).toMatchObject({ case: "errorResponse", value: { errorCode: 5 } });
    expect(unknownExt).toMatchObject({ case: "errorResponse", value: { errorCode: 5 } });
  });

  it("answers unknown names with NOT_FOUND and unsupported requests with UNIMPLEMENTED, keeping the stream open", async () => {
    const [symbol, file, empty, after] = await reflect(version, [
      { case: "fileContainingSymbol", value: "no.such.Service" },
      { case: "fileByFilename", value: "no/such/file.proto" },
      { case: undefined },
      { case: "fileContainingSymbol", value: GROUPS },
    ]);
    expect(symbol).toMatchObject({ case: "errorResponse", value: { errorCode: 5 } });
    expect(symbol!.value).toMatchObject({ errorMessage: expect.stringContaining("no.such.Service") });
    expect(file).toMatchObject({ case: "errorResponse", value: { errorCode: 5 } });
    expect(empty).toMatchObject({ case: "errorResponse", value: { errorCode: 12 } });
    expect(fileNames(after!)[0]).toBe(GROUPS_FILE);
  });
});

function bufCurl(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(BUF, ["curl", ...args], { timeout: 15_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === "number" ? err.code : -1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

describe("reflection via buf curl", () => {
  it.each(["grpc-v1", "grpc-v1alpha"])("--list-services over %s", async (reflectProtocol) => {
    const r = await bufCurl(["--protocol", "grpc", "--http2-prior-knowledge", "--reflect-protocol", reflectProtocol, "--list-services", baseUrl]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout.trim().split("\n").sort()).toEqual([...ALL_SERVICES].sort());
  });

  it("--list-methods resolves every service's file and its dependencies", async () => {
    const r = await bufCurl(["--protocol", "grpc", "--http2-prior-knowledge", "--list-methods", baseUrl]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`${GROUPS}/GetGroup`);
    expect(r.stdout).toContain("grpc.health.v1.Health/Watch");
  });

  it("calls Health/Check with a schema from reflection", async () => {
    const r = await bufCurl(["--http2-prior-knowledge", "--protocol", "grpc", "--reflect", "-d", '{"service":""}', `${baseUrl}/grpc.health.v1.Health/Check`]);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ status: "SERVING" });
  });

  it("encodes a GroupsService request from the reflected schema (the empty impl answers unimplemented)", async () => {
    const r = await bufCurl(["--http2-prior-knowledge", "--protocol", "grpc", "--reflect", "-d", '{"uid":"abc"}', `${baseUrl}/${GROUPS}/GetGroup`]);
    expect(r.code).toBe(12 * 8); // buf curl exits with gRPC code × 8
    expect(r.stderr).toContain("unimplemented");
  });
});
