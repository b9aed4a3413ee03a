/**
 * gRPC status code → HTTP status: the table of google/rpc/code.proto, which grpc-gateway
 * (HTTPStatusFromCode), Envoy, vanguard-go and the Connect protocol (since RFC 003) all use.
 * FAILED_PRECONDITION is 400, not 412; CANCELLED is the non-standard 499. Ours, because
 * connect's `codeToHttpStatus` is private API.
 *
 * The REST door overrides this table in exactly three places, each with the gRPC code kept
 * in the body: 405 for a path that exists under other methods (code UNIMPLEMENTED), 413 for
 * a body over the size cap (code RESOURCE_EXHAUSTED) and 415 for a body that is not JSON
 * (code INVALID_ARGUMENT).
 */
const TABLE: Readonly<Record<number, number>> = {
  0: 200,
  1: 499,
  2: 500,
  3: 400,
  4: 504,
  5: 404,
  6: 409,
  7: 403,
  8: 429,
  9: 400,
  10: 409,
  11: 400,
  12: 501,
  13: 500,
  14: 503,
  15: 500,
  16: 401,
};

/** The HTTP status for a gRPC code; 500 for a number outside 0..16. */
export function httpStatusFromCode(code: number): number {
  return TABLE[code] ?? 500;
}
