/**
 * The generator's CPU the bench reports (`gen cores`): a child process the runner waited for
 * counts in full, as wrk and h2load do, so the share of the generator's core left to the
 * second PostgreSQL replica is measured, not assumed.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { expect, it } from "vitest";
import { generatorCpuUs } from "../../../bench/load/generator-cpu.js";

const run = promisify(execFile);

it.runIf(process.platform === "linux")("counts the CPU of a child process the runner waited for", async () => {
  const before = generatorCpuUs() as number;
  // The child spins until its own clock says it used 300 ms of CPU (however busy the machine).
  await run(process.execPath, ["-e", "const t = process.cpuUsage(); while (process.cpuUsage(t).user < 300_000) {}"]);
  const used = (generatorCpuUs() as number) - before;
  // The child's 300 ms (in 10 ms ticks) plus the test's own, never more than a few times that.
  expect(used).toBeGreaterThanOrEqual(280_000);
  expect(used).toBeLessThan(3_000_000);
});
