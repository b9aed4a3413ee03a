/**
 * packaging/systemd/trellis.service: `systemd-analyze verify` (every directive parses, the
 * dependencies resolve, ExecStart is an executable) with the unit installed in a scratch root
 * beside a stand-in for /usr/local/bin/trellis and the machine's own unit files; `systemd-analyze
 * security --offline` scores its hardening; and the settings the server needs are there: its own
 * user (created by trellis.sysusers), the state directory as --data, the drain on stop within
 * TimeoutStopSec, restart on failure.
 * systemd-analyze prints what it ignores (a misspelt key, a bad value) but still exits 0, so any
 * output is a failure.
 */
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LIMITS } from "../../src/server/config.js";

const UNIT = fs.readFileSync("packaging/systemd/trellis.service", "utf8");
const SYSUSERS = fs.readFileSync("packaging/systemd/trellis.sysusers", "utf8");
const SYSTEM_UNITS = "/usr/lib/systemd/system";

/** `systemd-analyze ARGS`: exit status and everything it printed. */
async function analyze(args: string[]): Promise<{ status: number; output: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)("systemd-analyze", args, { encoding: "utf8" });
    return { status: 0, output: `${stdout}${stderr}` };
  } catch (err) {
    const e = err as { code?: number | string; stdout?: string; stderr?: string };
    if (e.code === "ENOENT") throw new Error("systemd-analyze is missing: install Debian's systemd (bash packaging/debian-tools.sh)");
    return { status: typeof e.code === "number" ? e.code : -1, output: `${e.stdout ?? ""}${e.stderr ?? ""}` };
  }
}

/** The values of `key` in the unit, in order (a key may repeat). */
function values(key: string): string[] {
  return UNIT.split("\n")
    .filter((l) => l.startsWith(`${key}=`))
    .map((l) => l.slice(key.length + 1));
}

function value(key: string): string {
  const all = values(key);
  expect(all, key).toHaveLength(1);
  return all[0]!;
}

/** systemd's time span in seconds ("30s", "1min 30s", "45"). */
function seconds(span: string): number {
  let total = 0;
  for (const [, n, unit] of span.matchAll(/(\d+)\s*(min|s)?/g)) total += Number(n) * (unit === "min" ? 60 : 1);
  return total;
}

let root: string;

/** A scratch root holding `unit` as /etc/systemd/system/trellis.service. */
function install(unit: string): void {
  fs.writeFileSync(path.join(root, "etc/systemd/system/trellis.service"), unit);
}

beforeAll(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-systemd-"));
  fs.mkdirSync(path.join(root, "etc/systemd/system"), { recursive: true });
  fs.mkdirSync(path.join(root, "usr/local/bin"), { recursive: true });
  fs.writeFileSync(path.join(root, "usr/local/bin/trellis"), "#!/bin/sh\n", { mode: 0o755 });
  // The targets the unit names (network-online.target, multi-user.target, sysinit.target, ...).
  fs.cpSync(SYSTEM_UNITS, path.join(root, SYSTEM_UNITS), { recursive: true, verbatimSymlinks: true });
});

afterAll(() => {
  fs.rmSync(root, { recursive: true, force: true });
});

describe("systemd unit (packaging/systemd/trellis.service)", () => {
  it("passes systemd-analyze verify with nothing to say", async () => {
    install(UNIT);
    expect(await analyze(["verify", `--root=${root}`, "trellis.service"])).toEqual({ status: 0, output: "" });
  });

  it("the check reports a misspelt key, a bad value and a missing executable", async () => {
    install(UNIT.replace(/^ProtectSystem=strict$/m, "ProtectSystem=strikt").replace(/^Restart=on-failure$/m, "Restar=on-failure"));
    const { output } = await analyze(["verify", `--root=${root}`, "trellis.service"]);
    expect(output).toMatch(/Failed to parse protect system value/);
    expect(output).toMatch(/Unknown key 'Restar'/);
    install(UNIT.replaceAll("/usr/local/bin/trellis", "/usr/local/bin/trellis-missing"));
    expect((await analyze(["verify", `--root=${root}`, "trellis.service"])).output).toMatch(/is not executable/);
  });

  it("scores 2.0 or better (OK) in systemd-analyze security", async () => {
    install(UNIT);
    const { status, output } = await analyze(["security", "--offline=true", "--threshold=20", "--no-pager", `--root=${root}`, "trellis.service"]);
    expect(output).toMatch(/Overall exposure level for trellis\.service: [0-9.]+ OK/);
    expect(status).toBe(0);
  });

  it("runs as its own user, created by trellis.sysusers, with the hardening the docs name", () => {
    expect(value("User")).toBe("trellis");
    expect(value("Group")).toBe("trellis");
    expect(SYSUSERS).toMatch(/^u trellis - "[^"]+" \/var\/lib\/trellis$/m);
    expect(value("NoNewPrivileges")).toBe("yes");
    expect(value("ProtectSystem")).toBe("strict");
    expect(value("PrivateTmp")).toBe("yes");
    expect(value("CapabilityBoundingSet")).toBe("");
    // Node's JIT writes code and then runs it: this would stop the server at start.
    expect(values("MemoryDenyWriteExecute")).toEqual([]);
  });

  it("keeps its data in the state directory and restarts on failure, but not for bad flags", () => {
    const exec = value("ExecStart").split(/\s+/);
    expect(exec.slice(0, 2)).toEqual(["/usr/local/bin/trellis", "serve"]);
    expect(value("StateDirectory")).toBe("trellis");
    expect(exec[exec.indexOf("--data") + 1]).toBe("/var/lib/trellis");
    expect(value("Restart")).toBe("on-failure");
    expect(value("RestartPreventExitStatus")).toBe("2");
  });

  it("drains on stop: --drain-seconds and the server's shutdown grace fit in TimeoutStopSec", () => {
    const exec = value("ExecStart").split(/\s+/);
    const drain = Number(exec[exec.indexOf("--drain-seconds") + 1]);
    expect(drain).toBeGreaterThan(0);
    expect(value("KillSignal")).toBe("SIGTERM");
    expect(seconds(value("TimeoutStopSec"))).toBeGreaterThanOrEqual(drain + LIMITS.shutdownGraceMs / 1000 + 5);
  });
});
