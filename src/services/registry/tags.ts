/**
 * chainguard.platform.registry.v2beta1.TagsService: tags under a repo. CreateTag is an
 * upsert (published: "when the repo already has a tag with that name, that tag is updated").
 */
import { timestampMs } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import { ListTagsRequestSchema, type Tag, type TagsService } from "../../../gen/chainguard/platform/registry/v2beta1/tags_pb.js";
import { invalidArgument, invalidField, notFound } from "../../errors/api-error.js";
import { visibleScopes } from "../../auth/visible-scopes.js";
import { listPage } from "../../pagination/page.js";
import { GeneratedTag, type TagFields, TAG_ORDERS } from "../../store/tags.js";
import type { ServiceContext } from "../context.js";
import { pageBinding, toUidpFilter } from "../list-request.js";
import { checkUidp, collect, requireValid } from "../validate.js";
import { tagToProto } from "./convert.js";
import { checkBundle, checkDigest, checkEach, checkTagName } from "./validate.js";

/**
 * Validates a tag for create/import/v1 PUT and returns its store fields. `at` is the tag's
 * path in the request ("" when the request is the tag, as in v1 UpdateTag).
 * @throws INVALID_ARGUMENT.
 */
export function tagFields(tag: Pick<Tag, "name" | "digest" | "deprecated" | "bundles">, at = "tag."): TagFields {
  const violations = [
    ...collect(checkTagName(`${at}name`, tag.name), checkDigest(`${at}digest`, tag.digest)),
    ...checkEach(`${at}bundles`, tag.bundles, checkBundle),
  ];
  if (violations.length > 0) throw invalidArgument(violations);
  return { name: tag.name, digest: tag.digest, deprecated: tag.deprecated, bundles: tag.bundles };
}

export function createTagsService(ctx: ServiceContext): Partial<ServiceImpl<typeof TagsService>> {
  const store = ctx.store.tags;
  return {
    async getTag(req) {
      requireValid(checkUidp("uid", req.uid));
      const row = await store.get(req.uid);
      if (!row) throw notFound("tag", req.uid);
      return tagToProto(row);
    },

    async createTag(req) {
      requireValid(checkUidp("parent", req.parent));
      if (!req.tag) throw invalidField("tag", "is required");
      return tagToProto(await store.upsert(req.parent, tagFields(req.tag), ctx.now()));
    },

    async deleteTag(req) {
      requireValid(checkUidp("uid", req.uid));
      await store.delete(req.uid);
      return {};
    },

    async listTags(req, context) {
      const violations = collect(
        req.name !== "" ? checkTagName("name", req.name) : undefined,
        req.digest !== "" ? checkDigest("digest", req.digest) : undefined,
      );
      if (violations.length > 0) throw invalidArgument(violations);
      const include: GeneratedTag[] = [];
      if (req.includeReferrers) include.push(GeneratedTag.Referrer);
      if (req.includeDates) include.push(GeneratedTag.Dated);
      if (req.includeEpochs) include.push(GeneratedTag.Epoch);
      const filter = {
        uidp: toUidpFilter(req.uidp),
        name: req.name || undefined,
        digest: req.digest || undefined,
        updatedSince: req.updatedSince ? Number(timestampMs(req.updatedSince)) : undefined,
        include,
        within: visibleScopes(context),
      };
      const page = await listPage(
        req,
        {
          orders: TAG_ORDERS.spellings,
          defaultOrder: { key: "uid", desc: false },
          binding: pageBinding(context, ListTagsRequestSchema, req),
          fetch: (q) => store.list(filter, q),
          count: () => store.count(filter),
          cursor: (row, order) => ({ value: TAG_ORDERS.value(row, order), uid: row.uid }),
        },
        ctx.pageTokens,
        ctx.now(),
      );
      return {
        tags: page.items.map(tagToProto),
        nextPageToken: page.nextPageToken,
        totalCount: page.totalCount,
        skipped: page.skipped,
      };
    },
  };
}
