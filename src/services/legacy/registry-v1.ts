/**
 * chainguard.platform.registry.Registry (v1): `GET /registry/v1/repos` and
 * `GET /registry/v1/tags` over the same tables as v2beta1, in the v1 shapes (`id`, v1
 * CatalogTier numbers, `last_updated`, `{items: [...]}` unpaged). Unlike v2beta1, the v1 tag
 * list includes generated tags unless the filter excludes them.
 *
 * The v1 writes (CreateRepo/UpdateRepo/DeleteRepo, CreateTag/UpdateTag/DeleteTag) are not
 * implemented: v2beta1 serves them, and the pipeline answers UNIMPLEMENTED here. The methods
 * about image content answer UNIMPLEMENTED with what they would need
 * (registry-v1-image-content.ts).
 */
import type { ServiceImpl } from "@connectrpc/connect";
import type { Registry } from "../../../gen/chainguard/platform/registry/registry_v1_pb.js";
import { failedPrecondition } from "../../errors/api-error.js";
import { visibleScopes } from "../../auth/visible-scopes.js";
import type { ServiceContext } from "../context.js";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { GeneratedTag } from "../../store/tags.js";
import { repoToV1, tagToV1 } from "../registry/convert.js";
import { checkDigest } from "../registry/validate.js";
import { toUidpFilter } from "../list-request.js";
import { checkOptionalUidp, collect, requireValid } from "../validate.js";
import { invalidArgument } from "../../errors/api-error.js";
import { V1_LIST_MAX } from "./iam-v1.js";
import { createRegistryV1ImageContentMethods } from "./registry-v1-image-content.js";

export function createRegistryV1Service(ctx: ServiceContext): Partial<ServiceImpl<typeof Registry>> {
  return {
    ...createRegistryV1ImageContentMethods(),
    async listRepos(req, context) {
      requireValid(checkOptionalUidp("id", req.id));
      const uidp = toUidpFilter(req.uidp);
      const rows = await ctx.store.repos.listAll(
        {
          uidp: req.id ? { ...uidp, ids: [...(uidp.ids ?? []), req.id] } : uidp,
          name: req.name === "" ? undefined : req.name,
          within: visibleScopes(context),
        },
        V1_LIST_MAX,
      );
      refuseOverV1Max(rows, "repos", "/registry/v2beta1/repos");
      return { items: rows.map(repoToV1) };
    },

    async listTags(req, context) {
      const violations = collect(checkOptionalUidp("id", req.id), req.digest !== "" ? checkDigest("digest", req.digest) : undefined);
      if (violations.length > 0) throw invalidArgument(violations);
      const uidp = toUidpFilter(req.uidp);
      const include: GeneratedTag[] = [];
      if (!req.excludeReferrers) include.push(GeneratedTag.Referrer);
      if (!req.excludeDates) include.push(GeneratedTag.Dated);
      if (!req.excludeEpochs) include.push(GeneratedTag.Epoch);
      const rows = await ctx.store.tags.listAll(
        {
          uidp: req.id ? { ...uidp, ids: [...(uidp.ids ?? []), req.id] } : uidp,
          name: req.name || undefined,
          digest: req.digest || undefined,
          updatedSince: req.updatedSince ? Number(timestampMs(req.updatedSince)) : undefined,
          include,
          within: visibleScopes(context),
        },
        V1_LIST_MAX,
      );
      refuseOverV1Max(rows, "tags", "/registry/v2beta1/tags");
      return { items: rows.map(tagToV1) };
    },
  };
}

/** The v1 lists are unpaged; past V1_LIST_MAX matches they ask for a narrower filter or v2. */
function refuseOverV1Max(rows: readonly unknown[], what: string, v2Path: string): void {
  if (rows.length > V1_LIST_MAX) {
    throw failedPrecondition({
      type: "TOO_MANY_RESULTS",
      description: `more than ${V1_LIST_MAX} ${what} match; narrow the filter or page with ${v2Path}`,
    });
  }
}
