/**
 * HTTP/2 and gRPC load with h2load (Debian package `nghttp2-client`), cleartext with prior
 * knowledge. Percentiles come from its per-request log. h2load counts any HTTP 200 as a
 * success and never reads gRPC trailers: the runner adds the server's own count of non-OK
 * calls (see targets/host.ts) and checks a sample response before the timed runs.
 */
import { execFile } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { detail, type LoadGenerator, type LoadResult, percentile } from "./types.js";
import { pinned } from "./wrk.js";

const run = promisify(execFile);

export function parseH2load(out: string, log: string): LoadResult {
  const fin = /finished in ([\d.]+)(ms|s),/.exec(out);
  const req = /requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout/.exec(out);
  if (!fin || !req) throw new Error(`could not parse h2load output:\n${out}`);
  const seconds = Number(fin[1]) / (fin[2] === "ms" ? 1000 : 1);
  const done = Number(req[3]);
  // "failed" already includes the errored and timed-out streams; a done request that did not
  // succeed had a non-2xx status.
  const failed = Number(req[5]);
  const non2xx = done - Number(req[4]);
  const errors = Math.max(failed, non2xx);
  const errorDetail = detail({ failed, errored: Number(req[6]), timeout: Number(req[7]), "not 2xx": non2xx });
  const durations = log
    .split("\n")
    .filter(Boolean)
    .map((line) => Number(line.split("\t")[2]) / 1000)
    .sort((a, b) => a - b);
  return { requests: done, seconds, rps: done / seconds, p50Ms: percentile(durations, 50), p99Ms: percentile(durations, 99), errors, errorDetail };
}

export const h2load: LoadGenerator = {
  name: "h2load",
  async run(url, spec, options) {
    if (spec.proto !== "h2") throw new Error("h2load is used for HTTP/2 only here");
    if (spec.uniqueNameBody) throw new Error("h2load cannot vary the body per request");
    const log = path.join(options.workDir, `h2load-${options.runId}.log`);
    fs.rmSync(log, { force: true }); // --log-file appends
    const args = ["-t1", `-c${options.connections}`, `-m${options.streams}`, "-D", String(Math.max(1, Math.round(options.seconds)))];
    args.push(`--log-file=${log}`);
    if (spec.method === "POST" && !spec.body) throw new Error("h2load sends POST only with a body file");
    if (spec.body) {
      const bodyFile = path.resolve(options.workDir, `body-${options.runId}.bin`); // -d wants an absolute path
      fs.writeFileSync(bodyFile, spec.body);
      args.push("-d", bodyFile);
    }
    for (const [k, v] of Object.entries(spec.headers)) args.push("-H", `${k}: ${v}`);
    args.push(url + spec.path);
    const { stdout } = await run(...pinned(options.cpu, "h2load", args), { maxBuffer: 1 << 20 });
    const result = parseH2load(stdout, fs.readFileSync(log, "utf8"));
    fs.rmSync(log, { force: true });
    return result;
  },
};
