/**
 * Each generally available (v2) file declares exactly what its v2beta1 twin declares, with the
 * version renamed: the same messages, field numbers, names, JSON names and types, enums, methods
 * in the same order, HTTP rules (`/iam/v2beta1/…` → `/iam/v2/…`), IAM and event annotations.
 * The published v2 files are their v2beta1 files renamed the same way
 * (test/proto/published.test.ts checks both against them), and the server serves every v2
 * method with its twin's implementation, which is only sound while this holds. The v2 files
 * are written from their twins by `npm run generate` (scripts/ga-protos.mjs): this fails on a
 * hand edit of a v2 file or a v2beta1 change not regenerated.
 */
import { describe, expect, it } from "vitest";
import { declaredFiles } from "../support/declared-services.js";
import { digestDifferences, digestFiles } from "../support/descriptor-digest.js";

const files = await declaredFiles();
const GA = files.filter((f) => /^chainguard\.platform\.\w+\.v2$/.test(f.proto.package ?? ""));
const toV2 = (text: string) =>
  text.replace(/(chainguard\.platform\.\w+)\.v2beta1\./g, "$1.v2.").replace(/"?\/(\w+)\/v2beta1\//g, (m) => m.replace("v2beta1", "v2"));

describe("every v2 file is its v2beta1 twin renamed", () => {
  it("declares the GA files of IAM, registry and vulnerabilities", () => {
    expect(GA.map((f) => f.name).sort()).toEqual(
      [
        "chainguard/platform/iam/v2/account_associations",
        "chainguard/platform/iam/v2/group_invites",
        "chainguard/platform/iam/v2/groups",
        "chainguard/platform/iam/v2/identities",
        "chainguard/platform/iam/v2/identity_providers",
        "chainguard/platform/iam/v2/role_bindings",
        "chainguard/platform/iam/v2/roles",
        "chainguard/platform/registry/v2/repos",
        "chainguard/platform/registry/v2/tags",
        "chainguard/platform/vulnerabilities/v2/advisories",
      ].sort(),
    );
  });

  it.each(GA.map((f) => ({ name: f.name, file: f })))("$name", ({ name, file }) => {
    const twin = files.find((f) => f.name === name.replace("/v2/", "/v2beta1/"));
    expect(twin, `${name} has no v2beta1 twin`).toBeDefined();
    if (!twin) return;
    expect(digestDifferences(digestFiles([twin], toV2), digestFiles([file]))).toEqual([]);
  });
});
