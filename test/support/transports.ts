/**
 * The RPC protocol matrix: one Transport per wire protocol, so a scenario is written once
 * and run over each with describe.each(rpcTransports).
 *
 * - "grpc (grpc-js)": the reference gRPC client, @grpc/grpc-js, adapted to connect's
 *   Transport interface. Errors are rebuilt from the `grpc-status-details-bin` trailer the
 *   server sent, so detail assertions check what a grpc-js user really receives.
 * - "connect (json, http/1.1)", "connect (proto, h2)" and "grpc-web (http/1.1)": connect-node
 *   client transports.
 */
import { type DescMessage, type DescMethodUnary, fromBinary, type MessageInitShape, create, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, type Interceptor, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { StatusSchema } from "../../gen/google/rpc/status_pb.js";
import { defaultToken } from "./auth.js";

/**
 * Which token a transport sends: by default the test server's operator token (auth.ts);
 * a string sends that token; null sends no Authorization header. An `authorization` header
 * given on a call always wins.
 */
export interface TransportAuth {
  readonly token?: string | null;
}

export interface NamedTransport {
  readonly name: string;
  create(baseUrl: string, auth?: TransportAuth): Transport;
}

function tokenFor(baseUrl: string, auth: TransportAuth | undefined): string | undefined {
  if (auth?.token === null) return undefined;
  return auth?.token ?? defaultToken(baseUrl);
}

/** A connect interceptor that adds the bearer token unless the call set its own header. */
function bearer(baseUrl: string, auth: TransportAuth | undefined): Interceptor[] {
  return [
    (next) => async (req) => {
      const token = tokenFor(baseUrl, auth);
      if (token !== undefined && !req.header.has("authorization")) req.header.set("authorization", `Bearer ${token}`);
      return next(req);
    },
  ];
}

export const rpcTransports: readonly NamedTransport[] = [
  { name: "grpc (grpc-js)", create: (baseUrl, auth) => createGrpcJsTransport(baseUrl, auth) },
  {
    name: "connect (json, http/1.1)",
    create: (baseUrl, auth) => createConnectTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: false, interceptors: bearer(baseUrl, auth) }),
  },
  {
    name: "connect (proto, h2)",
    create: (baseUrl, auth) => createConnectTransport({ baseUrl, httpVersion: "2", useBinaryFormat: true, interceptors: bearer(baseUrl, auth) }),
  },
  {
    name: "grpc-web (http/1.1)",
    create: (baseUrl, auth) => createGrpcWebTransport({ baseUrl, httpVersion: "1.1", interceptors: bearer(baseUrl, auth) }),
  },
];

const grpcClients = new Map<string, grpc.Client>();

/** Closes the cached grpc-js channels (call in afterAll). */
export function closeGrpcClients(): void {
  for (const client of grpcClients.values()) client.close();
  grpcClients.clear();
}

/** A connect Transport whose unary calls go through @grpc/grpc-js. */
export function createGrpcJsTransport(baseUrl: string, auth?: TransportAuth): Transport {
  const target = new URL(baseUrl).host;
  let client = grpcClients.get(target);
  if (!client) {
    client = new grpc.Client(target, grpc.credentials.createInsecure());
    grpcClients.set(target, client);
  }
  const channel = client;
  return {
    async unary<I extends DescMessage, O extends DescMessage>(
      method: DescMethodUnary<I, O>,
      _signal: AbortSignal | undefined,
      timeoutMs: number | undefined,
      header: HeadersInit | undefined,
      input: MessageInitShape<I>,
    ) {
      const metadata = new grpc.Metadata();
      for (const [key, value] of new Headers(header)) metadata.set(key, value);
      const token = tokenFor(baseUrl, auth);
      if (token !== undefined && metadata.get("authorization").length === 0) metadata.set("authorization", `Bearer ${token}`);
      const path = `/${method.parent.typeName}/${method.name}`;
      const request = create(method.input, input);
      const responseHeader = new Headers();
      const message = await new Promise<ReturnType<typeof fromBinary<O>>>((resolve, reject) => {
        const call = channel.makeUnaryRequest(
          path,
          (m: typeof request) => Buffer.from(toBinary(method.input, m)),
          (b: Buffer) => fromBinary(method.output, b),
          request,
          metadata,
          timeoutMs ? { deadline: Date.now() + timeoutMs } : {},
          (err, value) => (err ? reject(fromGrpcError(err, responseHeader)) : resolve(value as ReturnType<typeof fromBinary<O>>)),
        );
        call.on("metadata", (md) => {
          for (const [k, v] of Object.entries(md.getMap())) responseHeader.set(k, String(v));
        });
      });
      return {
        stream: false as const,
        service: method.parent,
        method,
        header: responseHeader,
        trailer: new Headers(),
        message,
      };
    },
    stream() {
      throw new Error("the grpc-js test transport supports unary calls only");
    },
  };
}

/** A grpc-js error as connect clients report one: its metadata holds the response headers and trailers. */
function fromGrpcError(err: grpc.ServiceError, responseHeader: Headers): ConnectError {
  const bin = err.metadata?.get("grpc-status-details-bin")[0];
  const details = [];
  if (bin instanceof Buffer) {
    const status = fromBinary(StatusSchema, bin);
    for (const any of status.details) {
      details.push({ type: any.typeUrl.slice(any.typeUrl.lastIndexOf("/") + 1), value: any.value });
    }
  }
  const metadata = new Headers(responseHeader);
  for (const [k, v] of Object.entries(err.metadata?.getMap() ?? {})) {
    if (typeof v === "string") metadata.set(k, v);
  }
  const ce = new ConnectError(err.details, err.code as number as Code, metadata, undefined, err);
  // Incoming details as connect clients receive them ({type, value}); findDetails decodes them.
  (ce.details as unknown[]).push(...details);
  return ce;
}

export { Code };
