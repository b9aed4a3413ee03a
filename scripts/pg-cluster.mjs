#!/usr/bin/env node
/**
 * A throwaway PostgreSQL cluster for tests, CI and trying Trellis on PostgreSQL locally.
 *
 *   node scripts/pg-cluster.mjs start [--dir DIR]   prints the connection URL on stdout
 *   node scripts/pg-cluster.mjs stop DIR            stops it and deletes DIR
 *   node scripts/pg-cluster.mjs binaries            prints the server binaries' folder,
 *                                                   installing Debian's postgresql first when
 *                                                   they are missing and we are root
 *
 * It runs Debian's server binaries (/usr/lib/postgresql/<major>/bin, 15 preferred; PG_BIN
 * overrides) with initdb and pg_ctl in a fresh temporary directory. PostgreSQL refuses to run
 * as root, and CI runs as root, so as root the cluster belongs to the `postgres` system user
 * (Debian's postgresql package creates it), or to `nobody` where that user does not exist;
 * any other user runs it as itself.
 *
 * The cluster listens on 127.0.0.1 on a free port (and on a unix socket inside its own
 * directory, for psql), never on a public interface, and requires the password of its only
 * role, `postgres`: a random one per cluster, carried in the printed URL. Durability is off
 * (fsync, synchronous_commit, full_page_writes): a test cluster is thrown away, never
 * recovered, and durability costs seconds on a shared 2-core machine. The bench asks for it on
 * (`durable: true`), since it compares writes with SQLite's synchronous=FULL.
 *
 * Also imported by test/support (globalSetup): `startCluster`, `stopCluster`, `findServerBinaries`;
 * and by the fault tests: `pauseCluster`, `resumeCluster` (a restart of the server, data kept).
 */
import { execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";

const PREFERRED_MAJOR = "15";
const DEBIAN_ROOT = "/usr/lib/postgresql";

/** Where initdb, pg_ctl and postgres live, or undefined when PostgreSQL is not installed. */
export function findServerBinaries(env = process.env) {
  if (env.PG_BIN) return fs.existsSync(path.join(env.PG_BIN, "pg_ctl")) ? env.PG_BIN : undefined;
  let majors = [];
  try {
    majors = fs.readdirSync(DEBIAN_ROOT).filter((m) => fs.existsSync(path.join(DEBIAN_ROOT, m, "bin", "pg_ctl")));
  } catch {
    return undefined;
  }
  if (majors.includes(PREFERRED_MAJOR)) return path.join(DEBIAN_ROOT, PREFERRED_MAJOR, "bin");
  majors.sort((a, b) => Number(b) - Number(a));
  return majors[0] === undefined ? undefined : path.join(DEBIAN_ROOT, majors[0], "bin");
}

/**
 * The binaries' folder; as root, installs Debian's `postgresql` when they are missing (what CI
 * does on a fresh machine). Throws a message saying what to install otherwise.
 */
export function ensureServerBinaries(log = (line) => process.stderr.write(`${line}\n`)) {
  const found = findServerBinaries();
  if (found) return found;
  // An explicit PG_BIN that is wrong is a mistake to report, not a reason to install.
  if (!process.env.PG_BIN && process.getuid?.() === 0 && fs.existsSync("/usr/bin/apt-get")) {
    log("pg-cluster: PostgreSQL server binaries missing; apt-get install -y postgresql");
    const apt = { stdio: ["ignore", "inherit", "inherit"], env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" } };
    execFileSync("apt-get", ["update"], apt);
    execFileSync("apt-get", ["install", "-y", "--no-install-recommends", "postgresql"], apt);
    const installed = findServerBinaries();
    if (installed) return installed;
  }
  throw new Error(
    `PostgreSQL server binaries not found ${process.env.PG_BIN ? `in PG_BIN=${process.env.PG_BIN}` : `under ${DEBIAN_ROOT}/<major>/bin`}: ` +
      "install Debian's postgresql package (apt-get install postgresql), or set PG_BIN to the folder holding initdb and pg_ctl",
  );
}

/** The user the server runs as: ourselves, or as root the `postgres` user (else `nobody`). */
function serverUser() {
  if (process.getuid?.() !== 0) return { name: os.userInfo().username, uid: undefined, gid: undefined };
  for (const name of ["postgres", "nobody"]) {
    const entry = fs
      .readFileSync("/etc/passwd", "utf8")
      .split("\n")
      .find((line) => line.startsWith(`${name}:`));
    if (entry) {
      const [, , uid, gid] = entry.split(":");
      return { name, uid: Number(uid), gid: Number(gid) };
    }
  }
  throw new Error("running as root, and neither a `postgres` nor a `nobody` user exists to run PostgreSQL as");
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Runs a server binary as the cluster's user; rejects with its output on failure. */
function run(bin, args, user) {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, {
      uid: user.uid,
      gid: user.gid,
      // Its own cwd: the postgres user may not enter the caller's (root's home, say).
      cwd: "/",
      stdio: ["ignore", "pipe", "pipe"],
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", LANG: "C", LC_ALL: "C" },
    });
    let output = "";
    child.stdout.on("data", (d) => (output += d));
    child.stderr.on("data", (d) => (output += d));
    child.once("error", reject);
    child.once("close", (code) => {
      if (code === 0) resolve(output);
      else reject(new Error(`${path.basename(bin)} ${args.join(" ")} failed (exit ${code}):\n${output}`));
    });
  });
}

/**
 * Creates and starts a cluster. Returns { url, dir, user }: `url` connects as the superuser to
 * the `postgres` database; `dir` is what `stopCluster` takes.
 */
export async function startCluster(options = {}) {
  const bin = ensureServerBinaries(options.log);
  const user = serverUser();
  const dir = options.dir ?? fs.mkdtempSync(path.join(os.tmpdir(), "trellis-pg-"));
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const dataDir = path.join(dir, "data");
  const password = randomBytes(18).toString("base64url");
  const pwfile = path.join(dir, "pwfile");
  fs.writeFileSync(pwfile, `${password}\n`, { mode: 0o600 });
  if (user.uid !== undefined) {
    fs.chownSync(dir, user.uid, user.gid);
    fs.chownSync(pwfile, user.uid, user.gid);
  }
  const port = options.port ?? (await freePort());
  try {
    await run(
      path.join(bin, "initdb"),
      ["-D", dataDir, "-U", "postgres", `--pwfile=${pwfile}`, "--auth-host=scram-sha-256", "--auth-local=peer", "-E", "UTF8", "--locale=C", "--no-sync"],
      user,
    );
    fs.rmSync(pwfile);
    const settings = [
      `-p ${port}`,
      "-c listen_addresses=127.0.0.1",
      `-c unix_socket_directories=${dir}`,
      ...(options.durable ? [] : ["-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off"]),
      "-c max_connections=200",
      "-c shared_buffers=32MB",
    ].join(" ");
    // Kept for resumeCluster, which starts the same cluster again on the same port.
    fs.writeFileSync(path.join(dir, "settings"), settings);
    await run(path.join(bin, "pg_ctl"), ["-D", dataDir, "-l", path.join(dir, "server.log"), "-o", settings, "-w", "-t", "60", "start"], user);
  } catch (err) {
    await stopCluster(dir).catch(() => {});
    throw err;
  }
  fs.writeFileSync(path.join(dir, "bin"), bin);
  const url = `postgres://postgres:${password}@127.0.0.1:${port}/postgres`;
  return { url, dir, user: user.name };
}

function binOf(dir) {
  const binFile = path.join(dir, "bin");
  return fs.existsSync(binFile) ? fs.readFileSync(binFile, "utf8") : ensureServerBinaries();
}

/**
 * Stops the cluster in `dir` the way an administrator restarting it does (`pg_ctl -m fast`:
 * every session is ended, open transactions roll back) and keeps its data, for fault tests;
 * resumeCluster starts it again.
 */
export async function pauseCluster(dir) {
  await run(path.join(binOf(dir), "pg_ctl"), ["-D", path.join(dir, "data"), "-m", "fast", "-w", "stop"], serverUser());
}

/** Starts again, on the same data directory and port, a cluster that pauseCluster stopped. */
export async function resumeCluster(dir) {
  const settings = fs.readFileSync(path.join(dir, "settings"), "utf8");
  await run(
    path.join(binOf(dir), "pg_ctl"),
    ["-D", path.join(dir, "data"), "-l", path.join(dir, "server.log"), "-o", settings, "-w", "-t", "60", "start"],
    serverUser(),
  );
}

/** Stops the cluster in `dir` (immediately: it is thrown away) and deletes the directory. */
export async function stopCluster(dir) {
  const dataDir = path.join(dir, "data");
  if (fs.existsSync(path.join(dataDir, "postmaster.pid"))) {
    await run(path.join(binOf(dir), "pg_ctl"), ["-D", dataDir, "-m", "immediate", "-w", "stop"], serverUser());
  }
  fs.rmSync(dir, { recursive: true, force: true });
}

async function main(argv) {
  const [command, ...rest] = argv;
  if (command === "start") {
    const dirFlag = rest.indexOf("--dir");
    const cluster = await startCluster({ dir: dirFlag >= 0 ? rest[dirFlag + 1] : undefined });
    process.stdout.write(`${cluster.url}\n`);
    process.stderr.write(`pg-cluster: running as ${cluster.user} in ${cluster.dir}; stop with: node scripts/pg-cluster.mjs stop ${cluster.dir}\n`);
  } else if (command === "stop" && rest[0]) {
    await stopCluster(rest[0]);
  } else if (command === "binaries") {
    process.stdout.write(`${ensureServerBinaries()}\n`);
  } else {
    process.stderr.write("usage: pg-cluster.mjs start [--dir DIR] | stop DIR | binaries\n");
    process.exitCode = 2;
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  main(process.argv.slice(2)).catch((err) => {
    process.stderr.write(`pg-cluster: ${err.message}\n`);
    process.exitCode = 1;
  });
}
