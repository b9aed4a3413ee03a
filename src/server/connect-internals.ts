/**
 * Every name we take from connect's protocol subpaths (`@connectrpc/connect/protocol`,
 * `/protocol-connect`, `/protocol-grpc`, `/protocol-grpc-web`), and why.
 *
 * These subpaths are exported by the package but are connect's building blocks, not its
 * documented API: their names and behaviour may change in any release. The fast unary doors
 * (fast-unary/), the error finishing of connect-node's own answers (protocol-errors.ts) and the
 * dispatcher's own error answers (request-errors.ts) use them for one reason: to write bytes
 * that are connect-node's by construction (its parsers, its framing, its status encoding)
 * instead of a copy of them that could drift. Keeping them in this one module means an upgrade
 * of @connectrpc/connect has one list to re-check (docs/connect-upgrade.md says what, and which
 * tests prove it); the package is pinned to an exact version in package.json for the same reason.
 *
 * Nothing here has behaviour of its own: re-exports only, so the hot paths pay nothing for it.
 */

// --- @connectrpc/connect/protocol: shared by all protocols --------------------------------
export {
  /**
   * Picks the response compression from the client's accept header exactly as connect-node's
   * handlers do (fast doors), so `grpc-encoding` / `content-encoding` of an answer match.
   */
  compressionNegotiate,
  /**
   * The AbortSignal that fires at a deadline with connect's own DEADLINE_EXCEEDED reason: the
   * fast doors' lazily built context (fast-unary/shared.ts createLeanContext) arms it only
   * when a handler reads `signal`, with the same reason connect-node's context gives.
   */
  createDeadlineSignal,
  /** Links deadline, request and shutdown signals in connect-node's order (same abort reason). */
  createLinkedAbortController,
  /**
   * Per method: the request parser and response serializer connect-node builds from the same
   * options (binary and JSON, read limit), so the fast doors decode and encode identically.
   */
  createMethodSerializationLookup,
  type MethodSerializationLookup,
  /** The 5-byte gRPC / gRPC-web envelope (fast doors' data frames; request-errors.ts's trailer frame). */
  encodeEnvelope,
  /** Compresses one envelope above connect-node's threshold, setting its flag as connect-node does. */
  envelopeCompress,
} from "@connectrpc/connect/protocol";

// --- @connectrpc/connect/protocol-connect: the Connect protocol ----------------------------
export {
  /**
   * Code <-> the Connect protocol's snake_case code name: protocol-errors.ts reads and rewrites
   * the `code` of connect-node's Connect error bodies.
   */
  codeFromString,
  codeToString,
  /** The Connect error body `{code, message, details}` byte for byte as connect-node writes it. */
  errorToJsonBytes,
  /** `connect-timeout-ms` parsing and its ceiling, connect-node's own (fast Connect door). */
  parseTimeout as parseConnectTimeout,
  /** Folds unary trailers into `trailer-`-prefixed headers, as Connect unary answers carry them. */
  trailerMux,
} from "@connectrpc/connect/protocol-connect";

// --- @connectrpc/connect/protocol-grpc: gRPC over h2 ---------------------------------------
export {
  /** `grpc-timeout` parsing (units, digit limit, ceiling), connect-node's own (fast gRPC door). */
  parseTimeout as parseGrpcTimeout,
  /**
   * Writes an error into trailers as connect-node does: `grpc-status`, its percent-encoded
   * `grpc-message` and `grpc-status-details-bin` (fast doors, request-errors.ts).
   */
  setTrailerStatus,
} from "@connectrpc/connect/protocol-grpc";

// --- @connectrpc/connect/protocol-grpc-web: gRPC-web ---------------------------------------
export {
  /** `grpc-timeout` as gRPC-web reads it (the same rules, its own export: fast gRPC-web door). */
  parseTimeout as parseGrpcWebTimeout,
  /** The trailer frame's flag (0x80) and its `name: value\r\n` body, as connect-node writes them. */
  trailerFlag,
  trailerSerialize,
} from "@connectrpc/connect/protocol-grpc-web";
