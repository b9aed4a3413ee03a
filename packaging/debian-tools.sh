#!/usr/bin/env bash
# The Debian tools that packaging needs beyond `npm ci`, installed with apt-get when missing
# (as root; otherwise it prints the apt-get line and fails). CI runs it (.ci/run); after it,
# every packaging step works offline but the image's first download of its Debian libraries.
#   - arm64 binary (npm run package -- --arch arm64): gcc/g++-aarch64-linux-gnu (which bring
#     the arm64 C and C++ libraries in /usr/aarch64-linux-gnu) and qemu-user-static (runs the
#     arm64 Node during the build, and the binary in scripts/smoke-binary.sh);
#   - images (npm run package:image): umoci (builds the OCI layout) and skopeo (writes the
#     docker-archive tarballs, inspects images);
#   - running an image (scripts/smoke-image.sh): podman with runc (Debian 12's crun refuses
#     cgroups mounted in hybrid mode, as on these machines);
#   - the systemd unit's check (test/packaging/systemd.test.ts): systemd-analyze, from systemd.
# Usage: bash packaging/debian-tools.sh [--print]   (--print: only say what is missing)
set -euo pipefail

# command → the Debian package that provides it
declare -A packages=(
  [aarch64-linux-gnu-gcc]=gcc-aarch64-linux-gnu
  [aarch64-linux-gnu-g++]=g++-aarch64-linux-gnu
  [qemu-aarch64-static]=qemu-user-static
  [umoci]=umoci
  [skopeo]=skopeo
  [podman]=podman
  [runc]=runc
  [systemd-analyze]=systemd
)
missing=()
for command in "${!packages[@]}"; do
  command -v "$command" >/dev/null 2>&1 || missing+=("${packages[$command]}")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "debian-tools: all installed"
  exit 0
fi
mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
install=(apt-get install -y --no-install-recommends "${missing[@]}")
if [ "${1:-}" = "--print" ] || [ "$(id -u)" -ne 0 ]; then
  echo "debian-tools: missing; as root: apt-get update && ${install[*]}" >&2
  exit 1
fi
echo "debian-tools: ${install[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
"${install[@]}" >/dev/null
echo "debian-tools: installed ${missing[*]}"
