#!/usr/bin/env bash
# Smoke test of the single-file binary (`npm run package`), run the way an operator would on a
# machine with no Node: the binary is copied ALONE into an empty directory, and the test runs
# under `env -i` with a PATH made of a fresh folder holding only the few tools this script
# calls (bash, curl, coreutils), so neither a system Node nor node_modules can stand in for
# what the binary must carry. It then:
#   - checks `trellis --version`;
#   - serves on port 0 with a fresh data directory and reads the ready line;
#   - mints an operator token with the binary's own `auth token --local`;
#   - creates and lists groups over REST (curl) and over gRPC and Connect (the binary's CLI);
#   - sends SIGTERM and expects exit 0, restarts on the same data (with OpenTelemetry tracing
#     on, exporting to a closed port) and finds it there, stops
#     again, and expects no file left behind in TMPDIR (the embedded addon
#     and migrations are written to private temporary files only while they are loaded);
#   - runs a binary built for another processor (build/trellis-linux-arm64 on an x86-64 machine)
#     the same way, each command under qemu-user (Debian's qemu-user-static, e.g.
#     qemu-aarch64-static) with the target's C library from Debian's cross packages
#     (/usr/aarch64-linux-gnu; SMOKE_QEMU_LD_PREFIX overrides): it is the one extra tool on PATH;
#   - when PostgreSQL's server binaries are on the machine (CI installs them; PG_BIN as in
#     scripts/pg-cluster.mjs): starts a throwaway cluster before the bare environment is made
#     (the cluster is not part of what is tested), then, inside it, moves the SQLite data just
#     made into PostgreSQL with the binary's `db copy` (which migrates the empty database
#     with the migrations the binary carries), serves from PostgreSQL, finds the copied groups
#     over REST with a token minted from PostgreSQL, writes and reads over gRPC, and stops.
#     SMOKE_POSTGRES=off skips this part; SMOKE_POSTGRES=on fails when it cannot run.
# Usage: scripts/smoke-binary.sh [BINARY]   (default build/trellis). Last line: "smoke: ok ...".
#        scripts/smoke-binary.sh build/trellis-linux-arm64   (under qemu-user on x86-64)
set -euo pipefail

if [ "${1:-}" = "--inside" ]; then
  # ---- the test itself, in the bare environment ----
  expected_version=$2
  cd "$3"
  pg_url=${SMOKE_PG_URL:-}
  unset SMOKE_PG_URL
  # Empty, or the qemu-user that runs the binary here (set up below the test).
  emulator=()
  if [ -n "${SMOKE_EMULATOR:-}" ]; then emulator=("$SMOKE_EMULATOR"); fi
  unset SMOKE_EMULATOR
  trellis() { "${emulator[@]}" ./trellis "$@"; }
  # How many 50 ms polls for the ready line: 15 s, or 90 s under emulation (qemu-user starts
  # the arm64 binary in a few seconds on an idle x86-64 core, far slower on a loaded one).
  ready_polls=300
  if [ ${#emulator[@]} -gt 0 ]; then ready_polls=1800; fi
  say() { printf 'smoke: %s\n' "$*"; }
  die() { printf 'smoke: FAILED: %s\n' "$*" >&2; [ -f serve.err ] && tail -n 20 serve.err >&2; exit 1; }
  # A failed check must not leave the server running behind the script.
  server=
  trap 'if [ -n "$server" ]; then kill -9 "$server" 2>/dev/null || true; fi' EXIT

  if command -v node >/dev/null 2>&1; then die "a node is on PATH ($(command -v node))"; fi
  for dir in . .. ../.. /; do [ ! -e "$dir/node_modules" ] || die "$dir/node_modules exists"; done
  [ "$(ls -A)" = "trellis" ] || die "the directory holds more than the binary: $(ls -A | tr '\n' ' ')"

  version=$(trellis --version) || die "trellis --version failed"
  [ "$version" = "$expected_version" ] || die "trellis --version printed '$version', expected '$expected_version'"
  say "trellis --version: $version${emulator[0]:+ (under ${emulator[0]})}"

  # Sets server, url and ready_ms. Arguments: where the data is (default --data ./data).
  start_server() {
    local started
    started=$(date +%s%N)
    if [ $# -eq 0 ]; then set -- --data ./data; fi
    # Made first: the loop below may read it before the background job has opened it, and a
    # failed sed would end the script (set -e).
    : >serve.out
    # Not through the function: $! must be the process that gets SIGTERM (qemu-user passes
    # signals on to the program it runs).
    "${emulator[@]}" ./trellis serve --addr 127.0.0.1:0 "$@" >serve.out 2>serve.err &
    server=$!
    url=
    for _ in $(seq 1 "$ready_polls"); do
      url=$(sed -n 's/^listening on \(http:\/\/127\.0\.0\.1:[0-9]*\)$/\1/p' serve.out)
      [ -n "$url" ] && break
      kill -0 "$server" 2>/dev/null || die "the server exited before it was ready"
      sleep 0.05
    done
    [ -n "$url" ] || die "no ready line within $((ready_polls / 20)) s"
    ready_ms=$((($(date +%s%N) - started) / 1000000))
  }
  stop_server() {
    kill -TERM "$server"
    status=0
    wait "$server" || status=$?
    [ "$status" -eq 0 ] || die "the server exited with $status after SIGTERM"
    server=
  }

  start_server
  say "serve: $url ready in ${ready_ms} ms"

  token=$(trellis auth token --local --data ./data) || die "auth token --local failed"
  auth="Authorization: Bearer $token"

  # REST: create, then list and find it.
  created=$(curl -sS --fail-with-body -X POST "$url/iam/v2beta1/groups" -H "$auth" -H 'content-type: application/json' \
    -d '{"name": "smoke rest"}') || die "REST create failed: $created"
  uid=$(printf '%s' "$created" | sed -n 's/.*"uid": *"\([^"]*\)".*/\1/p')
  [ -n "$uid" ] || die "REST create answered no uid: $created"
  listed=$(curl -sS --fail-with-body "$url/iam/v2beta1/groups" -H "$auth") || die "REST list failed: $listed"
  case "$listed" in *"\"$uid\""*'"smoke rest"'* | *'"smoke rest"'*"\"$uid\""*) ;; *) die "REST list lacks the group: $listed" ;; esac
  say "REST: created and listed group $uid"

  # gRPC (HTTP/2) and Connect, with the binary's own client.
  cli() { trellis --api "$url" --token "$token" -o json "$@"; }
  out=$(cli --protocol grpc iam groups create "smoke grpc") || die "gRPC create failed: $out"
  out=$(cli --protocol grpc iam groups list) || die "gRPC list failed: $out"
  case "$out" in *'"smoke rest"'*) ;; *) die "gRPC list lacks the REST group: $out" ;; esac
  case "$out" in *'"smoke grpc"'*) ;; *) die "gRPC list lacks the gRPC group: $out" ;; esac
  say "gRPC: created and listed a group, and sees the REST one"
  out=$(cli --protocol connect iam groups list) || die "Connect list failed: $out"
  case "$out" in *'"smoke grpc"'*) ;; *) die "Connect list lacks the gRPC group: $out" ;; esac
  say "Connect: listed both groups"

  stop_server
  say "SIGTERM: exit 0"

  # A restart on the same data: the existing database is checked and opened, the data is there.
  # (a new port, so a new issuer URL: tokens of the first run name the old one)
  # With tracing configured, so the OpenTelemetry SDK, which the server imports only then, is
  # proven to be inside the binary; the collector's port is closed: failed exports are only
  # logged, and calls and the graceful stop go on.
  export OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:9
  start_server
  unset OTEL_EXPORTER_OTLP_ENDPOINT
  case "$(cat serve.err)" in *'"traces":"http/protobuf http://127.0.0.1:9/v1/traces"'*) ;; *) die "the start-up line does not say traces go to the endpoint" ;; esac
  token=$(trellis auth token --local --data ./data) || die "auth token --local failed after the restart"
  auth="Authorization: Bearer $token"
  listed=$(curl -sS --fail-with-body "$url/iam/v2beta1/groups" -H "$auth") || die "REST list after restart failed: $listed"
  case "$listed" in *'"smoke grpc"'*) ;; *) die "after a restart the list lacks the gRPC group: $listed" ;; esac
  say "restart with OTEL_EXPORTER_OTLP_ENDPOINT: ready in ${ready_ms} ms, tracing on, the groups are still there"
  stop_server
  [ -z "$(ls -A "$TMPDIR")" ] || die "files left in TMPDIR: $(ls -A "$TMPDIR" | tr '\n' ' ')"
  say "SIGTERM: exit 0, nothing left in TMPDIR"
  sqlite_ready_ms=$ready_ms

  if [ -z "$pg_url" ]; then
    say "ok (ready in ${sqlite_ready_ms} ms; PostgreSQL part skipped: no cluster)"
    exit 0
  fi
  # PostgreSQL, from the binary alone: db copy creates the schema from the embedded migrations.
  copied=$(trellis db copy --from ./data --to "$pg_url" 2>&1) || die "db copy failed: $copied"
  case "$copied" in *"verified"*) ;; *) die "db copy did not report its verification: $copied" ;; esac
  say "db copy: $(printf '%s' "$copied" | tail -n 1)"
  start_server --database "$pg_url"
  case "$(cat serve.err)" in *'"storage":"postgres"'*) ;; *) die "the start-up line does not say it serves from PostgreSQL" ;; esac
  token=$(trellis auth token --local --database "$pg_url") || die "auth token --local --database failed"
  auth="Authorization: Bearer $token"
  listed=$(curl -sS --fail-with-body "$url/iam/v2beta1/groups" -H "$auth") || die "REST list on PostgreSQL failed: $listed"
  case "$listed" in *'"smoke rest"'*'"smoke grpc"'* | *'"smoke grpc"'*'"smoke rest"'*) ;; *) die "on PostgreSQL the list lacks the copied groups: $listed" ;; esac
  out=$(cli --protocol grpc iam groups create "smoke postgres") || die "gRPC create on PostgreSQL failed: $out"
  out=$(cli --protocol grpc iam groups list) || die "gRPC list on PostgreSQL failed: $out"
  case "$out" in *'"smoke postgres"'*) ;; *) die "gRPC list on PostgreSQL lacks the new group: $out" ;; esac
  say "PostgreSQL: serve ready in ${ready_ms} ms, the copied groups listed over REST, a group written and read over gRPC"
  stop_server
  [ -z "$(ls -A "$TMPDIR")" ] || die "files left in TMPDIR: $(ls -A "$TMPDIR" | tr '\n' ' ')"
  say "SIGTERM: exit 0, nothing left in TMPDIR"
  say "ok (ready in ${sqlite_ready_ms} ms on SQLite, ${ready_ms} ms on PostgreSQL)"
  exit 0
fi

# ---- set-up, in the caller's environment ----
cd "$(dirname "$0")/.."
binary=${1:-build/trellis}
[ -x "$binary" ] || { echo "smoke: no executable $binary; run npm run package first" >&2; exit 1; }
expected_version=$(sed -n 's/^  "version": "\([^"]*\)",$/\1/p' package.json)
work=$(mktemp -d "${TMPDIR:-/tmp}/smoke-binary.XXXXXX")
pg_dir=
cleanup() {
  if [ -n "$pg_dir" ]; then node scripts/pg-cluster.mjs stop "$pg_dir" || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
# A throwaway PostgreSQL for the binary to serve from, when its server binaries are here.
pg_url=
case "${SMOKE_POSTGRES:-auto}" in
  off) ;;
  auto | on)
    if node -e 'import("./scripts/pg-cluster.mjs").then((m) => process.exit(m.findServerBinaries() ? 0 : 1))'; then
      pg_url=$(node scripts/pg-cluster.mjs start 2>"$work/pg-cluster.err") || { cat "$work/pg-cluster.err" >&2; exit 1; }
      pg_dir=$(sed -n 's/.*stop with: node scripts\/pg-cluster.mjs stop \(.*\)$/\1/p' "$work/pg-cluster.err")
      [ -n "$pg_dir" ] || { echo "smoke: could not read the cluster's directory from: $(cat "$work/pg-cluster.err")" >&2; exit 1; }
    elif [ "${SMOKE_POSTGRES:-auto}" = on ]; then
      echo "smoke: SMOKE_POSTGRES=on but PostgreSQL's server binaries are not installed (apt-get install postgresql, or PG_BIN)" >&2
      exit 1
    else
      echo "smoke: PostgreSQL's server binaries are not installed: the PostgreSQL part is skipped" >&2
    fi
    ;;
  *) echo "smoke: SMOKE_POSTGRES must be auto, on or off" >&2; exit 2 ;;
esac
# The binary's processor, from its ELF header (e_machine), against this machine's.
machine=$(od -An -tx1 -j18 -N2 "$binary" | tr -d ' \n')
case "$machine" in 3e00) binary_arch=x86_64 ;; b700) binary_arch=aarch64 ;; *) echo "smoke: $binary is not an x86-64 or arm64 ELF executable (e_machine $machine)" >&2; exit 1 ;; esac
emulator=
qemu_ld_prefix=
tools=(bash cat curl date kill ls sed seq sleep tail tr)
if [ "$binary_arch" != "$(uname -m)" ]; then
  emulator=qemu-$binary_arch-static
  qemu_ld_prefix=${SMOKE_QEMU_LD_PREFIX:-/usr/$binary_arch-linux-gnu}
  command -v "$emulator" >/dev/null && [ -d "$qemu_ld_prefix" ] || {
    echo "smoke: $binary is for $binary_arch: it needs $emulator and that architecture's C library in $qemu_ld_prefix (bash packaging/debian-tools.sh)" >&2
    exit 1
  }
  tools+=("$emulator")
fi
mkdir "$work/run" "$work/tools" "$work/tmp" "$work/home"
cp "$binary" "$work/run/trellis"
for tool in "${tools[@]}"; do
  found=$(command -v "$tool") || { echo "smoke: $tool is needed on PATH" >&2; exit 1; }
  ln -s "$found" "$work/tools/$tool"
done
status=0
# The cluster's URL (with its password) goes in the environment, not on a command line.
env -i PATH="$work/tools" HOME="$work/home" TMPDIR="$work/tmp" SMOKE_PG_URL="$pg_url" SMOKE_EMULATOR="$emulator" ${qemu_ld_prefix:+QEMU_LD_PREFIX="$qemu_ld_prefix"} bash "$PWD/scripts/smoke-binary.sh" --inside "$expected_version" "$work/run" || status=$?
exit "$status"
