/**
 * The bench's reading of wrk and h2load: request counts, latency units and, above all, that
 * failures are counted (a benchmark that reports errors as throughput is worse than none).
 * The last test drives the real wrk when it is installed: a gRPC-web error arrives with
 * HTTP 200, so only the generated Lua script's trailer check can see it.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parseH2load } from "../../../bench/load/h2load.js";
import { parseWrk, wrk } from "../../../bench/load/wrk.js";
import { frame } from "../../../bench/scenarios.js";

const WRK_OUT = `Running 1s test @ http://127.0.0.1:18231/bad
  1 threads and 2 connections
  Latency Distribution
     50%   25.00us
     75%  435.00us
     90%    9.23ms
     99%    1.20s
  43578 requests in 1.00s, 5.90MB read
  Socket errors: connect 0, read 2, write 0, timeout 3
  Non-2xx or 3xx responses: 10
Requests/sec:  43489.85
`;

describe("parseWrk", () => {
  it("reads requests, duration and percentiles in their units", () => {
    const r = parseWrk(WRK_OUT);
    expect(r.requests).toBe(43578);
    expect(r.seconds).toBe(1);
    expect(r.p50Ms).toBeCloseTo(0.025);
    expect(r.p99Ms).toBe(1200);
  });

  it("counts non-2xx answers and socket errors, and says which", () => {
    const r = parseWrk(WRK_OUT);
    expect(r.errors).toBe(15);
    expect(r.errorDetail).toBe("non-2xx 10, socket read 2, client timeout 3");
  });
});

describe("parseH2load", () => {
  const out = (done: number, ok: number, failed: number) =>
    `finished in 2.00s, 10.00 req/s, 1KB/s\nrequests: 20 total, 20 started, ${done} done, ${ok} succeeded, ${failed} failed, ${failed} errored, 0 timeout\n`;

  it("takes percentiles from the per-request log (µs)", () => {
    const log = "1\t200\t1000\n2\t200\t3000\n3\t200\t2000\n";
    const r = parseH2load(out(20, 20, 0), log);
    expect(r).toMatchObject({ requests: 20, seconds: 2, rps: 10, p50Ms: 2, p99Ms: 3, errors: 0 });
  });

  it("counts failed streams once and non-2xx answers", () => {
    expect(parseH2load(out(20, 20, 4), "").errors).toBe(4);
    expect(parseH2load(out(20, 15, 0), "").errors).toBe(5);
  });
});

describe.skipIf(!hasWrk())("wrk with the generated gRPC-web script", () => {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "application/grpc-web+proto" });
      const bad = req.url === "/bad";
      const trailer = Buffer.from(`grpc-status: ${bad ? 5 : 0}\r\n${bad ? "grpc-message: not found\r\n" : ""}`);
      const t = frame(trailer);
      t[0] = 0x80;
      res.end(Buffer.concat([frame(Buffer.from([0x0a, 0x01, 0x61])), t]));
    });
  });
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "bench-wrk-"));
  afterAll(() => {
    server.close();
    fs.rmSync(work, { recursive: true, force: true });
  });

  it("counts every answer whose trailer is not grpc-status 0, and none of the good ones", async () => {
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const spec = (p: string) =>
      ({
        proto: "h1",
        method: "POST",
        path: p,
        headers: { "content-type": "application/grpc-web+proto" },
        body: frame(Buffer.alloc(0)),
        success: "grpc-web",
      }) as const;
    const options = { seconds: 1, connections: 2, streams: 1, runId: "t1", workDir: work };
    const bad = await wrk.run(url, spec("/bad"), options);
    expect(bad.requests).toBeGreaterThan(0);
    expect(bad.errors).toBe(bad.requests);
    const good = await wrk.run(url, spec("/good"), { ...options, runId: "t2" });
    expect(good.requests).toBeGreaterThan(0);
    expect(good.errors).toBe(0);
  });
});

function hasWrk(): boolean {
  try {
    execFileSync("sh", ["-c", "command -v wrk"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}
