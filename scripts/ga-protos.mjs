#!/usr/bin/env node
/**
 * `npm run generate`, before buf: writes the generally available (v2) proto files from their
 * v2beta1 twins.
 *
 * The published v2 packages (chainguard.platform.iam.v2, .registry.v2, .vulnerabilities.v2)
 * declare exactly the messages, fields, methods and annotations of v2beta1 under another
 * package and other HTTP paths, and Trellis serves them with the same implementations
 * (src/server/api-versions.ts). So each v2 file is its v2beta1 file with three things renamed
 * (the package, go_package, the `/<area>/v2beta1/` paths) and a note in its header: written
 * once, in v2beta1, and derived here, never edited by hand. test/proto/ga-twins.test.ts holds
 * every v2 file to its twin (and fails on a hand edit or a missed regeneration), and
 * test/proto/published.test.ts checks both against the published files.
 */
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.join(fileURLToPath(new URL("..", import.meta.url)), "proto", "chainguard", "platform");
const AREAS = ["iam", "registry", "vulnerabilities"];

for (const area of AREAS) {
  const from = path.join(root, area, "v2beta1");
  const to = path.join(root, area, "v2");
  fs.rmSync(to, { recursive: true, force: true });
  fs.mkdirSync(to);
  for (const name of fs
    .readdirSync(from)
    .filter((f) => f.endsWith(".proto"))
    .sort()) {
    const text = fs.readFileSync(path.join(from, name), "utf8");
    const start = text.indexOf('syntax = "proto3";');
    if (start < 0) throw new Error(`${area}/v2beta1/${name}: no syntax line`);
    const header = text.slice(0, start).trimEnd();
    const note = [
      "//",
      `// General availability (v2): the services, messages and fields of ../v2beta1/${name}`,
      `// exactly, in the package chainguard.platform.${area}.v2 with paths under /${area}/v2/.`,
      "// Written by scripts/ga-protos.mjs (npm run generate) from that file: edit it there.",
      "// Trellis serves each v2 method with its v2beta1 twin's implementation",
      "// (src/server/api-versions.ts).",
    ].join("\n");
    const body = text
      .slice(start)
      .replace(`package chainguard.platform.${area}.v2beta1;`, `package chainguard.platform.${area}.v2;`)
      .replace(`chainguard.dev/sdk/proto/chainguard/platform/${area}/v2beta1;v2beta1`, `chainguard.dev/sdk/proto/chainguard/platform/${area}/v2;v2`)
      .replaceAll(`"/${area}/v2beta1/`, `"/${area}/v2/`);
    const left = body.split("\n").filter((line) => line.includes("v2beta1"));
    if (left.length > 0) throw new Error(`${area}/v2beta1/${name}: "v2beta1" left after renaming:\n${left.join("\n")}`);
    fs.writeFileSync(path.join(to, name), `${header ? `${header}\n` : ""}${note}\n${body}`);
  }
}
