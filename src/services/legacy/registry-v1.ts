/**
 * chainguard.platform.registry.Registry (v1) over the same tables as v2beta1, in the v1 shapes
 * (`id`, v1 CatalogTier numbers, `last_updated`, `{items: [...]}` unpaged). Unlike v2beta1,
 * the v1 tag list includes generated tags unless the filter excludes them.
 *
 * Served from local state: the repo and tag writes (v1 updates are PUTs that replace every
 * caller-set field; CreateRepo and CreateTag update the resource of the same name, as
 * published; replacing an existing repo that way also needs repo.update on it), tag history,
 * tag summaries, registry settings, deployments, end-of-life tags
 * (as far as `trellis import` loaded them) and the count of repos mirroring a repo.
 * The methods about image content answer UNIMPLEMENTED with what they would need
 * (registry-v1-image-content.ts).
 *
 * A v1 Repo carries its README inline, but writing a README is UpdateRepoReadme's job, which
 * needs the internal-only repo.internal.admin capability on top of repo.update. So the v1
 * writes never change it: `readme` may be left empty or sent back unchanged, anything else is
 * INVALID_ARGUMENT, and the answer carries the stored README.
 */
import { create, fromJson, type JsonValue } from "@bufbuild/protobuf";
import { timestampFromMs, timestampMs } from "@bufbuild/protobuf/wkt";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { Capability } from "../../../gen/chainguard/capabilities/capabilities_pb.js";
import {
  DeploymentSchema,
  EolTagFilterSchema,
  EolTagSchema,
  type HelmChart,
  PackageVersionSchema,
  Registry,
  type Repo as RepoV1,
  RegistrySettingsSchema,
  RepoTagsSummarySchema,
  TagHistorySchema,
} from "../../../gen/chainguard/platform/registry/registry_v1_pb.js";
import { RepoSchema } from "../../../gen/chainguard/platform/registry/v2beta1/repos_pb.js";
import { failedPrecondition, type FieldViolation, invalidArgument, invalidField, notFound, permissionDenied } from "../../errors/api-error.js";
import { holdsAt } from "../../auth/authorize.js";
import { callerOf } from "../../auth/caller.js";
import { narrowGrants } from "../../auth/token-limits.js";
import { isUidp } from "../../store/uidp.js";
import { visibleScopes } from "../../auth/visible-scopes.js";
import { listPage } from "../../pagination/page.js";
import type { EolTagRecord } from "../../store/eol-tags.js";
import type { DeploymentRecord, HelmChartRecord } from "../../store/repo-deployments.js";
import { GeneratedTag } from "../../store/tags.js";
import { catalogTierFromV1, repoToV1, tagToV1 } from "../registry/convert.js";
import { toRepoFields, wholeRepoViolations } from "../registry/repos.js";
import { tagFields } from "../registry/tags.js";
import { checkChartName, checkChartUrl, checkDigest, checkTagName, DEPLOYMENT_CHARTS_MAX } from "../registry/validate.js";
import type { ServiceContext } from "../context.js";
import { pageBinding, toUidpFilter } from "../list-request.js";
import { checkOptionalUidp, checkUidp, collect, requireValid } from "../validate.js";
import { V1_LIST_MAX } from "./iam-v1.js";
import { createRegistryV1ImageContentMethods } from "./registry-v1-image-content.js";

type RegistryImpl = ServiceImpl<typeof Registry>;

/** Generated tag classes a v1 request keeps, from its exclude_* flags. */
function includedClasses(req: { excludeReferrers?: boolean; excludeDates: boolean; excludeEpochs: boolean }): GeneratedTag[] {
  const include: GeneratedTag[] = [];
  if (!req.excludeReferrers) include.push(GeneratedTag.Referrer);
  if (!req.excludeDates) include.push(GeneratedTag.Dated);
  if (!req.excludeEpochs) include.push(GeneratedTag.Epoch);
  return include;
}

export function createRegistryV1Service(ctx: ServiceContext): Partial<RegistryImpl> {
  /**
   * Validates a v1 repo for a write (`at`: its path in the request) and returns its store
   * fields. The v1 tier numbers are mapped to the stored (v2beta1) ones.
   */
  const v1RepoFields = (repo: RepoV1, at: string) => {
    const tier = catalogTierFromV1(repo.catalogTier);
    const asV2 = create(RepoSchema, {
      name: repo.name,
      description: repo.description,
      catalogTier: tier ?? 0,
      bundles: repo.bundles,
      aliases: repo.aliases,
      activeTags: repo.activeTags,
      // Only their presence matters: both are refused (nothing here mirrors or assembles images).
      syncConfig: repo.syncConfig ? {} : undefined,
      customOverlay: repo.customOverlay ? {} : undefined,
    });
    const violations: FieldViolation[] = wholeRepoViolations(asV2, at);
    if (tier === undefined) violations.push({ field: `${at}catalog_tier`, description: "is not a known CatalogTier" });
    if (violations.length > 0) throw invalidArgument(violations);
    return toRepoFields(asV2);
  };

  /** Refuses a README change through a v1 write (see the file comment). */
  const keepReadme = async (readme: string, field: string, repoUid: string | undefined) => {
    if (readme === "") return;
    const stored = repoUid ? await ctx.store.repoReadmes.get(repoUid).catch(() => "") : "";
    if (readme !== stored) {
      throw invalidField(field, "is changed with UpdateRepoReadme (it needs repo.internal.admin); leave it empty or unchanged");
    }
  };

  /**
   * CreateRepo needs only repo.create, yet (as published) it replaces the fields of an
   * existing repo of the same name. Replacing is an update, so it also needs repo.update on
   * that repo, as UpdateRepo would: otherwise a caller allowed only to add repos could rewrite
   * every repo of the group. Returns the check, run in the write's transaction on the repo
   * found there (so a repo created meanwhile is checked too).
   */
  const updateRightCheck = async (context: HandlerContext): Promise<(repoUid: string) => void> => {
    const caller = callerOf(context);
    if (!caller || caller.operator) return () => {};
    // A down-scoped token holds only its reduction (token-limits.ts), here as everywhere.
    const grants = isUidp(caller.subject) ? narrowGrants(await ctx.store.roleBindings.grantsOf(caller.subject), caller.limits) : [];
    return (repoUid) => {
      if (!holdsAt(grants, repoUid, [Capability.CAP_REPO_UPDATE])) {
        throw permissionDenied(`the caller does not hold CAP_REPO_UPDATE on ${JSON.stringify(repoUid)}, which CreateRepo would replace`, {
          metadata: { method: `${Registry.typeName}/CreateRepo`, capabilities: "CAP_REPO_UPDATE", scope: repoUid },
        });
      }
    };
  };

  const withReadme = async (row: Parameters<typeof repoToV1>[0]) => repoToV1(row, await ctx.store.repoReadmes.get(row.uid));

  const checkCharts = (charts: readonly HelmChart[]): HelmChartRecord[] => {
    const violations: FieldViolation[] = [];
    if (charts.length > DEPLOYMENT_CHARTS_MAX) violations.push({ field: "charts", description: `at most ${DEPLOYMENT_CHARTS_MAX} charts` });
    charts.slice(0, DEPLOYMENT_CHARTS_MAX).forEach((c, i) => {
      const v = collect(
        c.repo === "" ? { field: `charts[${i}].repo`, description: "is required" } : checkChartUrl(`charts[${i}].repo`, c.repo, ["https", "http", "oci"]),
        c.source !== undefined ? checkChartUrl(`charts[${i}].source`, c.source, ["https", "http"]) : undefined,
        c.chart !== undefined ? checkChartName(`charts[${i}].chart`, c.chart) : undefined,
      );
      violations.push(...v);
    });
    if (violations.length > 0) throw invalidArgument(violations);
    return charts.map((c) => ({ repo: c.repo, ...(c.source !== undefined ? { source: c.source } : {}), ...(c.chart !== undefined ? { chart: c.chart } : {}) }));
  };

  const deploymentToV1 = (d: DeploymentRecord) => create(DeploymentSchema, { id: d.repoUid, charts: d.charts.map((c) => ({ ...c })) });

  /** Settings belong to an organization's registry: a root group. */
  const checkRegistryId = (field: string, value: string) =>
    checkUidp(field, value) ?? (value.includes("/") ? { field, description: "must name an organization (a root group)" } : undefined);

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
      refuseOverV1Max(rows, "repos", "page with /registry/v2beta1/repos");
      const readmes = await ctx.store.repoReadmes.many(rows.map((r) => r.uid));
      return { items: rows.map((r) => repoToV1(r, readmes.get(r.uid))) };
    },

    async createRepo(req, context) {
      requireValid(checkUidp("parent_id", req.parentId));
      if (!req.repo) throw invalidField("repo", "is required");
      const fields = v1RepoFields(req.repo, "repo.");
      if (req.preventExisting) {
        await keepReadme(req.repo.readme, "repo.readme", undefined);
        return withReadme(await ctx.store.repos.create(req.parentId, fields, ctx.now()));
      }
      const existing = (await ctx.store.repos.listAll({ uidp: { childrenOf: req.parentId }, name: fields.name }, 1))[0];
      await keepReadme(req.repo.readme, "repo.readme", existing?.uid);
      const mayUpdate = await updateRightCheck(context);
      return withReadme(await ctx.store.repos.upsert(req.parentId, fields, ctx.now(), mayUpdate));
    },

    async updateRepo(req) {
      requireValid(checkUidp("id", req.id));
      const fields = v1RepoFields(req, "");
      await keepReadme(req.readme, "readme", req.id);
      return withReadme(await ctx.store.repos.update(req.id, fields, ctx.now()));
    },

    async deleteRepo(req) {
      requireValid(checkUidp("id", req.id));
      await ctx.store.repos.delete(req.id);
      return {};
    },

    async getRepoCountBySource(req) {
      requireValid(checkUidp("id", req.id));
      // A repo counts when its sync configuration copies from `id`. Trellis refuses every
      // sync configuration (it mirrors nothing), so once the repo is known the count is 0.
      if (!(await ctx.store.repos.get(req.id))) throw notFound("repo", req.id);
      return { count: 0n };
    },

    async createTag(req) {
      requireValid(checkUidp("repo_id", req.repoId));
      if (!req.tag) throw invalidField("tag", "is required");
      return tagToV1(await ctx.store.tags.upsert(req.repoId, tagFields(req.tag), ctx.now()));
    },

    async updateTag(req) {
      requireValid(checkUidp("id", req.id));
      return tagToV1(await ctx.store.tags.replace(req.id, tagFields(req, ""), ctx.now()));
    },

    async deleteTag(req) {
      requireValid(checkUidp("id", req.id));
      await ctx.store.tags.delete(req.id);
      return {};
    },

    async listTags(req, context) {
      const violations = collect(checkOptionalUidp("id", req.id), req.digest !== "" ? checkDigest("digest", req.digest) : undefined);
      if (violations.length > 0) throw invalidArgument(violations);
      const uidp = toUidpFilter(req.uidp);
      const rows = await ctx.store.tags.listAll(
        {
          uidp: req.id ? { ...uidp, ids: [...(uidp.ids ?? []), req.id] } : uidp,
          name: req.name || undefined,
          digest: req.digest || undefined,
          updatedSince: req.updatedSince ? Number(timestampMs(req.updatedSince)) : undefined,
          include: includedClasses(req),
          within: visibleScopes(context),
        },
        V1_LIST_MAX,
      );
      refuseOverV1Max(rows, "tags", "page with /registry/v2beta1/tags");
      return { items: rows.map(tagToV1) };
    },

    async getRepoTagsSummary(req) {
      requireValid(checkUidp("repo_id", req.repoId));
      const s = await ctx.store.tags.summary(req.repoId, includedClasses(req));
      return create(RepoTagsSummarySchema, {
        id: req.repoId,
        tagCount: BigInt(s.tagCount),
        lastUpdated: s.lastUpdated !== undefined ? timestampFromMs(s.lastUpdated) : undefined,
        latestTag: s.latestTag ? tagToV1(s.latestTag) : undefined,
        latestVersion: s.latestVersion,
      });
    },

    async listTagHistory(req) {
      requireValid(checkUidp("parent_id", req.parentId));
      const start = req.start ? Number(timestampMs(req.start)) : undefined;
      const end = req.end ? Number(timestampMs(req.end)) : undefined;
      if (start !== undefined && end !== undefined && end <= start) throw invalidField("end", "must be after start");
      const moves = await ctx.store.tags.history(req.parentId, { start, end }, V1_LIST_MAX);
      refuseOverV1Max(moves, "moves of the tag", "set a later start or an earlier end");
      return { items: moves.map((m) => create(TagHistorySchema, { updateTimestamp: timestampFromMs(m.moveTime), digest: m.digest })) };
    },

    async listEolTags(req, context) {
      requireValid(req.name !== "" ? checkTagName("name", req.name) : undefined);
      if (req.pageSize < 0n) throw invalidField("page_size", "must not be negative");
      const filter = {
        uidp: toUidpFilter(req.uidp),
        name: req.name || undefined,
        // v1 EolTagFilter has no exclude_referrers: referrer tags name attestations, not images.
        include: includedClasses({ excludeReferrers: true, excludeDates: req.excludeDates, excludeEpochs: req.excludeEpochs }),
        within: visibleScopes(context),
      };
      const page = await listPage(
        { pageSize: req.pageSize > 1000n ? 1000 : Number(req.pageSize), pageToken: req.pageToken, orderBy: "", skip: 0 },
        {
          orders: { uid: "uid" },
          defaultOrder: { key: "uid", desc: false },
          binding: pageBinding(context, EolTagFilterSchema, req),
          fetch: (q) => ctx.store.eolTags.list(filter, q.after?.uid, q.limit),
          // EolTagList has no total_count.
          count: async () => 0,
          cursor: (row) => ({ value: row.tagUid, uid: row.tagUid }),
        },
        ctx.pageTokens,
        ctx.now(),
      );
      return { items: page.items.map(eolTagToV1), nextPageToken: page.nextPageToken };
    },

    async createDeployment(req) {
      requireValid(checkUidp("parent_id", req.parentId));
      return deploymentToV1(await ctx.store.repoDeployments.create(req.parentId, checkCharts(req.charts), ctx.now()));
    },

    async updateDeployment(req) {
      requireValid(checkUidp("repo_id", req.repoId));
      return deploymentToV1(await ctx.store.repoDeployments.replace(req.repoId, checkCharts(req.charts), ctx.now()));
    },

    async getDeployment(req) {
      requireValid(checkUidp("repo_id", req.repoId));
      return deploymentToV1(await ctx.store.repoDeployments.get(req.repoId));
    },

    async getRegistrySettings(req) {
      requireValid(checkRegistryId("registry_id", req.registryId));
      return create(RegistrySettingsSchema, { registryId: req.registryId, ...(await ctx.store.registrySettings.get(req.registryId)) });
    },

    async updateRegistrySettings(req) {
      requireValid(checkRegistryId("registry_id", req.registryId));
      const stored = await ctx.store.registrySettings.put(req.registryId, { uniqueTags: req.uniqueTags, eolGracePeriod: req.eolGracePeriod }, ctx.now());
      return create(RegistrySettingsSchema, { registryId: req.registryId, ...stored });
    },
  };
}

function eolTagToV1(row: EolTagRecord) {
  return create(EolTagSchema, {
    id: row.tagUid,
    name: row.tagName,
    mainPackageName: row.mainPackageName,
    tagStatus: row.tagStatus,
    graceStatus: row.graceStatus,
    gracePeriodExpiryDate: row.gracePeriodExpiry !== undefined ? timestampFromMs(row.gracePeriodExpiry) : undefined,
    // Stored as the PackageVersion's proto JSON, validated when imported.
    mainPackageVersion: row.mainPackageVersion !== undefined ? fromJson(PackageVersionSchema, JSON.parse(row.mainPackageVersion) as JsonValue) : undefined,
  });
}

/** The v1 lists are unpaged; past V1_LIST_MAX matches they ask for a narrower request. */
function refuseOverV1Max(rows: readonly unknown[], what: string, instead: string): void {
  if (rows.length > V1_LIST_MAX) {
    throw failedPrecondition({
      type: "TOO_MANY_RESULTS",
      description: `more than ${V1_LIST_MAX} ${what} match; narrow the filter or ${instead}`,
    });
  }
}
