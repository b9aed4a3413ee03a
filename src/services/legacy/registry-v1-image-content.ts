/**
 * The v1 Registry methods whose answer is made of image content or of systems around a
 * registry (builds, mirroring, scanning, package feeds), none of which Trellis holds: it
 * stores repos, tags and the digests they point at, never manifests, layers, attestations or
 * SBOMs. Each answers UNIMPLEMENTED saying what it would need, so a client learns that the
 * method exists (reflection and REST list it) but that this server cannot answer it.
 *
 * They are real implementations as far as the call pipeline goes: authentication and
 * authorization run first, exactly as for a served method, so an unauthorized caller gets
 * PERMISSION_DENIED, not a hint about what the server supports for that repo.
 *
 * docs/surface.md lists them with the same reasons.
 */
import type { ServiceImpl } from "@connectrpc/connect";
import { Registry } from "../../../gen/chainguard/platform/registry/registry_v1_pb.js";
import { unimplemented } from "../../errors/api-error.js";

type RegistryImpl = ServiceImpl<typeof Registry>;

/** What each method would need, in the words the error message uses. */
export const IMAGE_CONTENT_NEEDS = {
  getSbom: "the image's SBOM (generated from or attached to the image)",
  getRawSbom: "the image's SBOM document as stored in the registry",
  getVulnReport: "a vulnerability scan of the image's contents",
  getImageConfig: "the image's OCI configuration blob",
  getArchs: "the image's index and per-platform manifests",
  getSize: "the image's manifests and layer sizes",
  listManifestMetadata: "the package lists (SBOMs) of the image manifests",
  getManifestDigestCount: "the registry's manifest store (tags name only some manifests)",
  getHelm: "the Helm values attestation attached to the image",
  getChart: "the Helm chart's content (Chart.yaml, values.yaml) stored in the registry",
  listChartsByImageRepo: "the chart-lock attestations of the charts that use the repo's images",
  getPackageVersionMetadata: "a package version-stream feed (release and end-of-life dates per version)",
  listBuildReports: "the reports of an image build system",
  getBuildStatus: "the reports of an image build system",
  getUpdateStatus: "the rebuild history of the repo's images",
  getSyncStatus: "a registry mirroring queue (Trellis mirrors no repos)",
  listSyncStatuses: "a registry mirroring queue (Trellis mirrors no repos)",
} as const satisfies Partial<Record<keyof RegistryImpl, string>>;

/** The methods above, each failing with its reason. */
export function createRegistryV1ImageContentMethods(): Partial<RegistryImpl> {
  const methods: Record<string, () => Promise<never>> = {};
  for (const [localName, needs] of Object.entries(IMAGE_CONTENT_NEEDS)) {
    const method = Registry.methods.find((m) => m.localName === localName);
    // A renamed proto method must not silently fall back to the generic answer.
    if (!method) throw new Error(`Registry has no method ${localName}`);
    const name = `${Registry.typeName}/${method.name}`;
    methods[localName] = async () => {
      throw unimplemented(name, needs);
    };
  }
  return methods as Partial<RegistryImpl>;
}
