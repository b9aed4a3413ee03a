/**
 * One TCP port for every protocol.
 *
 * Cleartext: Node's `http2.createServer({ allowHTTP1 })` does not serve HTTP/1.1 without TLS
 * (nodejs/node#26795), so each accepted socket is routed by its first bytes: the HTTP/2
 * client preface ("PRI * HTTP/2.0…") goes to an http2 server (gRPC with prior knowledge, h2c
 * Connect/gRPC-web/REST), anything else to an http server (HTTP/1.1 Connect, gRPC-web, REST).
 * A socket that sends nothing within `firstBytesTimeoutMs` is closed (slowloris guard), and so
 * is an HTTP/2 session that has not sent its first SETTINGS frame by then: a client that
 * sends only `PRI` (enough to be routed to HTTP/2) or the preface alone must not hold a
 * connection for the 120 s idle timeout. TLS handshakes get the same bound.
 *
 * Connections are capped per server (`maxConnections`) and per peer address
 * (`maxConnectionsPerPeer`); one over a cap is closed as soon as it is accepted, before any
 * of its bytes are read, so one client cannot take all the file descriptors.
 *
 * TLS: one `http2.createSecureServer({ allowHTTP1: true })`, ALPN picks h2 or http/1.1.
 *
 * Pinned limits (config.ts LIMITS): h2 maxConcurrentStreams and idle-session close; HTTP/1.1
 * headers/request/keep-alive timeouts and header size.
 */
import fs from "node:fs";
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import type { AddressInfo } from "node:net";
import { LIMITS, type Limits } from "./config.js";

export type RequestHandler = (req: http.IncomingMessage | http2.Http2ServerRequest, res: http.ServerResponse | http2.Http2ServerResponse) => void;

export interface Listener {
  readonly host: string;
  readonly port: number;
  /** Stops accepting; lets in-flight requests finish up to `graceMs`, then destroys what is left. */
  close(graceMs?: number): Promise<void>;
}

export interface ListenOptions {
  readonly host: string;
  readonly port: number;
  readonly tls?: { readonly certFile: string; readonly keyFile: string };
  /** Overrides of the pinned limits (tests use short timeouts). */
  readonly limits?: Partial<Limits>;
}

const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");

/** Starts listening; resolves once the port is bound. */
export async function listen(userHandler: RequestHandler, options: ListenOptions): Promise<Listener> {
  const limits: Limits = { ...LIMITS, ...options.limits };
  // Responses not yet fully written: what the shutdown grace period waits for.
  let unanswered = 0;
  const handler: RequestHandler = (req, res) => {
    unanswered++;
    let counted = true;
    const answered = () => {
      if (counted) {
        counted = false;
        unanswered--;
      }
    };
    // A wrapper of Node's response: docs/architecture.md lists it with the others
    // ("What is patched on Node's request and response objects").
    const end = res.end;
    res.end = function (this: unknown, ...args: unknown[]) {
      const result = (end as (...a: unknown[]) => unknown).apply(this, args);
      answered();
      return result;
    } as typeof res.end;
    res.once("close", answered);
    if ("stream" in req) {
      // Trailers (the gRPC status) are sent from 'wantTrailers'; release only after them.
    } else {
      closeIfAnsweredEarly(req, res as http.ServerResponse);
      res.once("finish", () => releaseUnreadRequest(req));
    }
    userHandler(req, res);
  };
  const h2Options: http2.ServerOptions = {
    // maxHeaderListSize counts 32 bytes of overhead per header on top of names and values.
    settings: { maxConcurrentStreams: limits.maxConcurrentStreams, maxHeaderListSize: limits.maxHeaderBytes + 4096 },
    maxSessionRejectedStreams: 100,
    maxSessionInvalidFrames: 1000,
  };
  const sockets = new Set<net.Socket>();
  const sessions = new Set<http2.Http2Session>();
  const trackSession = (session: http2.Http2Session) => {
    sessions.add(session);
    // Until the client's first SETTINGS frame arrives the session is only a preface (or part
    // of one): it gets the first-bytes bound, not the idle one.
    const firstFrames = setTimeout(() => session.destroy(), limits.firstBytesTimeoutMs);
    firstFrames.unref();
    session.once("remoteSettings", () => clearTimeout(firstFrames));
    session.once("close", () => {
      clearTimeout(firstFrames);
      sessions.delete(session);
    });
    // Idle sessions are closed gracefully (GOAWAY; open streams finish).
    session.setTimeout(limits.http2IdleMs, () => session.close());
  };

  let front: net.Server;
  let h1: http.Server | undefined;
  let h2: http2.Http2Server | http2.Http2SecureServer;

  if (options.tls) {
    const secure = http2.createSecureServer(
      {
        ...h2Options,
        allowHTTP1: true,
        // A TLS handshake that has not finished by then is dropped (Node's default is 120 s).
        handshakeTimeout: limits.firstBytesTimeoutMs,
        cert: fs.readFileSync(options.tls.certFile),
        key: fs.readFileSync(options.tls.keyFile),
      },
      handler,
    );
    h2 = secure;
    front = secure;
  } else {
    const plainH1 = http.createServer(
      {
        maxHeaderSize: limits.maxHeaderBytes,
        headersTimeout: limits.headersTimeoutMs,
        requestTimeout: limits.requestTimeoutMs,
        keepAliveTimeout: limits.keepAliveTimeoutMs,
        connectionsCheckingInterval: limits.connectionsCheckingIntervalMs,
      },
      handler,
    );
    // Node starts enforcing headersTimeout/requestTimeout from the server's 'listening' event
    // (setupConnectionsTracking). This server never listens itself (the front socket does), so
    // without this emit those timeouts would silently never fire.
    plainH1.emit("listening");
    h1 = plainH1;
    h2 = http2.createServer(h2Options, handler);
    front = net.createServer((socket) => routeByPreface(socket, plainH1, h2 as http2.Http2Server, limits.firstBytesTimeoutMs));
  }
  h2.on("session", trackSession);
  // Node closes connections over the total itself, before 'connection' is emitted.
  front.maxConnections = limits.maxConnections;
  const perPeer = new Map<string, number>();
  // Prepended: runs before the server's own connection listener (routing, TLS), so a
  // connection over its peer's cap is closed before anything reads from it.
  front.prependListener("connection", (socket: net.Socket) => {
    const peer = socket.remoteAddress ?? "";
    const held = perPeer.get(peer) ?? 0;
    if (held >= limits.maxConnectionsPerPeer) {
      socket.destroy();
      return;
    }
    perPeer.set(peer, held + 1);
    sockets.add(socket);
    socket.once("close", () => {
      sockets.delete(socket);
      const left = (perPeer.get(peer) ?? 1) - 1;
      if (left > 0) perPeer.set(peer, left);
      else perPeer.delete(peer);
    });
  });

  await new Promise<void>((resolve, reject) => {
    front.once("error", reject);
    front.listen(options.port, options.host, () => {
      front.off("error", reject);
      resolve();
    });
  });
  const address = front.address() as AddressInfo;

  return {
    host: options.host,
    port: address.port,
    async close(graceMs = limits.shutdownGraceMs) {
      const closed = new Promise<void>((resolve) => front.close(() => resolve()));
      for (const session of sessions) session.close();
      // Keep-alive sockets that go idle after their last in-flight response are closed too.
      const sweep = h1 ? setInterval(() => h1?.closeIdleConnections(), 50) : undefined;
      if (h1) {
        h1.close();
        h1.closeIdleConnections();
      }
      const destroyAll = () => {
        for (const session of sessions) session.destroy();
        h1?.closeAllConnections();
        for (const socket of sockets) socket.destroy();
      };
      const timer = setTimeout(destroyAll, graceMs);
      timer.unref();
      // Once every response is written, nothing is left to wait for: connections held open
      // only by clients (e.g. the unread rest of a refused upload) are closed after a short
      // flush delay instead of the whole grace period.
      let quietSince = 0;
      const watch = setInterval(() => {
        if (unanswered > 0) quietSince = 0;
        else if (quietSince === 0) quietSince = Date.now();
        else if (Date.now() - quietSince >= 100) destroyAll();
      }, 25);
      watch.unref();
      await closed;
      clearTimeout(timer);
      clearInterval(watch);
      if (sweep) clearInterval(sweep);
    },
  };
}

/** Hands a cleartext socket to the HTTP/2 or HTTP/1.1 server depending on its first bytes. */
function routeByPreface(socket: net.Socket, h1: http.Server, h2: http2.Http2Server, firstBytesTimeoutMs: number): void {
  if (socket.destroyed) return; // refused by the connection caps
  let buffered: Buffer = Buffer.alloc(0);
  socket.setTimeout(firstBytesTimeoutMs, () => socket.destroy());
  const onError = () => socket.destroy();
  const onData = (chunk: Buffer) => {
    buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
    // "P" and "PR" could still be POST/PUT/PATCH; three bytes decide.
    if (buffered.length < 3 && buffered.equals(PREFACE.subarray(0, buffered.length))) return;
    socket.off("data", onData);
    socket.off("error", onError);
    socket.setTimeout(0);
    socket.pause();
    socket.unshift(buffered);
    if (buffered.subarray(0, 3).equals(PREFACE.subarray(0, 3))) {
      // Do not resume(): http2 reads socket.readableLength itself on the next tick.
      h2.emit("connection", socket);
    } else {
      h1.emit("connection", socket);
      socket.resume();
    }
  };
  socket.on("error", onError);
  socket.on("data", onData);
}

/**
 * A response may finish before its request body was read (e.g. a message over the size
 * limit is refused early). Leaving the rest unread would pin the HTTP/2 stream half-open, or
 * the HTTP/1.1 connection busy, until the shutdown grace or a timeout. HTTP/2: reset the
 * stream with NO_ERROR, which tells the client to stop sending (RFC 9113 §8.1). HTTP/1.1:
 * end the connection once the response is flushed and discard what still arrives.
 */
function releaseUnreadRequest(req: http.IncomingMessage | http2.Http2ServerRequest): void {
  if (req.complete) return;
  if ("stream" in req) {
    // Discard what is buffered so the stream can end, then tell the client to stop sending.
    req.stream.resume();
    if (!req.stream.closed) req.stream.close(http2.constants.NGHTTP2_NO_ERROR);
    return;
  }
  // HTTP/1.1: the response said `connection: close` (closeIfAnsweredEarly); Node closes the
  // socket after it. Discard whatever body still arrives meanwhile.
  req.resume();
}

/**
 * HTTP/1.1: a response that starts before the request body was read ends the connection.
 * A wrapper of Node's response: docs/architecture.md lists it with the others ("What is
 * patched on Node's request and response objects").
 */
function closeIfAnsweredEarly(req: http.IncomingMessage, res: http.ServerResponse): void {
  const writeHead = res.writeHead;
  res.writeHead = function (this: http.ServerResponse, ...args: unknown[]) {
    if (!req.complete) this.setHeader("connection", "close");
    return (writeHead as (...a: unknown[]) => http.ServerResponse).apply(this, args);
  } as typeof res.writeHead;
}
