/**
 * Store rows → registry proto messages (v2beta1 and the v1 list shape).
 */
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import {
  CatalogTier as CatalogTierV1,
  type Repo as RepoV1,
  RepoSchema as RepoV1Schema,
  type Tag as TagV1,
  TagSchema as TagV1Schema,
} from "../../../gen/chainguard/platform/registry/registry_v1_pb.js";
import { type Repo, RepoSchema } from "../../../gen/chainguard/platform/registry/v2beta1/repos_pb.js";
import { type Tag, TagSchema } from "../../../gen/chainguard/platform/registry/v2beta1/tags_pb.js";
import type { RepoRecord } from "../../store/repos.js";
import type { TagRecord } from "../../store/tags.js";

export function repoToProto(row: RepoRecord): Repo {
  return create(RepoSchema, {
    uid: row.uid,
    name: row.name,
    description: row.description,
    catalogTier: row.catalogTier,
    bundles: [...row.bundles],
    aliases: [...row.aliases],
    activeTags: [...row.activeTags],
    createTime: timestampFromMs(row.createTime),
    updateTime: timestampFromMs(row.updateTime),
  });
}

/**
 * v1 numbers its CatalogTier differently: v2beta1 APPLICATION..COMMERCIAL (1..6) are v1
 * 4..9 (1-3 are retired), and UNSPECIFIED is UNKNOWN (0).
 */
export function catalogTierToV1(tier: number): CatalogTierV1 {
  return tier >= 1 && tier <= 6 ? ((tier + 3) as CatalogTierV1) : CatalogTierV1.UNKNOWN;
}

/** The v1 Repo shape: `id`, no update_time, the README inline. */
export function repoToV1(row: RepoRecord, readme = ""): RepoV1 {
  return create(RepoV1Schema, {
    id: row.uid,
    name: row.name,
    readme,
    catalogTier: catalogTierToV1(row.catalogTier),
    bundles: [...row.bundles],
    aliases: [...row.aliases],
    activeTags: [...row.activeTags],
    description: row.description,
    createTime: timestampFromMs(row.createTime),
  });
}

export function tagToProto(row: TagRecord): Tag {
  return create(TagSchema, {
    uid: row.uid,
    name: row.name,
    digest: row.digest,
    deprecated: row.deprecated,
    bundles: [...row.bundles],
    updateTime: timestampFromMs(row.updateTime),
  });
}

/**
 * v1 CatalogTier → v2beta1 number (the inverse of catalogTierToV1); undefined for the
 * retired 1-3 and unknown numbers, which a write refuses.
 */
export function catalogTierFromV1(tier: number): number | undefined {
  if (tier === CatalogTierV1.UNKNOWN) return 0;
  return tier >= 4 && tier <= 9 ? tier - 3 : undefined;
}

/** The v1 Tag shape: `id`, `last_updated`. */
export function tagToV1(row: TagRecord): TagV1 {
  return create(TagV1Schema, {
    id: row.uid,
    name: row.name,
    digest: row.digest,
    lastUpdated: timestampFromMs(row.updateTime),
    deprecated: row.deprecated,
    bundles: [...row.bundles],
  });
}
