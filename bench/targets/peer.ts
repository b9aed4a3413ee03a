/**
 * The peer: a plain @grpc/grpc-js server calling the SAME GroupsService implementation,
 * wrapped in the same call pipeline (auth hooks, errors, per-call log line) over the same kind of
 * ServiceContext as create-app builds. Only the protocol stack differs from Trellis's gRPC
 * door, so "peer ÷ Trellis" isolates what connect-node's gRPC handling costs.
 *
 * Messages are (de)serialised with the generated protobuf-es schemas (toBinary/fromBinary),
 * as Trellis does; grpc-js never sees a .proto.
 */
import { create, type DescMessage, type DescMethod, fromBinary, isMessage, type Message, toBinary } from "@bufbuild/protobuf";
import { ConnectError, createHandlerContext, type HandlerContext } from "@connectrpc/connect";
import * as grpc from "@grpc/grpc-js";
import { GroupsService } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { createServiceContext } from "../../src/services/context.js";
import { createGroupsService } from "../../src/services/iam/groups.js";
import { createAuth } from "../../src/auth/setup.js";
import { type BeforeCallHook, createCallPipeline } from "../../src/server/call-pipeline.js";
import { DEFAULT_ERROR_DOMAIN } from "../../src/server/config.js";
import type { Logger } from "../../src/observe/logger.js";
import { openStore } from "../../src/store/open.js";

type Unary = (request: unknown, context: HandlerContext) => unknown;

/**
 * `issuerUrl` set: the peer runs Trellis's own before-call hooks (authentication, then
 * authorization) with Trellis's keys and issuer, so the same operator token works on both.
 * Unset: no hooks, which measures what they cost.
 */
export async function startPeer(dataDir: string, log: Logger, issuerUrl: string | undefined): Promise<string> {
  // Trellis holds the data-dir lock; the peer uses the same database without it (WAL allows
  // concurrent readers), as the local tools do.
  const store = await openStore({ dataDir, access: "beside" });
  const ctx = await createServiceContext(store, Date.now);
  let beforeCall: BeforeCallHook[] = [];
  if (issuerUrl !== undefined) {
    const auth = await createAuth({
      serverValues: store.serverValues,
      now: Date.now,
      services: [GroupsService],
      grantsOf: (identityUid) => ctx.store.roleBindings.grantsOf(identityUid),
    });
    await auth.start(issuerUrl);
    beforeCall = [...auth.hooks];
  }
  const pipeline = createCallPipeline({ log, errorDomain: DEFAULT_ERROR_DOMAIN, beforeCall });
  const impl = pipeline.wrapService(GroupsService, createGroupsService(ctx)) as unknown as Record<string, Unary>;

  const server = new grpc.Server();
  for (const method of GroupsService.methods) {
    if (method.methodKind !== "unary") continue;
    const path = `/${GroupsService.typeName}/${method.name}`;
    server.register(
      path,
      unaryHandler(method, path, impl[method.localName] as Unary),
      (msg: Message) => Buffer.from(toBinary(method.output as DescMessage, msg)),
      (bytes: Buffer) => fromBinary(method.input as DescMessage, bytes),
      "unary",
    );
  }
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  return `http://127.0.0.1:${port}`;
}

function unaryHandler(method: DescMethod, path: string, fn: Unary): grpc.handleUnaryCall<Message, Message> {
  return (call, callback) => {
    const headers = new Headers();
    for (const [k, v] of Object.entries(call.metadata.getMap())) headers.set(k, String(v));
    const abort = new AbortController();
    call.on("cancelled", () => abort.abort());
    const context = createHandlerContext({
      service: method.parent,
      method,
      protocolName: "grpc",
      requestMethod: "POST",
      url: path,
      requestHeader: headers,
      requestSignal: abort.signal,
    });
    Promise.resolve(fn(call.request, context)).then(
      (out) => {
        context.abort();
        callback(null, isMessage(out) ? out : create(method.output, out as never));
      },
      (err: unknown) => {
        context.abort();
        const e = ConnectError.from(err);
        callback({ code: e.code as number as grpc.status, details: e.rawMessage });
      },
    );
  };
}
