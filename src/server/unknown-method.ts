/**
 * What a request for a path no door serves is told.
 *
 * gRPC clients read `grpc-status`, not the HTTP status: a bare 404 reaches them as
 * "UNIMPLEMENTED: HTTP 404" at best and as a protocol failure at worst, and Connect clients
 * guess from the status alone. So an RPC-shaped path (`/<service>/<method>`) that the router
 * does not hold answers UNIMPLEMENTED, in the request's own protocol, with a message naming the
 * method and ErrorInfo saying whether the service or only the method is unknown; the same
 * convention gRPC servers follow (grpc-go's "unknown service" / "unknown method").
 *
 * Anything else that reached no door (a browser's `GET /favicon.ico`, a mistyped REST path
 * outside every template) is a REST-style NOT_FOUND with the google.rpc.Status body, as the
 * REST door answers a path inside its templates that no route matches.
 */
import { ApiError, GrpcCode } from "../errors/api-error.js";
import type { ErrorDialect } from "./request-errors.js";

/** `/<service>/<method>`: a service name (dotted, as protobuf writes it) and a method name. */
/** Longest request path echoed back in an error. */
const MAX_ECHOED_PATH = 256;

const RPC_PATH = /^\/([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\/([A-Za-z_][A-Za-z0-9_]*)$/;

export interface UnknownPathAnswer {
  readonly dialect: ErrorDialect;
  readonly error: ApiError;
}

/**
 * The answer for `path`, which no door serves. `protocol` is the request's by content type
 * (gRPC and gRPC-web always expect their own status); `connectHint` is true when the request
 * says it speaks Connect (a `connect-protocol-version` header) even on an odd path.
 */
export function unknownPathAnswer(
  path: string,
  protocol: "grpc" | "grpc-web" | "connect",
  connectHint: boolean,
  knownServices: ReadonlySet<string>,
  httpMethod: string,
): UnknownPathAnswer {
  // The path is echoed (it is the client's own, and Node has already refused control
  // characters in it) but cut short: a header line of kilobytes helps nobody, and some
  // clients refuse one.
  const shown = path.length > MAX_ECHOED_PATH ? `${path.slice(0, MAX_ECHOED_PATH)}…` : path;
  const rpc = RPC_PATH.exec(path);
  const rpcShaped = rpc !== null && (rpc[1]?.includes(".") === true || connectHint);
  if (protocol === "connect" && !rpcShaped) {
    return {
      dialect: "rest",
      error: new ApiError(GrpcCode.NotFound, `Not found: no route for ${httpMethod} ${shown}`, {
        metadata: { http_method: httpMethod, path: shown },
      }),
    };
  }
  if (rpc === null) {
    // gRPC or gRPC-web to something that is not a method path at all.
    return {
      dialect: protocol,
      error: new ApiError(GrpcCode.Unimplemented, `Unimplemented: ${shown} is not a method path (/<package.Service>/<Method>)`, {
        reason: "UNKNOWN_METHOD",
        metadata: { path: shown },
      }),
    };
  }
  const service = rpc[1] as string;
  const method = rpc[2] as string;
  const serviceKnown = knownServices.has(service);
  return {
    dialect: protocol,
    error: new ApiError(
      GrpcCode.Unimplemented,
      serviceKnown
        ? `Unimplemented: unknown method ${method} for service ${service} (${service}/${method})`
        : `Unimplemented: unknown service ${service} (${service}/${method})`,
      { reason: serviceKnown ? "UNKNOWN_METHOD" : "UNKNOWN_SERVICE", metadata: { service, method } },
    ),
  };
}
