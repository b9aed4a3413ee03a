/**
 * Preloaded (NODE_OPTIONS=--require) by scripts/test-node24.sh: the test suite's run on the
 * Node that the binary embeds. node_modules holds better-sqlite3's addon built for the
 * machine's Node, whose ABI the other Node refuses; this sends every load of it, from the
 * tests' own `new Database(...)` as from the server's, in every process that inherits the
 * environment, to the build for this Node (TRELLIS_TEST_SQLITE_ADDON, made by
 * `npm run package -- --addon`). node_modules itself is left as it is for the machine's Node.
 */
"use strict";
const path = require("node:path");

const addon = process.env.TRELLIS_TEST_SQLITE_ADDON;
if (addon) {
  const dlopen = process.dlopen;
  process.dlopen = function dlopenRedirected(module, filename, ...rest) {
    const target = path.basename(filename) === "better_sqlite3.node" ? addon : filename;
    return dlopen.call(this, module, target, ...rest);
  };
}
