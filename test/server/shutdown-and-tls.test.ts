/** Graceful close of the listener, and TLS with ALPN on the same port. */
import fs from "node:fs";
import https from "node:https";
import http2 from "node:http2";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { listen } from "../../src/server/listener.js";
import { startTestApp } from "../support/app.js";
import { selfSignedCert } from "../support/tls.js";

describe("graceful close", () => {
  it("finishes in-flight requests, then refuses new connections", async () => {
    // The handler holds its answer until the test has asked the listener to close: the
    // request is in flight at close time by construction, not by timing.
    let arrived!: () => void;
    const requestArrived = new Promise<void>((r) => {
      arrived = r;
    });
    let answer!: () => void;
    const listener = await listen(
      (_req, res) => {
        answer = () => {
          (res as import("node:http").ServerResponse).writeHead(200, { "content-type": "text/plain" });
          res.end("done");
        };
        arrived();
      },
      { host: "127.0.0.1", port: 0 },
    );
    const inFlight = fetch(`http://127.0.0.1:${listener.port}/slow`).then((r) => r.text());
    await requestArrived;
    const closed = listener.close(5000);
    const refused = () =>
      new Promise<boolean>((resolve) => {
        const s = net.connect(listener.port, "127.0.0.1");
        s.once("error", () => resolve(true));
        s.once("connect", () => {
          s.destroy();
          resolve(false);
        });
      });
    // New connections are refused first, while the request is still unanswered ...
    expect(await refused()).toBe(true);
    // ... and the in-flight request still gets its answer.
    answer();
    expect(await inFlight).toBe("done");
    await closed;
    expect(await refused()).toBe(true);
  });
});

describe("TLS", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-tls-"));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it("serves HTTP/1.1 and HTTP/2 (ALPN) on one TLS port", async () => {
    const { certFile, keyFile } = selfSignedCert(dir);
    const ca = fs.readFileSync(certFile);
    const t = await startTestApp({ tls: { certFile, keyFile } });
    try {
      expect(t.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
      const path1 = "/chainguard.platform.iam.v2beta1.GroupsService/CreateGroup";
      const h1 = await new Promise<{ version: string; body: string }>((resolve, reject) => {
        const headers = { "content-type": "application/json", authorization: `Bearer ${t.token}` };
        const req = https.request(`${t.url}${path1}`, { method: "POST", ca, headers }, (res) => {
          let body = "";
          res.setEncoding("utf8").on("data", (c) => {
            body += c;
          });
          res.on("end", () => resolve({ version: res.httpVersion, body }));
        });
        req.on("error", reject);
        req.end(JSON.stringify({ group: { name: "over tls" } }));
      });
      expect(h1.version).toBe("1.1");
      expect(JSON.parse(h1.body).name).toBe("over tls");

      const session = http2.connect(t.url, { ca });
      const h2 = await new Promise<string>((resolve, reject) => {
        const req = session.request({ ":method": "POST", ":path": path1, "content-type": "application/json", authorization: `Bearer ${t.token}` });
        let body = "";
        req.setEncoding("utf8").on("data", (c) => {
          body += c;
        });
        req.on("end", () => resolve(body));
        req.on("error", reject);
        req.end(JSON.stringify({ group: { name: "over h2 tls" } }));
      });
      expect(session.alpnProtocol).toBe("h2");
      session.close();
      expect(JSON.parse(h2).name).toBe("over h2 tls");
    } finally {
      await t.close();
    }
  });

  it("closes a TLS connection that never finishes its handshake, and one over its peer's cap at once", async () => {
    const { certFile, keyFile } = selfSignedCert(dir);
    // The first-bytes bound is short and the idle one far away.
    const t = await startTestApp({ tls: { certFile, keyFile } }, { firstBytesTimeoutMs: 100, http2IdleMs: 60_000, maxConnectionsPerPeer: 1 });
    try {
      const silent = net.connect(t.app.port, "127.0.0.1");
      silent.on("error", () => {});
      await new Promise((resolve) => silent.once("connect", resolve));
      // A second connection from the same peer is over the cap of 1: closed at once.
      const second = net.connect(t.app.port, "127.0.0.1");
      second.on("error", () => {});
      await new Promise((resolve) => second.once("close", resolve));
      expect(silent.destroyed).toBe(false);
      // The silent one is closed by the handshake bound (Node's default would be 120 s).
      await new Promise((resolve) => silent.once("close", resolve));
    } finally {
      await t.close();
    }
  });
});

describe("requests answered before their body was read", () => {
  it("HTTP/1.1: the early answer says connection: close", async () => {
    const { default: http } = await import("node:http");
    const t = await startTestApp();
    try {
      const headers = await new Promise<import("node:http").IncomingHttpHeaders>((resolve, reject) => {
        const req = http.request(`${t.url}/chainguard.platform.iam.v2beta1.GroupsService/CreateGroup`, {
          method: "POST",
          headers: { "content-type": "application/json" },
        });
        req.on("response", (res) => {
          res.resume();
          resolve(res.headers);
        });
        req.on("error", reject);
        req.write(`{"group":{"name":"abc","description":"${"x".repeat(2 * 1024 * 1024)}`);
        req.end('"}}');
      });
      expect(headers.connection).toBe("close");
    } finally {
      await t.close();
    }
  });

  it("gRPC: a refused over-limit upload does not hold shutdown for the grace period", async () => {
    const { createClient } = await import("@connectrpc/connect");
    const { GroupsService } = await import("../../gen/chainguard/platform/iam/v2beta1/groups_pb.js");
    const { closeGrpcClients, createGrpcJsTransport } = await import("../support/transports.js");
    // A 60 s grace: if close() waited for it, this test would time out.
    const t = await startTestApp({}, { shutdownGraceMs: 60_000 });
    const client = createClient(GroupsService, createGrpcJsTransport(t.url));
    const err = await client.createGroup({ group: { name: "abc", description: "x".repeat(1024 * 1024 + 10) } }).catch((e: unknown) => e as { code: number });
    expect((err as { code: number }).code).toBe(8);
    closeGrpcClients();
    await t.close();
  }, 15_000);
});
