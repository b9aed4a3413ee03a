/**
 * chainguard.platform.registry.Registry (v1): `GET /registry/v1/repos` and friends.
 *
 * Repos arrive with the registry work (issue 6); until then the store holds none, so the
 * list is honestly empty and the write methods answer UNIMPLEMENTED.
 */
import type { ServiceImpl } from "@connectrpc/connect";
import type { Registry } from "../../../gen/chainguard/platform/registry/registry_v1_pb.js";
import type { ServiceContext } from "../context.js";
import { toUidpFilter } from "../list-request.js";

export function createRegistryV1Service(_ctx: ServiceContext): Partial<ServiceImpl<typeof Registry>> {
  return {
    async listRepos(req) {
      toUidpFilter(req.uidp); // validates the filter even though no repos exist yet
      return { items: [] };
    },
  };
}
