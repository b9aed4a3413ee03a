/**
 * The one-port listener and the pinned transport limits. Timeouts are proven with short
 * overrides; the production values are asserted separately.
 */
import http2 from "node:http2";
import net from "node:net";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LIMITS } from "../../src/server/config.js";
import { startTestApp, type TestApp } from "../support/app.js";

const CREATE = "/chainguard.platform.iam.v2beta1.GroupsService/CreateGroup";

function h2Request(url: string, path: string, body: string, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const session = http2.connect(url);
    session.on("error", reject);
    const req = session.request({ ":method": "POST", ":path": path, "content-type": "application/json", ...headers });
    let data = "";
    let status = 0;
    req.on("response", (h) => {
      status = Number(h[":status"]);
    });
    req.setEncoding("utf8");
    req.on("data", (c) => {
      data += c;
    });
    req.on("end", () => {
      session.close();
      resolve({ status, body: data });
    });
    req.on("error", reject);
    req.end(body);
  });
}

function waitForClose(socket: net.Socket | http2.ClientHttp2Session, withinMs: number): Promise<number> {
  const start = Date.now();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`not closed within ${withinMs} ms`)), withinMs);
    socket.once("close", () => {
      clearTimeout(timer);
      resolve(Date.now() - start);
    });
  });
}

describe("one port for HTTP/1.1 and h2c, with pinned limits", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(
      {},
      {
        firstBytesTimeoutMs: 300,
        http2IdleMs: 400,
        headersTimeoutMs: 500,
        requestTimeoutMs: 1000,
        connectionsCheckingIntervalMs: 100,
      },
    );
  });
  afterAll(async () => t.close());

  it("serves Connect JSON over HTTP/1.1 and over h2c prior knowledge on the same port", async () => {
    const h1 = await fetch(t.url + CREATE, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${t.token}` },
      body: JSON.stringify({ group: { name: "via http1" } }),
    });
    expect(h1.status).toBe(200);
    const created = await h1.json();
    expect(created.name).toBe("via http1");
    // Default values are written out on the JSON doors, as the published JSON shows them.
    expect(created).toMatchObject({ description: "", resourceLimits: {}, verified: false });
    const h2 = await h2Request(t.url, CREATE, JSON.stringify({ group: { name: "via h2c" } }), { authorization: `Bearer ${t.token}` });
    expect(h2.status).toBe(200);
    expect(JSON.parse(h2.body).name).toBe("via h2c");
  });

  it("advertises maxConcurrentStreams 100 to HTTP/2 clients", async () => {
    const session = http2.connect(t.url);
    const settings = await new Promise<http2.Settings>((resolve) => session.once("remoteSettings", resolve));
    session.close();
    expect(settings.maxConcurrentStreams).toBe(100);
  });

  it("closes a connection that sends no bytes (first-bytes timeout)", async () => {
    const socket = net.connect(t.app.port, "127.0.0.1");
    const ms = await waitForClose(socket, 3000);
    expect(ms).toBeGreaterThanOrEqual(250);
  });

  it("closes an HTTP/1.1 connection whose headers never complete", async () => {
    const socket = net.connect(t.app.port, "127.0.0.1");
    socket.on("data", () => {});
    socket.write("POST / HTTP/1.1\r\nHost: x\r\n");
    await waitForClose(socket, 5000);
  });

  it("closes idle HTTP/2 sessions", async () => {
    const session = http2.connect(t.url);
    session.on("error", () => {});
    const goaway = new Promise<void>((resolve) => session.once("goaway", () => resolve()));
    await waitForClose(session, 5000);
    await goaway;
  });

  it("answers 431 to request headers over 16 KiB", async () => {
    const res = await fetch(t.url + CREATE, {
      method: "POST",
      headers: { "content-type": "application/json", "x-big": "a".repeat(20 * 1024) },
      body: "{}",
    }).catch((e: Error) => e);
    // undici surfaces the 431 or a closed socket; either way the request was refused.
    if (res instanceof Response) expect(res.status).toBe(431);
    else expect(res).toBeInstanceOf(Error);
  });

  it("bounds decompressed size: a small gzip body inflating past 1 MiB is RESOURCE_EXHAUSTED", async () => {
    const huge = JSON.stringify({ group: { name: "bomb", description: "a".repeat(3 * 1024 * 1024) } });
    const res = await fetch(t.url + CREATE, {
      method: "POST",
      headers: { "content-type": "application/json", "content-encoding": "gzip" },
      body: gzipSync(huge),
    });
    const body = await res.json();
    expect(body.code).toBe("resource_exhausted");
  });

  it("rejects unknown JSON fields on the Connect JSON door", async () => {
    const res = await fetch(t.url + CREATE, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ group: { name: "okay", nmae: "typo" } }),
    });
    expect(res.status).toBe(400);
    expect((await res.json()).code).toBe("invalid_argument");
  });

  it("refuses client deadlines above the ceiling", async () => {
    const res = await fetch(t.url + CREATE, {
      method: "POST",
      headers: { "content-type": "application/json", "connect-timeout-ms": String(LIMITS.maxTimeoutMs + 1) },
      body: JSON.stringify({ group: { name: "deadline" } }),
    });
    expect(res.status).toBe(400);
    const body = await res.json();
    expect(body.code).toBe("invalid_argument");
    expect(body.message).toContain(`<= ${LIMITS.maxTimeoutMs}`);
  });

  it("pins the production limits", () => {
    expect(LIMITS).toMatchObject({ firstBytesTimeoutMs: 10_000, maxConnections: 4096, maxConnectionsPerPeer: 1024 });
    expect(LIMITS).toMatchObject({
      maxMessageBytes: 1024 * 1024,
      maxConcurrentStreams: 100,
      maxHeaderBytes: 16 * 1024,
      headersTimeoutMs: 10_000,
      requestTimeoutMs: 30_000,
      maxTimeoutMs: 60_000,
    });
    expect(LIMITS.http2IdleMs).toBeGreaterThan(0);
    expect(LIMITS.firstBytesTimeoutMs).toBeGreaterThan(0);
  });
});

/** An h2c session that has exchanged SETTINGS (past the first-bytes bound): a held connection. */
async function heldSession(url: string, localAddress = "127.0.0.1"): Promise<http2.ClientHttp2Session> {
  const { port } = new URL(url);
  const session = http2.connect(url, { createConnection: () => net.connect({ port: Number(port), host: "127.0.0.1", localAddress }) });
  session.on("error", () => {});
  await new Promise((resolve) => session.once("remoteSettings", resolve));
  return session;
}

/**
 * Sends one whole HTTP/1.1 request at once from `localAddress` and returns what came back
 * before the server closed: an accepted connection answers (401 without a token), one
 * refused by a cap is closed before its bytes are read, so nothing comes back.
 */
function requestFrom(port: number, localAddress: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host: "127.0.0.1", localAddress });
    let data = "";
    socket.setEncoding("utf8");
    socket.on("data", (c: string) => {
      data += c;
      if (data.includes("\r\n\r\n")) socket.end();
    });
    socket.on("error", () => {});
    socket.once("close", () => resolve(data));
    socket.write("GET /iam/v2beta1/groups HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  });
}

/** Retries `requestFrom` until answered: the server frees a slot when it sees the close. */
async function answeredSoon(port: number, localAddress: string): Promise<string> {
  for (let attempt = 0; ; attempt++) {
    const answer = await requestFrom(port, localAddress);
    if (answer !== "" || attempt === 50) return answer;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe("an HTTP/2 preface alone is held no longer than the first-bytes timeout", () => {
  let t: TestApp;
  beforeAll(async () => {
    // The idle timeout is far away: a close within the test's time is the first-bytes bound.
    t = await startTestApp({}, { firstBytesTimeoutMs: 100, http2IdleMs: 60_000 });
  });
  afterAll(async () => t.close());

  it("closes a connection that sent only PRI", async () => {
    const socket = net.connect(t.app.port, "127.0.0.1");
    socket.on("data", () => {});
    socket.write("PRI");
    await waitForClose(socket, 5000);
  });

  it("closes a connection that sent the whole preface and nothing else", async () => {
    const socket = net.connect(t.app.port, "127.0.0.1");
    socket.on("data", () => {}); // the server's SETTINGS
    socket.write("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
    await waitForClose(socket, 5000);
  });

  it("keeps a session that sent its SETTINGS past the first-bytes timeout", async () => {
    const session = await heldSession(t.url);
    const closed = waitForClose(session, 300).then(
      () => "closed",
      () => "open",
    );
    expect(await closed).toBe("open");
    const req = session.request({ ":method": "GET", ":path": "/iam/v2beta1/groups" });
    req.on("data", () => {});
    const status = await new Promise((resolve) => req.once("response", (h) => resolve(h[":status"])));
    expect(status).toBe(401);
    session.close();
  });
});

describe("connection caps", () => {
  it("closes a peer's connection over its cap at once; other peers still connect", async () => {
    const t = await startTestApp({}, { maxConnectionsPerPeer: 2, maxConnections: 100, firstBytesTimeoutMs: 60_000 });
    try {
      const held = [await heldSession(t.url), await heldSession(t.url)];
      expect(await requestFrom(t.app.port, "127.0.0.1")).toBe("");
      expect(await requestFrom(t.app.port, "127.0.0.2")).toMatch(/^HTTP\/1\.1 401/);
      held[0]?.close();
      expect(await answeredSoon(t.app.port, "127.0.0.1")).toMatch(/^HTTP\/1\.1 401/);
      held[1]?.close();
    } finally {
      await t.close();
    }
  });

  it("closes any connection over the server's cap at once", async () => {
    const t = await startTestApp({}, { maxConnectionsPerPeer: 100, maxConnections: 2, firstBytesTimeoutMs: 60_000 });
    try {
      const held = [await heldSession(t.url, "127.0.0.1"), await heldSession(t.url, "127.0.0.2")];
      expect(await requestFrom(t.app.port, "127.0.0.3")).toBe("");
      held[0]?.close();
      expect(await answeredSoon(t.app.port, "127.0.0.3")).toMatch(/^HTTP\/1\.1 401/);
      held[1]?.close();
    } finally {
      await t.close();
    }
  });
});
