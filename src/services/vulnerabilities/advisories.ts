/**
 * chainguard.platform.vulnerabilities.v2beta1.AdvisoriesService: read-only, as published.
 * Advisories are written by `trellis import` (src/import/). Every published filter is
 * honoured; see src/store/advisories.ts for how each one is answered.
 */
import type { ServiceImpl } from "@connectrpc/connect";
import { type AdvisoriesService, ListAdvisoriesRequestSchema } from "../../../gen/chainguard/platform/vulnerabilities/v2beta1/advisories_pb.js";
import { invalidField, notFound } from "../../errors/api-error.js";
import { visibleScopes } from "../../auth/visible-scopes.js";
import { listPage } from "../../pagination/page.js";
import { type AdvisoryListFilter, ADVISORY_ORDERS } from "../../store/advisories.js";
import type { ServiceContext } from "../context.js";
import { pageBinding, toUidpFilter } from "../list-request.js";
import { checkUidp, checkValueCount, requireValid } from "../validate.js";
import { advisoryToProto } from "./convert.js";

/** Longest free-text `query` accepted: it is a substring test, not a search language. */
export const QUERY_MAX = 256;

const LIST_FILTERS = [
  ["advisory_ids", "advisoryIds"],
  ["legacy_advisory_ids", "legacyAdvisoryIds"],
  ["artifact_names", "artifactNames"],
  ["artifact_types", "artifactTypes"],
  ["artifact_architectures", "artifactArchitectures"],
  ["component_names", "componentNames"],
  ["component_types", "componentTypes"],
  ["component_locations", "componentLocations"],
  ["aliases", "aliases"],
  ["event_review_states", "eventReviewStates"],
  ["event_authors", "eventAuthors"],
  ["exclude_event_authors", "excludeEventAuthors"],
  ["event_reviewers", "eventReviewers"],
  ["event_types", "eventTypes"],
] as const;

export function createAdvisoriesService(ctx: ServiceContext): Partial<ServiceImpl<typeof AdvisoriesService>> {
  const store = ctx.store.advisories;
  return {
    async getAdvisory(req) {
      requireValid(checkUidp("uid", req.uid));
      const row = await store.get(req.uid);
      if (!row) throw notFound("advisory", req.uid);
      return advisoryToProto(row);
    },

    async listAdvisories(req, context) {
      if ([...req.query].length > QUERY_MAX) throw invalidField("query", `must be at most ${QUERY_MAX} characters`);
      for (const [field, key] of LIST_FILTERS) {
        requireValid(checkValueCount(field, req[key]));
      }
      const filter: AdvisoryListFilter = {
        uidp: toUidpFilter(req.uidp),
        within: visibleScopes(context),
        advisoryIds: req.advisoryIds,
        legacyAdvisoryIds: req.legacyAdvisoryIds,
        artifactNames: req.artifactNames,
        artifactTypes: req.artifactTypes,
        artifactArchitectures: req.artifactArchitectures,
        componentNames: req.componentNames,
        componentTypes: req.componentTypes,
        componentLocations: req.componentLocations,
        aliases: req.aliases,
        origin: req.origin,
        eventReviewStates: req.eventReviewStates,
        eventAuthors: req.eventAuthors,
        excludeEventAuthors: req.excludeEventAuthors,
        eventReviewers: req.eventReviewers,
        eventTypes: req.eventTypes,
        // UNSPECIFIED is the enum's "no filter".
        latestEventType: req.latestEventType ? req.latestEventType : undefined,
        query: req.query.trim() || undefined,
      };
      const page = await listPage(
        req,
        {
          orders: ADVISORY_ORDERS.spellings,
          defaultOrder: { key: "uid", desc: false },
          binding: pageBinding(context, ListAdvisoriesRequestSchema, req),
          fetch: (q) => store.list(filter, q),
          count: () => store.count(filter),
          cursor: (row, order) => ({ value: ADVISORY_ORDERS.value(row, order), uid: row.uid }),
        },
        ctx.pageTokens,
        ctx.now(),
      );
      return {
        advisories: page.items.map(advisoryToProto),
        nextPageToken: page.nextPageToken,
        totalCount: page.totalCount,
        skipped: page.skipped,
      };
    },
  };
}
