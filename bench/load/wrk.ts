/**
 * HTTP/1.1 load with wrk (Debian package `wrk`): one thread, keep-alive connections, a
 * generated Lua script per request description. For gRPC-web the script also reads every
 * response body and counts those without a `grpc-status:0` trailer frame, since gRPC-web
 * errors arrive with HTTP 200 (the trailer frame reads `grpc-status: 0`).
 */
import { execFile } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { detail, type LoadGenerator, type LoadOptions, type LoadResult, type RequestSpec } from "./types.js";

const run = promisify(execFile);

const lua = (s: string) => JSON.stringify(s); // a JSON string literal is a valid Lua string literal for ASCII

export function luaScript(spec: RequestSpec, options: LoadOptions, bodyFile: string | undefined): string {
  const lines = [`wrk.method = ${lua(spec.method)}`, `wrk.path = ${lua(spec.path)}`];
  for (const [k, v] of Object.entries(spec.headers)) lines.push(`wrk.headers[${lua(k)}] = ${lua(v)}`);
  if (bodyFile) lines.push(`do local f = assert(io.open(${lua(bodyFile)}, "rb")); wrk.body = f:read("*a"); f:close() end`);
  if (spec.uniqueNameBody) {
    const [before, after] = spec.uniqueNameBody.split("NAME");
    lines.push(
      "counter = 0",
      "request = function()",
      "  counter = counter + 1",
      `  return wrk.format(nil, nil, nil, ${lua(before ?? "")} .. ${lua(`${options.runId}-`)} .. counter .. ${lua(after ?? "")})`,
      "end",
    );
  }
  if (spec.success === "grpc-web") {
    lines.push(
      "bad = 0",
      "threads = {}",
      "setup = function(thread) table.insert(threads, thread) end",
      "response = function(status, headers, body)",
      '  local code = string.match(body, "grpc%-status:%s*(%d+)")',
      '  if status ~= 200 or code ~= "0" then bad = bad + 1 end',
      "end",
      "done = function(summary, latency, requests)",
      "  local n = 0",
      '  for _, t in ipairs(threads) do n = n + t:get("bad") end',
      '  io.write("BENCH_BAD " .. n .. "\\n")',
      "end",
    );
  }
  return `${lines.join("\n")}\n`;
}

const UNIT_MS: Record<string, number> = { us: 0.001, ms: 1, s: 1000, m: 60_000 };

export function parseWrk(out: string): LoadResult {
  const m = /(\d+) requests in ([\d.]+)(us|ms|s|m)/.exec(out);
  if (!m) throw new Error(`could not parse wrk output:\n${out}`);
  const requests = Number(m[1]);
  const seconds = (Number(m[2]) * (UNIT_MS[m[3] as string] as number)) / 1000;
  const lat = (p: string) => {
    const l = new RegExp(`^\\s*${p}%\\s+([\\d.]+)(us|ms|s|m)\\s*$`, "m").exec(out);
    return l ? Number(l[1]) * (UNIT_MS[l[2] as string] as number) : Number.NaN;
  };
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
  const sock = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const socketErrors = sock ? sock.slice(1).reduce((a, b) => a + Number(b), 0) : 0;
  const bad = Number(/BENCH_BAD (\d+)/.exec(out)?.[1] ?? 0);
  // A response with a non-2xx status is also "bad" for the gRPC-web check: count it once.
  const errors = Math.max(non2xx, bad) + socketErrors;
  const errorDetail = detail({
    "non-2xx": non2xx,
    "bad grpc-status": bad,
    "socket connect": Number(sock?.[1] ?? 0),
    "socket read": Number(sock?.[2] ?? 0),
    "socket write": Number(sock?.[3] ?? 0),
    "client timeout": Number(sock?.[4] ?? 0),
  });
  return { requests, seconds, rps: requests / seconds, p50Ms: lat("50"), p99Ms: lat("99"), errors, errorDetail };
}

export const wrk: LoadGenerator = {
  name: "wrk",
  async run(url, spec, options) {
    if (spec.proto !== "h1") throw new Error("wrk speaks HTTP/1.1 only");
    let bodyFile: string | undefined;
    if (spec.body) {
      bodyFile = path.join(options.workDir, `body-${options.runId}.bin`);
      fs.writeFileSync(bodyFile, spec.body);
    }
    const script = path.join(options.workDir, `wrk-${options.runId}.lua`);
    fs.writeFileSync(script, luaScript(spec, options, bodyFile), { mode: 0o600 });
    // wrk's default 2 s timeout would count a slow answer (a deep queue of writes) as an error.
    const args = ["-t1", `-c${options.connections}`, `-d${Math.max(1, Math.round(options.seconds))}s`, "--timeout", "30s", "--latency", "-s", script, url];
    const { stdout } = await run(...pinned(options.cpu, "wrk", args), { maxBuffer: 1 << 20 });
    return parseWrk(stdout);
  },
};

/** [file, args] of `cmd args`, under `taskset -c cpu` when a cpu is given. */
export function pinned(cpu: string | undefined, cmd: string, args: string[]): [string, string[]] {
  return cpu === undefined ? [cmd, args] : ["taskset", ["-c", cpu, cmd, ...args]];
}
