/**
 * Our protos against the published ones: every message, enum and service we declare in a
 * published package (chainguard.platform.iam.v2beta1 and .v2, .registry.*, .vulnerabilities.*)
 * has the published field numbers, names, JSON names and types, and the published methods
 * with their HTTP rules and IAM and event annotations (test/support/descriptor-digest.ts says
 * what is compared and what is not).
 *
 * The published files are read from a checkout of github.com/chainguard-dev/sdk, given as
 * TRELLIS_PUBLISHED_SDK (nothing of it is kept in this repository), and built with the same
 * buf as ours:
 *
 *   git clone https://github.com/chainguard-dev/sdk /tmp/sdk
 *   TRELLIS_PUBLISHED_SDK=/tmp/sdk npx vitest run test/proto/published.test.ts
 *
 * Without it the comparison is skipped; test/proto/ga-twins.test.ts, which needs nothing
 * from outside, still holds every v2 file to its v2beta1 twin, so a v2beta1 file checked here
 * once keeps its GA twin checked too.
 */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { createFileRegistry, type DescFile, fromBinary } from "@bufbuild/protobuf";
import { FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { declaredFiles } from "../support/declared-services.js";
import { digestDifferences, digestFiles } from "../support/descriptor-digest.js";

const SDK = process.env.TRELLIS_PUBLISHED_SDK;
const PUBLISHED_PACKAGE = /^chainguard\.platform\.(iam|registry|vulnerabilities)\.v2(beta1)?$/;

/**
 * Published services we do not declare yet (issue 32, section 2: they need storage of their
 * own). A published service missing from this list and from our protos fails the test.
 */
const NOT_DECLARED_YET = new Set([
  "chainguard.platform.iam.v2beta1.ExternalGroupRoleMappingsService",
  "chainguard.platform.iam.v2beta1.TermsService",
  "chainguard.platform.iam.v2.ExternalGroupRoleMappingsService",
  "chainguard.platform.iam.v2.TermsService",
  "chainguard.platform.registry.v2beta1.ImagesService",
  "chainguard.platform.registry.v2beta1.OverlaysService",
  "chainguard.platform.registry.v2beta1.OverlayBindingsService",
  "chainguard.platform.registry.v2.ImagesService",
  // Published in registry.v2 beside the GA services; never part of v2beta1.
  "chainguard.platform.registry.v2.StigReportsService",
  "chainguard.platform.vulnerabilities.v2.VulnReportsService",
]);

const ours = (await declaredFiles()).filter((f) => PUBLISHED_PACKAGE.test(f.proto.package ?? ""));

function publishedFiles(sdk: string): DescFile[] {
  const root = path.join(sdk, "proto");
  const wanted = ["iam", "registry", "vulnerabilities"].flatMap((area) =>
    ["v2beta1", "v2"].map((v) => `chainguard/platform/${area}/${v}`).filter((dir) => existsSync(path.join(root, dir))),
  );
  // Run inside the checkout, so buf reads it as a module of its own and not as part of ours.
  const image = execFileSync(
    path.resolve("node_modules/.bin/buf"),
    ["build", ".", "--config", JSON.stringify({ version: "v2" }), ...wanted.flatMap((d) => ["--path", d]), "-o", "-#format=binpb"],
    {
      cwd: root,
      maxBuffer: 256 << 20,
    },
  );
  const registry = createFileRegistry(fromBinary(FileDescriptorSetSchema, image));
  return [...registry.files].filter((f) => PUBLISHED_PACKAGE.test(f.proto.package ?? ""));
}

describe.skipIf(!SDK)("our protos match the published ones (TRELLIS_PUBLISHED_SDK)", () => {
  const published = SDK ? publishedFiles(SDK) : [];

  it.each(ours.map((f) => ({ name: f.name, file: f })))("$name", ({ name, file }) => {
    const theirs = published.find((p) => p.name === name);
    expect(theirs, `${name} is not published`).toBeDefined();
    const expected = digestFiles([theirs as DescFile]);
    expect(digestDifferences(expected, digestFiles([file]))).toEqual([]);
  });

  it("declares every published service of these packages but those listed as not yet", () => {
    const declared = new Set(ours.flatMap((f) => f.services.map((s) => s.typeName)));
    const missing = published.flatMap((f) => f.services.map((s) => s.typeName)).filter((s) => !declared.has(s));
    expect(missing.filter((s) => !NOT_DECLARED_YET.has(s))).toEqual([]);
  });
});
