#!/usr/bin/env node
/**
 * `npm run package:image` (scripts/package.mjs --image builds the binaries, then calls
 * buildImages): container images of the single-file binaries, made by umoci, Debian's OCI
 * image tool, with no container engine and no base image to pull. Each image holds:
 *   - /usr/local/bin/trellis, the binary (its own layer, the one that changes per release);
 *   - under it one layer of what the binary needs from a system: the dynamic loader and the C
 *     and C++ runtime libraries from Debian's libc6, libgcc-s1 and libstdc++6 for that
 *     architecture (their copyright files kept, the rest of the packages left out), the CA
 *     certificates of Debian's ca-certificates as /etc/ssl/certs/ca-certificates.crt (used by
 *     Node: NODE_USE_SYSTEM_CA=1), packaging/image/rootfs/ (/etc/passwd and /etc/group with
 *     the user `trellis`, 10001:10001; /etc/nsswitch.conf), /data (the volume, owned by
 *     trellis), /home/trellis, /tmp (the binary loads SQLite from there) and
 *     /usr/share/doc/trellis/debian-packages.txt, the Debian packages and versions inside;
 *   - a config: user 10001:10001 (numeric, so Kubernetes' runAsNonRoot can check it),
 *     `trellis serve --addr 0.0.0.0:8080 --data /data` as the default command (the binary is
 *     the entrypoint, so `podman run IMAGE iam groups list` runs the CLI), volume /data, port
 *     8080, working directory / (so the CLI's default `--data ./data` is /data), and the OCI
 *     labels (title, description, version, revision, created, licenses).
 * The images of every architecture and one OCI image index over them go into one OCI layout,
 * build/image/oci, tagged VERSION (the index), VERSION-amd64 and VERSION-arm64; skopeo writes
 * each architecture as a docker-archive tarball, build/image/trellis-VERSION-linux-ARCH.tar,
 * which both `podman load` and `docker load` read.
 *
 * Reproducible: the same binaries, Debian packages and commit give the same digests. Every
 * file's time is the commit's (SOURCE_DATE_EPOCH overrides), and so are the config's and the
 * history's; owners and modes are set, never inherited. The binary itself is not byte-for-byte
 * reproducible (its SEA blob, with V8's code cache, differs per build), so the check (CI,
 * scripts/smoke-image.sh) builds the images twice from the same binaries.
 *
 * The Debian packages come from Debian's archive through apt-get with a private state under
 * build/cache/debian/ARCH (the machine's sources, its own package lists; nothing on the
 * machine changes): refreshed on every build, so the image gets Debian's security updates, and
 * the last download is used, with a warning, when the archive cannot be reached.
 *
 * Runs as root (the files must belong to root and /data to 10001; CI runs as root), or in
 * `podman unshare`. Needs umoci and skopeo (`bash packaging/debian-tools.sh`).
 *
 *   node scripts/package-image.mjs [--out DIR] [ARCH=BINARY ...]
 *     default: amd64=build/trellis arm64=build/trellis-linux-arm64, into build/image
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const root = fileURLToPath(new URL("..", import.meta.url));
const rootfsFiles = path.join(root, "packaging/image/rootfs");
/**
 * The user the server runs as, owner of /data and its home: the `trellis` line of the image's
 * /etc/passwd (the Kubernetes manifests and their test read the same line).
 */
const USER = (() => {
  const line = fs
    .readFileSync(path.join(rootfsFiles, "etc/passwd"), "utf8")
    .split("\n")
    .find((l) => l.startsWith("trellis:"));
  const [name, , uid, gid] = (line ?? "").split(":");
  if (!line || !/^\d+$/.test(uid) || !/^\d+$/.test(gid)) fail("packaging/image/rootfs/etc/passwd has no trellis user");
  return { name, uid: Number(uid), gid: Number(gid) };
})();
/** What the binary needs from a system (`ldd` of Node: libc, libm, libdl, libpthread, libstdc++, libgcc_s). */
const DEBIAN_PACKAGES = ["libc6", "libgcc-s1", "libstdc++6", "ca-certificates"];
/** OCI architecture → Debian architecture and its multiarch triplet. */
const ARCHES = {
  amd64: { debian: "amd64", triplet: "x86_64-linux-gnu" },
  arm64: { debian: "arm64", triplet: "aarch64-linux-gnu" },
};
/** The files kept from the library packages: the libraries and the loader's links, and their copyright. */
const KEEP = [/^lib(64)?\//, /^usr\/lib\/[^/]+\/libstdc\+\+\.so\.6[.\d]*$/, /^usr\/share\/doc\/[^/]+\/copyright$/];
/** Not needed by Node, which uses ICU, not iconv (8 MiB). */
const DROP = [/\/gconv\//];

function fail(message) {
  console.error(`package-image: ${message}`);
  process.exit(1);
}

function run(command, args, options = {}) {
  try {
    return execFileSync(command, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], maxBuffer: 64 * 2 ** 20, ...options });
  } catch (err) {
    process.stderr.write(`${err.stdout ?? ""}${err.stderr ?? ""}`);
    fail(`${command} ${args[0]} failed (${err.status ?? err.signal ?? err.message})`);
  }
}

function onPath(command) {
  return (process.env.PATH ?? "").split(path.delimiter).some((dir) => dir && fs.existsSync(path.join(dir, command)));
}

/** The time every file, the config and the history carry: the commit's, or SOURCE_DATE_EPOCH. */
function sourceDate() {
  let revision;
  let epoch = process.env.SOURCE_DATE_EPOCH;
  try {
    revision = execFileSync("git", ["rev-parse", "HEAD"], { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
    epoch ??= execFileSync("git", ["log", "-1", "--format=%ct"], { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  } catch {
    // Not a git checkout: no revision label, and the epoch unless SOURCE_DATE_EPOCH says.
  }
  if (!/^\d+$/.test(epoch ?? "")) fail("no commit time: build from a git checkout, or set SOURCE_DATE_EPOCH");
  const seconds = Number(epoch);
  return { seconds, iso: new Date(seconds * 1000).toISOString().replace(".000Z", "Z"), revision };
}

/**
 * The newest DEBIAN_PACKAGES for `arch` from Debian's archive, with apt-get and a private
 * state (build/cache/debian/ARCH): the machine's sources, this architecture's package lists.
 * Returns the .deb files; the last download when the archive cannot be reached.
 */
function debianPackages(arch) {
  const dir = path.join(root, "build/cache/debian", arch);
  const debs = path.join(dir, "debs");
  for (const sub of ["lists/partial", "archives/partial"]) fs.mkdirSync(path.join(dir, sub), { recursive: true });
  fs.writeFileSync(path.join(dir, "status"), "");
  const apt = [
    ["Dir::State::Lists", path.join(dir, "lists")],
    ["Dir::State::status", path.join(dir, "status")],
    ["Dir::Cache", dir],
    ["APT::Architecture", arch],
    ["APT::Architectures::", arch],
    // The files are ours (build/), not the _apt user's, and no lock of the machine's apt is taken.
    ["APT::Sandbox::User", "root"],
    ["Debug::NoLocking", "1"],
  ].flatMap(([key, value]) => ["-o", `${key}=${value}`]);
  try {
    execFileSync("apt-get", [...apt, "-qq", "update"], { stdio: ["ignore", "pipe", "pipe"] });
    const fresh = `${debs}.new`;
    fs.rmSync(fresh, { recursive: true, force: true });
    fs.mkdirSync(fresh);
    execFileSync("apt-get", [...apt, "-qq", "download", ...DEBIAN_PACKAGES], { cwd: fresh, stdio: ["ignore", "pipe", "pipe"] });
    fs.rmSync(debs, { recursive: true, force: true });
    fs.renameSync(fresh, debs);
  } catch (err) {
    if (!fs.existsSync(debs)) fail(`apt-get could not download ${DEBIAN_PACKAGES.join(" ")} for ${arch} (${`${err.stderr ?? err.message}`.trim()})`);
    console.error(`package-image: Debian's archive unreachable; using the ${arch} packages downloaded ${fs.statSync(debs).mtime.toISOString()}`);
  }
  const files = fs.readdirSync(debs).filter((f) => f.endsWith(".deb"));
  return DEBIAN_PACKAGES.map((name) => {
    const file = files.find((f) => f.startsWith(`${name}_`));
    if (!file) fail(`no ${name} package for ${arch} in ${debs}`);
    const [, version, debArch] = file.replace(/\.deb$/, "").split("_");
    return { name, version: decodeURIComponent(version), arch: debArch, file: path.join(debs, file) };
  });
}

/** Every path under `dir` (relative, directories before their contents), sorted. */
function walk(dir) {
  return fs.readdirSync(dir, { recursive: true, encoding: "utf8" }).sort();
}

/** Owner root (or USER for `owned`), the modes given, and every time `seconds`. */
function settle(dir, seconds, { owned = [], modes = {} } = {}) {
  for (const relative of ["", ...walk(dir)]) {
    const file = path.join(dir, relative);
    const mine = owned.some((o) => relative === o || relative.startsWith(`${o}/`));
    fs.lchownSync(file, mine ? USER.uid : 0, mine ? USER.gid : 0);
    if (modes[relative] !== undefined) fs.chmodSync(file, modes[relative]);
    fs.lutimesSync(file, seconds, seconds);
  }
}

/** The base layer's files for `arch` in `dir`: Debian's libraries, the certificates, the user. */
function baseLayer(dir, arch, debs, seconds) {
  const scratch = `${dir}.debs`;
  fs.rmSync(scratch, { recursive: true, force: true });
  for (const deb of debs) {
    const unpacked = path.join(scratch, deb.name);
    fs.mkdirSync(unpacked, { recursive: true });
    run("dpkg-deb", ["-x", deb.file, unpacked]);
    for (const relative of walk(unpacked)) {
      const from = path.join(unpacked, relative);
      if (fs.lstatSync(from).isDirectory() || !KEEP.some((k) => k.test(relative)) || DROP.some((d) => d.test(relative))) continue;
      fs.mkdirSync(path.dirname(path.join(dir, relative)), { recursive: true });
      fs.cpSync(from, path.join(dir, relative), { verbatimSymlinks: true, preserveTimestamps: false });
    }
  }
  // What update-ca-certificates makes of the package: every certificate, one after another.
  const certs = path.join(scratch, "ca-certificates/usr/share/ca-certificates/mozilla");
  const bundle = fs
    .readdirSync(certs)
    .filter((f) => f.endsWith(".crt"))
    .sort()
    .map((f) => fs.readFileSync(path.join(certs, f), "utf8").replace(/\n*$/, "\n"));
  if (bundle.length < 100) fail(`only ${bundle.length} certificates in Debian's ca-certificates: is the package right?`);
  fs.mkdirSync(path.join(dir, "etc/ssl/certs"), { recursive: true });
  fs.writeFileSync(path.join(dir, "etc/ssl/certs/ca-certificates.crt"), bundle.join(""));
  fs.rmSync(scratch, { recursive: true, force: true });

  fs.cpSync(rootfsFiles, dir, { recursive: true });
  for (const sub of ["data", "tmp", `home/${USER.name}`, "usr/share/doc/trellis"]) fs.mkdirSync(path.join(dir, sub), { recursive: true });
  const list = debs.map((d) => `${d.name} ${d.version} ${d.arch}\n`).join("");
  fs.writeFileSync(path.join(dir, "usr/share/doc/trellis/debian-packages.txt"), list);
  // Directories 0755 and files 0644 unless an executable (the libraries keep their modes).
  for (const relative of walk(dir)) {
    const stat = fs.lstatSync(path.join(dir, relative));
    if (stat.isDirectory()) fs.chmodSync(path.join(dir, relative), 0o755);
    else if (stat.isFile() && !(stat.mode & 0o111)) fs.chmodSync(path.join(dir, relative), 0o644);
  }
  settle(dir, seconds, { owned: ["data", `home/${USER.name}`], modes: { "": 0o755, data: 0o700, [`home/${USER.name}`]: 0o700, tmp: 0o1777 } });
  if (!fs.existsSync(path.join(dir, "lib", ARCHES[arch].triplet, "libc.so.6"))) fail(`the ${arch} base layer has no libc.so.6`);
}

/** The binary's layer, added to the base's files in `dir`: /usr/local/bin/trellis. */
function binaryLayer(dir, binary, seconds) {
  const added = ["usr/local", "usr/local/bin", "usr/local/bin/trellis"];
  fs.mkdirSync(path.join(dir, "usr/local/bin"), { recursive: true });
  fs.copyFileSync(binary, path.join(dir, "usr/local/bin/trellis"));
  for (const relative of added) {
    fs.chownSync(path.join(dir, relative), 0, 0);
    fs.chmodSync(path.join(dir, relative), 0o755);
  }
  // usr/ changed when local/ was made in it: its time back too, so the layer holds only what is new.
  for (const relative of ["usr", ...added]) fs.utimesSync(path.join(dir, relative), seconds, seconds);
}

/** The layout's index.json entry named `tag`. */
function tagged(layout, tag) {
  const index = JSON.parse(fs.readFileSync(path.join(layout, "index.json"), "utf8"));
  const entry = index.manifests.find((m) => m.annotations?.["org.opencontainers.image.ref.name"] === tag);
  if (!entry) fail(`${layout} has no tag ${tag}`);
  return entry;
}

/**
 * The OCI image index over the architectures' manifests, tagged `tag`. umoci makes single
 * images only, and buildah's or podman's `manifest` commands would go through a
 * containers-storage store on the machine, so the index (one small JSON document, the
 * manifests' descriptors with their platforms) is written here; skopeo reads it back as the
 * check (scripts/smoke-image.sh), and podman picks its platform from it.
 */
function writeIndex(layout, tag, images, annotations) {
  const index = {
    schemaVersion: 2,
    mediaType: "application/vnd.oci.image.index.v1+json",
    manifests: images.map(({ arch, tag: imageTag }) => {
      const { mediaType, digest, size } = tagged(layout, imageTag);
      return { mediaType, digest, size, platform: { architecture: arch, os: "linux", ...(arch === "arm64" ? { variant: "v8" } : {}) } };
    }),
    annotations,
  };
  const bytes = Buffer.from(JSON.stringify(index));
  const digest = `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
  fs.writeFileSync(path.join(layout, "blobs/sha256", digest.slice("sha256:".length)), bytes);
  const top = JSON.parse(fs.readFileSync(path.join(layout, "index.json"), "utf8"));
  top.manifests = top.manifests.filter((m) => m.annotations?.["org.opencontainers.image.ref.name"] !== tag);
  top.manifests.push({ mediaType: index.mediaType, digest, size: bytes.length, annotations: { "org.opencontainers.image.ref.name": tag } });
  fs.writeFileSync(path.join(layout, "index.json"), JSON.stringify(top));
  return digest;
}

/** Fails, saying what to do, unless this process can build images (scripts/package.mjs asks first). */
export function assertCanBuildImages() {
  if (process.getuid?.() !== 0) fail(`run as root (the image's files belong to root and /data to ${USER.uid}), or inside \`podman unshare\``);
  const missing = ["umoci", "skopeo", "apt-get", "dpkg-deb"].filter((c) => !onPath(c));
  if (missing.length > 0) fail(`${missing.join(", ")} missing: run \`bash packaging/debian-tools.sh\` as root`);
}

/**
 * Builds the images of `binaries` ([{ arch: "amd64" | "arm64", binary }]) and their index into
 * `out` (replaced). Returns { layout, version, index, images: [{ arch, tag, digest, archive }] }.
 */
export function buildImages(binaries, { out = path.join(root, "build/image") } = {}) {
  const started = Date.now();
  assertCanBuildImages();
  const pkg = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8"));
  const { seconds, iso, revision } = sourceDate();
  const labels = {
    "org.opencontainers.image.title": pkg.name,
    "org.opencontainers.image.description": pkg.description,
    "org.opencontainers.image.version": pkg.version,
    ...(revision ? { "org.opencontainers.image.revision": revision } : {}),
    "org.opencontainers.image.created": iso,
    "org.opencontainers.image.licenses": pkg.license,
  };
  fs.rmSync(out, { recursive: true, force: true });
  const layout = path.join(out, "oci");
  const work = path.join(out, "work");
  run("umoci", ["init", "--layout", layout]);
  const images = [];
  for (const { arch, binary } of binaries) {
    if (!ARCHES[arch]) fail(`no image for architecture ${arch}`);
    if (!fs.existsSync(binary)) fail(`${binary} is missing: npm run package -- --arch ${arch === "amd64" ? "x64" : arch}`);
    const debs = debianPackages(arch);
    const tag = `${pkg.version}-${arch}`;
    const image = `${layout}:${tag}`;
    const history = (createdBy) => ["--history.created", iso, "--history.created_by", createdBy];
    // Each layer is what changed in the unpacked bundle's rootfs since the last repack (umoci
    // 0.4.7's `insert` leaves its layers without tar's end-of-archive blocks, which GNU tar and
    // scanners reject: umoci issue 436, fixed after the version Debian 12 ships).
    run("umoci", ["new", "--image", image]);
    const bundle = path.join(work, arch);
    run("umoci", ["unpack", "--image", image, bundle]);
    const rootfs = path.join(bundle, "rootfs");
    baseLayer(rootfs, arch, debs, seconds);
    const contents = debs.map((d) => `${d.name} ${d.version}`).join(", ");
    run("umoci", [
      "repack",
      "--image",
      image,
      "--refresh-bundle",
      ...history(`trellis: ${contents}; user ${USER.name} ${USER.uid}:${USER.gid}; /data`),
      bundle,
    ]);
    binaryLayer(rootfs, binary, seconds);
    run("umoci", ["repack", "--image", image, ...history(`trellis ${pkg.version}: /usr/local/bin/trellis`), bundle]);
    const flag = (name, values) => values.flatMap((v) => [`--${name}`, v]);
    run("umoci", [
      "config",
      "--image",
      image,
      "--no-history",
      "--created",
      iso,
      "--os",
      "linux",
      "--architecture",
      arch,
      "--config.user",
      `${USER.uid}:${USER.gid}`,
      "--config.entrypoint",
      "/usr/local/bin/trellis",
      ...flag("config.cmd", ["serve", "--addr", "0.0.0.0:8080", "--data", "/data"]),
      ...flag("config.env", ["PATH=/usr/local/bin:/usr/bin:/bin", "NODE_USE_SYSTEM_CA=1"]),
      "--config.workingdir",
      "/",
      "--config.volume",
      "/data",
      "--config.exposedports",
      "8080/tcp",
      "--config.stopsignal",
      "SIGTERM",
      ...flag(
        "config.label",
        Object.entries(labels).map(([k, v]) => `${k}=${v}`),
      ),
      ...flag(
        "manifest.annotation",
        Object.entries(labels).map(([k, v]) => `${k}=${v}`),
      ),
    ]);
    images.push({ arch, tag });
  }
  run("umoci", ["gc", "--layout", layout]);
  const index = writeIndex(layout, pkg.version, images, labels);
  for (const image of images) {
    image.digest = tagged(layout, image.tag).digest;
    // docker-archive: what `docker load` (and `podman load`) read; one architecture per file.
    image.archive = path.join(out, `trellis-${pkg.version}-linux-${image.arch}.tar`);
    run("skopeo", ["copy", "--quiet", `oci:${layout}:${image.tag}`, `docker-archive:${image.archive}:trellis:${pkg.version}`]);
  }
  fs.rmSync(work, { recursive: true, force: true });
  const rel = (p) => path.relative(process.cwd(), p) || ".";
  console.error(`package: image ${rel(layout)}:${pkg.version} ${index} in ${Math.round((Date.now() - started) / 1000)} s`);
  for (const i of images) console.error(`package:   linux/${i.arch} ${rel(layout)}:${i.tag} ${i.digest}, docker-archive ${rel(i.archive)}`);
  return { layout, version: pkg.version, index, images };
}

if (process.argv[1] && fs.realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { values, positionals } = parseArgs({ options: { out: { type: "string" } }, allowPositionals: true });
  const pairs = positionals.length > 0 ? positionals : ["amd64=build/trellis", "arm64=build/trellis-linux-arm64"];
  const binaries = pairs.map((pair) => {
    const [arch, binary] = pair.split("=");
    return { arch, binary: path.resolve(binary ?? "") };
  });
  buildImages(binaries, values.out ? { out: path.resolve(values.out) } : undefined);
}
