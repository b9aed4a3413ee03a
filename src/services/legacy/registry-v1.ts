/**
 * chainguard.platform.registry.Registry (v1): `GET /registry/v1/repos` over the same `repos`
 * table as v2beta1, in the v1 shape (`id`, v1 CatalogTier numbers, `{items: [...]}` unpaged).
 *
 * The v1 writes (CreateRepo/UpdateRepo/DeleteRepo, tags) are not implemented: v2beta1 serves
 * them, and the pipeline answers UNIMPLEMENTED here.
 */
import type { ServiceImpl } from "@connectrpc/connect";
import type { Registry } from "../../../gen/chainguard/platform/registry/registry_v1_pb.js";
import { failedPrecondition } from "../../errors/api-error.js";
import { visibleScopes } from "../../auth/visible-scopes.js";
import type { ServiceContext } from "../context.js";
import { repoToV1 } from "../registry/convert.js";
import { toUidpFilter } from "../list-request.js";
import { checkOptionalUidp, requireValid } from "../validate.js";
import { V1_LIST_MAX } from "./iam-v1.js";

export function createRegistryV1Service(ctx: ServiceContext): Partial<ServiceImpl<typeof Registry>> {
  return {
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
      if (rows.length > V1_LIST_MAX) {
        throw failedPrecondition({
          type: "TOO_MANY_RESULTS",
          description: `more than ${V1_LIST_MAX} repos match; narrow the filter or page with /registry/v2beta1/repos`,
        });
      }
      return { items: rows.map(repoToV1) };
    },
  };
}
