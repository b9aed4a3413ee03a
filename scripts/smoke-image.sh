#!/usr/bin/env bash
# Smoke test of the container images (`npm run package:image`, scripts/package-image.mjs), with
# Debian's podman and runc (there is no Docker engine here), the way an operator runs them:
#   1. the OCI layout: its index tag names one image per architecture with its platform, and
#      each image's config has the user 10001:10001, the entrypoint and the default command
#      `trellis serve --addr 0.0.0.0:8080 --data /data`, the /data volume, port 8080 and the OCI
#      labels (version from package.json, revision the checkout's commit);
#   2. reproducible: the images are built again from the same binaries into another folder, and
#      every digest (index, manifests) and both docker-archive tarballs must be the same;
#   3. amd64, loaded from its docker-archive (what README's `podman load` / `docker load` use)
#      and run with its default command on a named volume, the port published on 127.0.0.1:
#      ready line, the process runs as uid 10001, a token minted inside the container
#      (`podman exec … trellis auth token --local`), a group created over REST and listed over
#      gRPC from outside (through the published port), `podman stop` (SIGTERM) and exit 0, a
#      new container on the same volume, with a read-only root, finds the group, stops with
#      exit 0 again;
#   4. arm64, pulled by platform from the multi-arch index, the same steps but the restart
#      (amd64 proved the volume; this proves the arm64 image's loader, libraries and binary)
#      under qemu-user: with no binfmt_misc registration here, the image's own arm64 binary and
#      C library run through Debian's qemu-aarch64-static mounted in as the entrypoint (the
#      command is the image's default one, spelled out).
# Podman keeps its images, containers and volumes in a private folder (vfs storage) removed at
# the end, so nothing is left in the machine's container storage.
# Usage: scripts/smoke-image.sh [IMAGE_DIR]   (default build/image). Last line: "smoke-image: ok ...".
set -euo pipefail
cd "$(dirname "$0")/.."

out=${1:-build/image}
version=$(node -p 'require("./package.json").version')
revision=$(git rev-parse HEAD)
layout=$out/oci
say() { printf 'smoke-image: %s\n' "$*"; }
die() { printf 'smoke-image: FAILED: %s\n' "$*" >&2; exit 1; }
[ -f "$layout/index.json" ] || die "no OCI layout in $layout: run npm run package:image"
for tool in podman runc skopeo curl qemu-aarch64-static; do
  command -v "$tool" >/dev/null || die "$tool is missing: bash packaging/debian-tools.sh"
done

work=$(mktemp -d "${TMPDIR:-/tmp}/smoke-image.XXXXXX")
# runc, not crun: Debian 12's crun refuses a machine whose cgroups are mounted in hybrid mode
# (v1 controllers beside a v2 hierarchy), as on these machines.
podman=(podman --root "$work/storage" --runroot "$work/run" --storage-driver vfs --runtime runc)
cleanup() {
  "${podman[@]}" rm -af -t 0 >/dev/null 2>&1 || true
  "${podman[@]}" volume rm -af >/dev/null 2>&1 || true
  "${podman[@]}" rmi -af >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

# ---- 1. the layout and the configs ----
index=$(skopeo inspect --raw "oci:$layout:$version") || die "skopeo cannot read oci:$layout:$version"
platforms=$(printf '%s' "$index" | node -e '
  const index = JSON.parse(require("fs").readFileSync(0, "utf8"));
  if (index.mediaType !== "application/vnd.oci.image.index.v1+json") throw new Error(`not an image index: ${index.mediaType}`);
  console.log(index.manifests.map((m) => `${m.platform.os}/${m.platform.architecture}`).join(" "));')
[ "$platforms" = "linux/amd64 linux/arm64" ] || die "the index lists '$platforms', expected linux/amd64 linux/arm64"
for arch in amd64 arm64; do
  skopeo inspect --config "oci:$layout:$version-$arch" | node -e '
    const [arch, version, revision] = process.argv.slice(1);
    const image = JSON.parse(require("fs").readFileSync(0, "utf8"));
    const c = image.config;
    const want = {
      architecture: [image.architecture, arch],
      user: [c.User, "10001:10001"],
      entrypoint: [JSON.stringify(c.Entrypoint), JSON.stringify(["/usr/local/bin/trellis"])],
      cmd: [JSON.stringify(c.Cmd), JSON.stringify(["serve", "--addr", "0.0.0.0:8080", "--data", "/data"])],
      volume: [Object.keys(c.Volumes ?? {}).join(), "/data"],
      port: [Object.keys(c.ExposedPorts ?? {}).join(), "8080/tcp"],
      version: [c.Labels?.["org.opencontainers.image.version"], version],
      revision: [c.Labels?.["org.opencontainers.image.revision"], revision],
      licenses: [c.Labels?.["org.opencontainers.image.licenses"], "Apache-2.0"],
      created: [c.Labels?.["org.opencontainers.image.created"], image.created],
    };
    for (const [what, [got, expected]] of Object.entries(want)) {
      if (got !== expected) { console.error(`${arch}: ${what} is ${got}, expected ${expected}`); process.exit(1); }
    }' "$arch" "$version" "$revision" || die "the $arch image's config is not as documented"
done
say "layout: $version is an index of linux/amd64 and linux/arm64; user, command, volume, port and labels as documented"

# ---- 2. reproducible ----
again=$work/again
node scripts/package-image.mjs --out "$again" amd64=build/trellis arm64=build/trellis-linux-arm64 2>"$work/again.err" || {
  cat "$work/again.err" >&2
  die "the second build failed"
}
for tag in "$version" "$version-amd64" "$version-arm64"; do
  first=$(skopeo inspect --raw "oci:$layout:$tag" | sha256sum)
  second=$(skopeo inspect --raw "oci:$again/oci:$tag" | sha256sum)
  [ "$first" = "$second" ] || die "$tag differs between two builds from the same binaries"
done
for arch in amd64 arm64; do
  tar=trellis-$version-linux-$arch.tar
  cmp -s "$out/$tar" "$again/$tar" || die "$tar differs between two builds from the same binaries"
done
say "reproducible: a second build from the same binaries has the same digests ($(skopeo inspect --raw "oci:$layout:$version" | sha256sum | cut -c1-12)…) and tarballs"
rm -rf "$again"

# ---- 3 and 4. run them ----
# This sandbox forbids raising resource limits, which podman as root does by default.
limits=(--ulimit "nofile=$(ulimit -Hn):$(ulimit -Hn)" --ulimit nproc=4096:4096)

# run_image NAME IMAGE [EMULATOR]: the whole cycle on a fresh volume; the container runs the
# image's default command (or, emulated, the same command through the emulator, and no restart:
# each start under qemu-user costs tens of seconds).
run_image() {
  local name=$1 image=$2 emulator=${3:-} volume=$1-data
  local run_args=() exec_prefix=() polls=300
  if [ -n "$emulator" ]; then
    run_args=(--entrypoint "$emulator" -v "$(command -v "$emulator"):$emulator:ro")
    exec_prefix=("$emulator" /usr/local/bin/trellis)
    set -- /usr/local/bin/trellis serve --addr 0.0.0.0:8080 --data /data
    polls=1800
  else
    set --
    exec_prefix=(trellis)
  fi
  local cmd=("$@")
  "${podman[@]}" volume create "$volume" >/dev/null
  local container port url token started
  # start [PODMAN_RUN_FLAGS]: a container of the image on the volume; sets container, port, url
  start() {
    started=$(date +%s%N)
    container=$("${podman[@]}" run -d "${limits[@]}" "$@" "${run_args[@]}" -v "$volume:/data" -p 127.0.0.1::8080 "$image" "${cmd[@]}") ||
      die "$name: podman run failed"
    for _ in $(seq 1 "$polls"); do
      "${podman[@]}" logs "$container" 2>/dev/null | grep -qx 'listening on http://0.0.0.0:8080' && break
      [ "$("${podman[@]}" inspect -f '{{.State.Running}}' "$container")" = true ] || {
        "${podman[@]}" logs "$container" >&2 || true
        die "$name: the container exited before it was ready"
      }
      sleep 0.05
    done
    "${podman[@]}" logs "$container" 2>/dev/null | grep -qx 'listening on http://0.0.0.0:8080' || die "$name: no ready line within $((polls / 20)) s"
    port=$("${podman[@]}" port "$container" 8080/tcp | sed -n 's/^127\.0\.0\.1:\([0-9]*\)$/\1/p')
    [ -n "$port" ] || die "$name: port 8080 is not published"
    url=http://127.0.0.1:$port
    token=$("${podman[@]}" exec "$container" "${exec_prefix[@]}" auth token --local) || die "$name: auth token --local in the container failed"
  }
  # stop: podman stop sends the image's stop signal (SIGTERM) and waits; exit 0, not a kill
  stop() {
    "${podman[@]}" stop -t 60 "$container" >/dev/null || die "$name: podman stop failed"
    local status
    status=$("${podman[@]}" inspect -f '{{.State.ExitCode}}' "$container")
    [ "$status" = 0 ] || die "$name: exit $status after SIGTERM"
  }

  start
  local ready_ms=$((($(date +%s%N) - started) / 1000000))
  local pid uid
  pid=$("${podman[@]}" inspect -f '{{.State.Pid}}' "$container")
  uid=$(awk '/^Uid:/ { print $2 }' "/proc/$pid/status")
  [ "$uid" = 10001 ] || die "$name: the server runs as uid $uid, expected 10001"
  local created listed
  created=$(curl -sS --fail-with-body -X POST "$url/iam/v2beta1/groups" -H "Authorization: Bearer $token" \
    -H 'content-type: application/json' -d "{\"name\": \"image $name\"}") || die "$name: REST create failed: $created"
  listed=$(build/trellis --api "$url" --token "$token" --protocol grpc -o json iam groups list) || die "$name: gRPC list failed: $listed"
  case "$listed" in *"\"image $name\""*) ;; *) die "$name: the gRPC list lacks the group: $listed" ;; esac
  stop
  say "$name: ready in ${ready_ms} ms as uid 10001, token minted inside, a group created over REST and listed over gRPC through $url, SIGTERM: exit 0"
  [ -z "$emulator" ] || return 0

  # With a read-only root, as Kubernetes' readOnlyRootFilesystem (podman mounts a tmpfs on /tmp).
  start --read-only
  listed=$(curl -sS --fail-with-body "$url/iam/v2beta1/groups" -H "Authorization: Bearer $token") || die "$name: REST list after the restart failed: $listed"
  case "$listed" in *"\"image $name\""*) ;; *) die "$name: after a restart on the same volume the list lacks the group: $listed" ;; esac
  stop
  say "$name: a new container on the same volume, with a read-only root, has the group; SIGTERM: exit 0"
}

"${podman[@]}" load -q -i "$out/trellis-$version-linux-amd64.tar" >/dev/null || die "podman load of the amd64 docker-archive failed"
run_image amd64 "trellis:$version"

arm64=$("${podman[@]}" pull -q --platform linux/arm64 "oci:$layout:$version") || die "podman pull --platform linux/arm64 from the index failed"
[ "$("${podman[@]}" image inspect -f '{{.Architecture}}' "$arm64")" = arm64 ] || die "the index gave podman a non-arm64 image for linux/arm64"
run_image arm64 "$arm64" /usr/bin/qemu-aarch64-static

say "ok ($version: index, reproducible, amd64 served, stopped and restarted, arm64 served and stopped)"
