/**
 * The gRPC status codes (google/rpc/code.proto), written once: their numbers, their canonical
 * names, and the HTTP status an error with each code is answered with.
 *
 * The HTTP statuses are google/rpc/code.proto's mapping, which grpc-gateway
 * (HTTPStatusFromCode), Envoy, vanguard-go and the Connect protocol (since RFC 003) all use:
 * FAILED_PRECONDITION is 400, not 412; CANCELLED is the non-standard 499. The Connect
 * protocol's table is the same one (test/unit/errors/codes.test.ts holds them equal), so an
 * error has one HTTP status on every door that has one: REST, Connect through connect-node,
 * the fast Connect door and the front door's own answers (request-errors.ts). gRPC and gRPC-web
 * carry the code in `grpc-status` and answer HTTP 200.
 *
 * One answer takes its status from its reason instead: METHOD_NOT_ALLOWED (code UNIMPLEMENTED,
 * a REST path that exists under other HTTP methods) is 405 with `Allow`, as the published API
 * answers it (docs/published-api.md "ErrorInfo reasons").
 *
 * No dependency on connect or on generated code, so the store can use GrpcCode.
 */

/** The codes by the names clients switch on in code (connect's `Code` spells them alike). */
export const GrpcCode = {
  Canceled: 1,
  Unknown: 2,
  InvalidArgument: 3,
  DeadlineExceeded: 4,
  NotFound: 5,
  AlreadyExists: 6,
  PermissionDenied: 7,
  ResourceExhausted: 8,
  FailedPrecondition: 9,
  Aborted: 10,
  OutOfRange: 11,
  Unimplemented: 12,
  Internal: 13,
  Unavailable: 14,
  DataLoss: 15,
  Unauthenticated: 16,
} as const;
export type GrpcCode = (typeof GrpcCode)[keyof typeof GrpcCode];

/** Each code's canonical name (code.proto's, the default ErrorInfo.reason) and HTTP status. */
const CODES = {
  [GrpcCode.Canceled]: { name: "CANCELLED", httpStatus: 499 },
  [GrpcCode.Unknown]: { name: "UNKNOWN", httpStatus: 500 },
  [GrpcCode.InvalidArgument]: { name: "INVALID_ARGUMENT", httpStatus: 400 },
  [GrpcCode.DeadlineExceeded]: { name: "DEADLINE_EXCEEDED", httpStatus: 504 },
  [GrpcCode.NotFound]: { name: "NOT_FOUND", httpStatus: 404 },
  [GrpcCode.AlreadyExists]: { name: "ALREADY_EXISTS", httpStatus: 409 },
  [GrpcCode.PermissionDenied]: { name: "PERMISSION_DENIED", httpStatus: 403 },
  [GrpcCode.ResourceExhausted]: { name: "RESOURCE_EXHAUSTED", httpStatus: 429 },
  [GrpcCode.FailedPrecondition]: { name: "FAILED_PRECONDITION", httpStatus: 400 },
  [GrpcCode.Aborted]: { name: "ABORTED", httpStatus: 409 },
  [GrpcCode.OutOfRange]: { name: "OUT_OF_RANGE", httpStatus: 400 },
  [GrpcCode.Unimplemented]: { name: "UNIMPLEMENTED", httpStatus: 501 },
  [GrpcCode.Internal]: { name: "INTERNAL", httpStatus: 500 },
  [GrpcCode.Unavailable]: { name: "UNAVAILABLE", httpStatus: 503 },
  [GrpcCode.DataLoss]: { name: "DATA_LOSS", httpStatus: 500 },
  [GrpcCode.Unauthenticated]: { name: "UNAUTHENTICATED", httpStatus: 401 },
} as const satisfies Record<GrpcCode, { readonly name: string; readonly httpStatus: number }>;

/** A canonical code name ("INVALID_ARGUMENT"). */
export type CodeName = (typeof CODES)[GrpcCode]["name"];

/** Canonical code names by code; ErrorInfo.reason defaults to the name of the code (docs/published-api.md "Errors"). */
export const CODE_NAMES: Readonly<Record<number, CodeName>> = Object.fromEntries(Object.entries(CODES).map(([code, { name }]) => [code, name]));

/** The status of the one answer whose status its reason decides (module comment). */
const METHOD_NOT_ALLOWED_STATUS = 405;

/**
 * The HTTP status of an error answer with `code` (and, where it has one, its ErrorInfo
 * `reason`): the table above, 405 for METHOD_NOT_ALLOWED, 200 for OK (0), and 500 for a
 * number that is no code.
 */
export function httpStatusOf(code: number, reason?: string): number {
  if (reason === "METHOD_NOT_ALLOWED") return METHOD_NOT_ALLOWED_STATUS;
  if (code === 0) return 200;
  return CODES[code as GrpcCode]?.httpStatus ?? 500;
}
