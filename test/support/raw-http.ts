/**
 * Requests no well-behaved client would send, byte for byte: HTTP/1.1 over a plain socket
 * (any method, target, header line or Host, or none) and HTTP/2 with any header block the
 * node client lets through (`:authority` included). Both resolve with what came back, or
 * with `status: 0` when the server closed or reset without an answer.
 */
import http2 from "node:http2";
import net from "node:net";

export interface RawResponse {
  /** HTTP status; 0 when no response head arrived. */
  readonly status: number;
  /** Response headers, and for HTTP/2 the trailers, lower-case names (last value wins). */
  readonly headers: Record<string, string>;
  readonly body: Buffer;
}

/**
 * Sends `head` (request line and header lines, without the blank line) and `body` on a fresh
 * connection, adding `connection: close`; resolves as soon as one whole response has arrived
 * (or the connection closed, or `timeoutMs` passed: then with what came, status 0 if nothing).
 * `headRequest`: the request was HEAD, so the response has no body whatever it declares.
 */
export function rawHttp1(url: string, head: string, body: Buffer | string = "", timeoutMs = 5000, headRequest = false): Promise<RawResponse> {
  const u = new URL(url);
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let settled = false;
    const settle = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(parseHttp1(Buffer.concat(chunks), headRequest));
    };
    const socket = net.connect(Number(u.port), u.hostname, () => {
      socket.write(Buffer.concat([Buffer.from(`${head}\r\nconnection: close\r\n\r\n`, "latin1"), Buffer.from(body)]));
    });
    const timer = setTimeout(settle, timeoutMs);
    socket.on("data", (c: Buffer) => {
      chunks.push(c);
      if (isComplete(Buffer.concat(chunks), headRequest)) settle();
    });
    socket.on("error", () => {});
    socket.on("close", settle);
  });
}

/** The bytes after any interim (1xx) responses. */
function finalResponse(data: Buffer): Buffer {
  let at = 0;
  while (/^HTTP\/1\.[01] 1\d\d/.test(data.subarray(at, at + 12).toString("latin1"))) {
    const end = data.indexOf("\r\n\r\n", at);
    if (end < 0) break;
    at = end + 4;
  }
  return data.subarray(at);
}

/** True once `data` holds one whole final response (by its content-length or chunked end). */
function isComplete(data: Buffer, headRequest: boolean): boolean {
  const response = finalResponse(data);
  const end = response.indexOf("\r\n\r\n");
  if (end < 0) return false;
  const head = response.subarray(0, end).toString("latin1").toLowerCase();
  const status = Number(/^http\/1\.[01] (\d{3})/.exec(head)?.[1] ?? 0);
  if (headRequest || status === 204 || status === 304) return true;
  const length = /\r\ncontent-length: *(\d+)/.exec(head);
  if (length) return response.length - end - 4 >= Number(length[1]);
  if (/\r\ntransfer-encoding: *chunked/.test(head)) return response.subarray(end).includes("\r\n0\r\n\r\n");
  return false;
}

/** Parses one HTTP/1.1 response (content-length, chunked or read-to-close body). */
export function parseHttp1(raw: Buffer, headRequest = false): RawResponse {
  const data = finalResponse(raw);
  const end = data.indexOf("\r\n\r\n");
  if (end < 0) return { status: 0, headers: {}, body: Buffer.alloc(0) };
  const lines = data.subarray(0, end).toString("latin1").split("\r\n");
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? "")?.[1] ?? 0);
  const headers: Record<string, string> = {};
  for (const line of lines.slice(1)) {
    const i = line.indexOf(":");
    if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  let body = headRequest ? Buffer.alloc(0) : data.subarray(end + 4);
  if (headers["transfer-encoding"] === "chunked") {
    const parts: Buffer[] = [];
    for (let at = 0; at < body.length; ) {
      const eol = body.indexOf("\r\n", at);
      if (eol < 0) break;
      const size = Number.parseInt(body.subarray(at, eol).toString("latin1"), 16);
      if (!(size > 0)) break;
      parts.push(body.subarray(eol + 2, eol + 2 + size));
      at = eol + 2 + size + 2;
    }
    body = Buffer.concat(parts);
  } else if (headers["content-length"] !== undefined) {
    body = body.subarray(0, Number(headers["content-length"]));
  }
  return { status, headers, body };
}

/**
 * One HTTP/2 request on `session` (or a session of its own, closed after). Resolves with
 * status 0 when the client refuses the headers, or the stream is reset without an answer.
 */
export function rawHttp2(
  url: string,
  headers: http2.OutgoingHttpHeaders,
  body: Buffer | string = "",
  session?: http2.ClientHttp2Session,
  timeoutMs = 5000,
): Promise<RawResponse> {
  const s = session ?? http2.connect(url).on("error", () => {});
  const done = (r: RawResponse) => {
    if (!session) s.close();
    return r;
  };
  return new Promise<RawResponse>((resolve) => {
    let stream: http2.ClientHttp2Stream;
    try {
      // Explicit, so a GET with a body sends it (the client ends GET and HEAD streams itself).
      stream = s.request(headers, { endStream: body.length === 0 });
    } catch {
      resolve(done({ status: 0, headers: {}, body: Buffer.alloc(0) }));
      return;
    }
    const seen: Record<string, string> = {};
    let status = 0;
    const take = (h: http2.IncomingHttpHeaders) => {
      for (const [k, v] of Object.entries(h)) if (typeof v === "string") seen[k] = v;
    };
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => stream.close(http2.constants.NGHTTP2_CANCEL), timeoutMs);
    stream.on("response", (h) => {
      status = Number(h[":status"] ?? 0);
      take(h);
    });
    stream.on("trailers", take);
    stream.on("data", (c: Buffer) => chunks.push(c));
    stream.on("error", () => {});
    stream.on("close", () => {
      clearTimeout(timer);
      resolve(done({ status, headers: seen, body: Buffer.concat(chunks) }));
    });
    if (body.length > 0) stream.end(body);
  });
}
