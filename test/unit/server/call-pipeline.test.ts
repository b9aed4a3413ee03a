/** The per-call pipeline: error conversion, UNIMPLEMENTED, and the call log. */
import { Writable } from "node:stream";
import { create, type DescMethod } from "@bufbuild/protobuf";
import { Code, ConnectError, createHandlerContext } from "@connectrpc/connect";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { GetGroupRequestSchema, GroupsService } from "../../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { ErrorInfoSchema } from "../../../gen/google/rpc/error_details_pb.js";
import { invalidField } from "../../../src/errors/api-error.js";
import { createCallPipeline } from "../../../src/server/call-pipeline.js";

function capture() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      for (const l of String(chunk).split("\n").filter(Boolean)) lines.push(JSON.parse(l));
      cb();
    },
  });
  return { log: pino({ level: "info" }, stream), lines };
}

function context(method: DescMethod = GroupsService.method.getGroup) {
  return createHandlerContext({
    service: GroupsService,
    method,
    protocolName: "grpc",
    requestMethod: "POST",
    url: "http://x/chainguard.platform.iam.v2beta1.GroupsService/GetGroup",
    requestHeader: { authorization: "Bearer SECRET-TOKEN-VALUE" },
  });
}

const req = create(GetGroupRequestSchema, { uid: "a".repeat(40) });

describe("createCallPipeline", () => {
  it("turns unknown exceptions into INTERNAL with a generic message and logs the cause", async () => {
    const { log, lines } = capture();
    const wrapped = createCallPipeline({ log, errorDomain: "d.example" }).wrapService(GroupsService, {
      getGroup() {
        throw new Error("disk on fire at /var/secret");
      },
    });
    const err = await Promise.resolve(wrapped.getGroup(req, context())).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectError);
    const ce = err as ConnectError;
    expect(ce.code).toBe(Code.Internal);
    expect(ce.rawMessage).toBe("Internal error");
    expect(ce.findDetails(ErrorInfoSchema)[0]).toMatchObject({ reason: "INTERNAL", domain: "d.example" });
    await new Promise((r) => setImmediate(r));
    const text = JSON.stringify(lines);
    expect(text).toContain("disk on fire");
    expect(text).not.toContain("SECRET-TOKEN-VALUE");
    expect(lines.find((l) => l.msg === "call")).toMatchObject({
      protocol: "grpc",
      method: "chainguard.platform.iam.v2beta1.GroupsService/GetGroup",
      code: "INTERNAL",
    });
  });

  it("passes API errors through with ErrorInfo first and logs one line per call", async () => {
    const { log, lines } = capture();
    const wrapped = createCallPipeline({ log, errorDomain: "d.example" }).wrapService(GroupsService, {
      getGroup() {
        throw invalidField("uid", "is bad");
      },
      listGroups() {
        return {};
      },
    });
    const err = (await Promise.resolve(wrapped.getGroup(req, context())).catch((e: unknown) => e)) as ConnectError;
    expect(err.code).toBe(Code.InvalidArgument);
    expect(err.rawMessage).toBe("Invalid argument: uid: is bad");
    await wrapped.listGroups(create(GroupsService.method.listGroups.input), context(GroupsService.method.listGroups));
    await new Promise((r) => setImmediate(r));
    const calls = lines.filter((l) => l.msg === "call");
    expect(calls).toHaveLength(2);
    expect(calls[0]).toMatchObject({ code: "INVALID_ARGUMENT" });
    expect(calls[1]).toMatchObject({ code: "OK", method: "chainguard.platform.iam.v2beta1.GroupsService/ListGroups" });
    expect(typeof calls[1]?.ms).toBe("number");
    expect(JSON.stringify(lines)).not.toContain("SECRET-TOKEN-VALUE");
  });

  it("answers UNIMPLEMENTED for methods without an implementation", async () => {
    const { log } = capture();
    const wrapped = createCallPipeline({ log, errorDomain: "d" }).wrapService(GroupsService, {});
    const err = (await Promise.resolve(wrapped.getGroup(req, context())).catch((e: unknown) => e)) as ConnectError;
    expect(err.code).toBe(Code.Unimplemented);
    expect(err.findDetails(ErrorInfoSchema)[0]?.reason).toBe("UNIMPLEMENTED");
  });
});
