/**
 * What the server knows about a request before any door reads it, for the call log: the
 * request id, the peer address and the W3C trace id.
 *
 * The front door (create-app.ts) builds one CallMeta per request, hangs it on the Node request
 * and sets the `x-request-id` response header there, so every door's answer carries it
 * without each door knowing (they all write their head with `writeHead`, which keeps headers
 * set before). Each door then puts the CallMeta into its HandlerContext's values under
 * CALL_META, where the call pipeline reads it for the per-call log line.
 *
 * A client's `x-request-id` is echoed only when it is short and made of safe characters: the
 * id goes into log lines and a response header, so a client must not be able to forge log
 * fields, split a header or fill the log with a long value. Anything else is replaced by a
 * fresh id (and the replacement is what the handlers see in their request headers too, so
 * no handler ever sees a refused value). A request without one gets a fresh id that is NOT
 * added to its headers: every door copies the request headers into the HandlerContext's
 * `Headers`, where one more entry costs a validated append on every call; the id is in
 * CALL_META for whoever needs it.
 */
import { randomUUID } from "node:crypto";
import { createContextKey } from "@connectrpc/connect";

export interface CallMeta {
  /** The client's sane `x-request-id`, or one we generated. */
  readonly requestId: string;
  /** The TCP peer's address (a proxy's when behind one). */
  readonly peer: string | undefined;
  /** The trace id of a valid W3C `traceparent`, else undefined. */
  readonly traceId: string | undefined;
}

export const CALL_META = createContextKey<CallMeta | undefined>(undefined, { description: "request id, peer and trace id" });

/** Longest `x-request-id` taken from a client (a UUID is 36; trace ids 32). */
export const MAX_REQUEST_ID_LENGTH = 128;
/** Letters, digits and `-._:+=/@`: enough for UUIDs, ULIDs and base64 ids; no spaces, quotes or controls. */
const SANE_REQUEST_ID = /^[A-Za-z0-9\-._:+=/@]+$/;
/** version-traceid-parentid-flags, lower-case hex (W3C Trace Context §3.2). */
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}(-.*)?$/;
const ZERO_TRACE_ID = "0".repeat(32);
const ZERO_PARENT_ID = "0".repeat(16);

const META = Symbol("trellis.callMeta");
type WithMeta = { [META]?: CallMeta };

interface RequestLike {
  headers: Record<string, string | string[] | undefined>;
  readonly socket: { readonly remoteAddress?: string } | null;
}
interface ResponseLike {
  setHeader(name: string, value: string): unknown;
}

/** The client's request id when it is sane, else undefined. */
export function saneRequestId(value: string | string[] | undefined): string | undefined {
  if (typeof value !== "string" || value.length === 0 || value.length > MAX_REQUEST_ID_LENGTH) return undefined;
  return SANE_REQUEST_ID.test(value) ? value : undefined;
}

/** The trace id of a W3C traceparent header, or undefined when it is absent or invalid. */
export function traceIdOf(value: string | string[] | undefined): string | undefined {
  if (typeof value !== "string" || value.length > 512) return undefined;
  const m = TRACEPARENT.exec(value);
  if (!m) return undefined;
  const [, version, traceId, parentId, rest] = m as unknown as [string, string, string, string, string | undefined];
  // Version ff is invalid; version 00 has nothing after the flags.
  if (version === "ff" || (version === "00" && rest !== undefined)) return undefined;
  if (traceId === ZERO_TRACE_ID || parentId === ZERO_PARENT_ID) return undefined;
  return traceId;
}

/**
 * Builds the request's CallMeta, keeps it on the request and sets `x-request-id` on the
 * response. Called once per request in the front door, before any door.
 */
export function attachCallMeta(req: RequestLike, res: ResponseLike): CallMeta {
  const headers = req.headers;
  const sent = headers["x-request-id"];
  let requestId = saneRequestId(sent);
  if (requestId === undefined) {
    requestId = randomUUID();
    // Handlers and the log see the same id the client gets back, never the refused value.
    if (sent !== undefined) headers["x-request-id"] = requestId;
  }
  const meta: CallMeta = { requestId, peer: req.socket?.remoteAddress, traceId: traceIdOf(headers.traceparent) };
  (req as WithMeta)[META] = meta;
  res.setHeader("x-request-id", requestId);
  return meta;
}

/** The CallMeta the front door attached to this request (undefined if none was). */
export function callMetaOf(req: object): CallMeta | undefined {
  return (req as WithMeta)[META];
}
