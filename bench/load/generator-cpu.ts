/**
 * The load generator's own CPU, so that a scenario which places a server on the generator's
 * core (the second PostgreSQL replica) can say how much of that core the generator left it.
 */
import fs from "node:fs";

const CLOCK_TICKS = 100; // sysconf(_SC_CLK_TCK) on Linux

/**
 * CPU µs used so far by the generator side: this process (the Node loader runs here) plus
 * every child process it has waited for (its cutime + cstime: wrk and h2load are children
 * that the runner waits for at the end of each run, so a difference across one run is their
 * whole CPU). Undefined where /proc is missing.
 */
export function generatorCpuUs(): number | undefined {
  let stat: string;
  try {
    stat = fs.readFileSync("/proc/self/stat", "utf8");
  } catch {
    return undefined;
  }
  // cutime and cstime are fields 16 and 17 of stat: 13 and 14 after the command name.
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const children = ((Number(f[13]) + Number(f[14])) * 1e6) / CLOCK_TICKS;
  const own = process.cpuUsage();
  return children + own.user + own.system;
}
