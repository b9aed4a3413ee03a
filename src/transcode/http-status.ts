/**
 * gRPC code → HTTP status, the table google/rpc/code.proto, grpc-gateway, Envoy and
 * vanguard share (FAILED_PRECONDITION is 400, not 412). Ours, because connect's is private.
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

export function httpStatusFromCode(code: number): number {
  return TABLE[code] ?? 500;
}
