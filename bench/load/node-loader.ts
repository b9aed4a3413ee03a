/**
 * A small closed-loop load generator in Node, and the one-shot request the runner uses to
 * check a sample response before any timed run. The loader is the fallback for
 * `--quick` on machines without wrk/h2load: it is client-bound far below the server's
 * capacity, so its numbers only prove that every door works; the figures come from
 * wrk/h2load. Unlike them it checks every response fully (status, gRPC trailers).
 */
import http from "node:http";
import http2 from "node:http2";
import { type LoadGenerator, type LoadOptions, percentile, type RequestSpec } from "./types.js";

export interface Response {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: Buffer;
  /** grpc-status from the trailers, the headers (trailers-only) or the gRPC-web trailer frame. */
  readonly grpcStatus?: string;
}

let nameCounter = 0;

function bodyOf(spec: RequestSpec, runId: string): Buffer | undefined {
  if (spec.uniqueNameBody) return Buffer.from(spec.uniqueNameBody.replace("NAME", `${runId}-n${++nameCounter}`));
  return spec.body;
}

/** Whether a response is the success the scenario expects. */
export function succeeded(spec: RequestSpec, r: Response): boolean {
  if (r.status < 200 || r.status > 299) return false;
  if (spec.success === "http") return true;
  return r.grpcStatus === "0";
}

function webTrailerStatus(body: Buffer): string | undefined {
  for (let at = 0; at + 5 <= body.length; ) {
    const len = body.readUInt32BE(at + 1);
    if ((body[at] as number) & 0x80) return /grpc-status:\s*(\d+)/.exec(body.subarray(at + 5, at + 5 + len).toString("latin1"))?.[1];
    at += 5 + len;
  }
  return undefined;
}

/** One HTTP/1.1 request over `agent` (keep-alive). */
function h1Request(url: string, spec: RequestSpec, body: Buffer | undefined, agent: http.Agent): Promise<Response> {
  return new Promise((resolve, reject) => {
    const req = http.request(url + spec.path, { method: spec.method, headers: spec.headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const b = Buffer.concat(chunks);
        const headers = res.headers as Record<string, string>;
        resolve({
          status: res.statusCode ?? 0,
          headers,
          body: b,
          grpcStatus: spec.success === "grpc-web" ? (headers["grpc-status"] ?? webTrailerStatus(b)) : headers["grpc-status"],
        });
      });
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** One HTTP/2 stream on `session`. */
function h2Request(session: http2.ClientHttp2Session, spec: RequestSpec, body: Buffer | undefined): Promise<Response> {
  return new Promise((resolve, reject) => {
    const stream = session.request({ ":method": spec.method, ":path": spec.path, ...spec.headers });
    let status = 0;
    let headers: Record<string, string> = {};
    let trailers: Record<string, string> = {};
    const chunks: Buffer[] = [];
    stream.on("response", (h) => {
      status = Number(h[":status"]);
      headers = h as Record<string, string>;
    });
    stream.on("trailers", (t) => {
      trailers = t as Record<string, string>;
    });
    stream.on("data", (c: Buffer) => chunks.push(c));
    stream.on("end", () => resolve({ status, headers, body: Buffer.concat(chunks), grpcStatus: trailers["grpc-status"] ?? headers["grpc-status"] }));
    stream.on("error", reject);
    stream.end(body);
  });
}

/** Sends one request and returns the whole response (the sample check before timed runs). */
export async function sendOnce(url: string, spec: RequestSpec, runId = "sample"): Promise<Response> {
  const body = bodyOf(spec, runId);
  if (spec.proto === "h1") {
    const agent = new http.Agent({ keepAlive: false });
    try {
      return await h1Request(url, spec, body, agent);
    } finally {
      agent.destroy();
    }
  }
  const session = http2.connect(url);
  try {
    return await h2Request(session, spec, body);
  } finally {
    session.close();
  }
}

export const nodeLoader: LoadGenerator = {
  name: "node",
  async run(url, spec, options: LoadOptions) {
    const latencies: number[] = [];
    let errors = 0;
    const t0 = performance.now();
    const until = t0 + options.seconds * 1000;
    const loop = async (send: (body: Buffer | undefined) => Promise<Response>) => {
      while (performance.now() < until) {
        const start = performance.now();
        try {
          if (!succeeded(spec, await send(bodyOf(spec, options.runId)))) errors++;
        } catch {
          errors++;
        }
        latencies.push(performance.now() - start);
      }
    };
    const loops: Promise<void>[] = [];
    const cleanup: (() => void)[] = [];
    if (spec.proto === "h1") {
      const agent = new http.Agent({ keepAlive: true, maxSockets: options.connections });
      cleanup.push(() => agent.destroy());
      for (let i = 0; i < options.connections; i++) loops.push(loop((b) => h1Request(url, spec, b, agent)));
    } else {
      for (let c = 0; c < options.connections; c++) {
        const session = http2.connect(url);
        cleanup.push(() => session.close());
        for (let s = 0; s < options.streams; s++) loops.push(loop((b) => h2Request(session, spec, b)));
      }
    }
    await Promise.all(loops);
    const seconds = (performance.now() - t0) / 1000;
    for (const c of cleanup) c();
    latencies.sort((a, b) => a - b);
    return {
      requests: latencies.length,
      seconds,
      rps: latencies.length / seconds,
      p50Ms: percentile(latencies, 50),
      p99Ms: percentile(latencies, 99),
      errors,
      errorDetail: errors > 0 ? `failed ${errors}` : undefined,
    };
  },
};
