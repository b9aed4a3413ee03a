/**
 * chainguard.platform.registry.v2beta1.ReposService: image repos under a group.
 *
 * Handlers validate, call src/store/repos.ts, convert. `sync_config` (mirroring another
 * registry's repo) and `custom_overlay` (image assembly) need systems Trellis does not have:
 * setting them is INVALID_ARGUMENT rather than silently dropped. The README is its own
 * document (GetRepoReadme / UpdateRepoReadme, src/store/repo-readmes.ts), at most
 * README_MAX_BYTES of Markdown.
 */
import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  CatalogTier,
  ListReposRequestSchema,
  type Repo,
  RepoReadmeSchema,
  RepoSchema,
  type ReposService,
} from "../../../gen/chainguard/platform/registry/v2beta1/repos_pb.js";
import { type FieldViolation, invalidArgument, invalidField, notFound } from "../../errors/api-error.js";
import { resolveUpdatePaths } from "../../fieldmask/update-mask.js";
import { visibleScopes } from "../../auth/visible-scopes.js";
import { listPage } from "../../pagination/page.js";
import { type RepoChanges, type RepoFields, REPO_ORDERS } from "../../store/repos.js";
import type { ServiceContext } from "../context.js";
import { pageBinding, toUidpFilter } from "../list-request.js";
import { checkDescription, checkUidp, collect, requireValid } from "../validate.js";
import { repoToProto } from "./convert.js";
import { checkAlias, checkBundle, checkEach, checkReadme, checkRepoName, checkTagName } from "./validate.js";

const MUTABLE = ["name", "description", "catalog_tier", "bundles", "aliases", "active_tags", "sync_config", "custom_overlay"] as const;

const UNSUPPORTED = "is not supported by this server (no registry mirroring or image assembly)";

/**
 * Violations of one repo field, by proto name; also used by the importer and the v1 writes.
 * `at` is the path of the repo in the request ("repo." in a create, "" when the request is
 * the repo itself, as in v1 UpdateRepo).
 */
export function repoFieldViolations(repo: Repo, field: (typeof MUTABLE)[number], at = "repo."): FieldViolation[] {
  switch (field) {
    case "name":
      return collect(checkRepoName(`${at}name`, repo.name));
    case "description":
      return collect(checkDescription(`${at}description`, repo.description));
    case "catalog_tier":
      return CatalogTier[repo.catalogTier] === undefined ? [{ field: `${at}catalog_tier`, description: "is not a known CatalogTier" }] : [];
    case "bundles":
      return checkEach(`${at}bundles`, repo.bundles, checkBundle);
    case "aliases":
      return checkEach(`${at}aliases`, repo.aliases, checkAlias);
    case "active_tags":
      return checkEach(`${at}active_tags`, repo.activeTags, checkTagName);
    case "sync_config":
      return repo.syncConfig ? [{ field: `${at}sync_config`, description: UNSUPPORTED }] : [];
    case "custom_overlay":
      return repo.customOverlay ? [{ field: `${at}custom_overlay`, description: UNSUPPORTED }] : [];
  }
}

/** Every violation of a whole repo (create, import, v1 PUT). */
export function wholeRepoViolations(repo: Repo, at = "repo."): FieldViolation[] {
  return MUTABLE.flatMap((f) => repoFieldViolations(repo, f, at));
}

/** The store fields of a repo that passed wholeRepoViolations. */
export function toRepoFields(repo: Repo): RepoFields {
  return {
    name: repo.name,
    description: repo.description,
    catalogTier: repo.catalogTier,
    bundles: repo.bundles,
    aliases: repo.aliases,
    activeTags: repo.activeTags,
  };
}

/** Validates a whole repo for create/import and returns its store fields. @throws INVALID_ARGUMENT. */
export function repoFields(repo: Repo): RepoFields {
  const violations = wholeRepoViolations(repo);
  if (violations.length > 0) throw invalidArgument(violations);
  return toRepoFields(repo);
}

export function createReposService(ctx: ServiceContext): Partial<ServiceImpl<typeof ReposService>> {
  const store = ctx.store.repos;
  return {
    async getRepo(req) {
      requireValid(checkUidp("uid", req.uid));
      const row = await store.get(req.uid);
      if (!row) throw notFound("repo", req.uid);
      return repoToProto(row);
    },

    async createRepo(req) {
      requireValid(checkUidp("parent", req.parent));
      if (!req.repo) throw invalidField("repo", "is required");
      return repoToProto(await store.create(req.parent, repoFields(req.repo), ctx.now()));
    },

    async updateRepo(req) {
      const repo = req.repo;
      if (!repo) throw invalidField("repo", "is required");
      requireValid(checkUidp("repo.uid", repo.uid));
      const paths = resolveUpdatePaths(RepoSchema, repo, req.updateMask, { mutable: MUTABLE });
      const violations = paths.flatMap((p) => repoFieldViolations(repo, p as (typeof MUTABLE)[number]));
      if (violations.length > 0) throw invalidArgument(violations);
      const changes: { -readonly [K in keyof RepoChanges]: RepoChanges[K] } = {};
      for (const path of paths) {
        if (path === "name") changes.name = repo.name;
        if (path === "description") changes.description = repo.description;
        if (path === "catalog_tier") changes.catalogTier = repo.catalogTier;
        if (path === "bundles") changes.bundles = repo.bundles;
        if (path === "aliases") changes.aliases = repo.aliases;
        if (path === "active_tags") changes.activeTags = repo.activeTags;
      }
      return repoToProto(await store.update(repo.uid, changes, ctx.now()));
    },

    async deleteRepo(req) {
      requireValid(checkUidp("uid", req.uid));
      await store.delete(req.uid);
      return {};
    },

    async getRepoReadme(req) {
      requireValid(checkUidp("uid", req.uid));
      return create(RepoReadmeSchema, { uid: req.uid, content: await ctx.store.repoReadmes.get(req.uid) });
    },

    async updateRepoReadme(req) {
      const readme = req.repoReadme;
      if (!readme) throw invalidField("repo_readme", "is required");
      requireValid(checkUidp("repo_readme.uid", readme.uid));
      const paths = resolveUpdatePaths(RepoReadmeSchema, readme, req.updateMask, { mutable: ["content"] });
      if (!paths.includes("content")) {
        return create(RepoReadmeSchema, { uid: readme.uid, content: await ctx.store.repoReadmes.get(readme.uid) });
      }
      requireValid(checkReadme("repo_readme.content", readme.content));
      return create(RepoReadmeSchema, { uid: readme.uid, content: await ctx.store.repoReadmes.put(readme.uid, readme.content, ctx.now()) });
    },

    async listRepos(req, context) {
      const filter = { uidp: toUidpFilter(req.uidp), name: req.name, within: visibleScopes(context) };
      const page = await listPage(
        req,
        {
          orders: REPO_ORDERS.spellings,
          defaultOrder: { key: "uid", desc: false },
          binding: pageBinding(context, ListReposRequestSchema, req),
          fetch: (q) => store.list(filter, q),
          count: () => store.count(filter),
          cursor: (row, order) => ({ value: REPO_ORDERS.value(row, order), uid: row.uid }),
        },
        ctx.pageTokens,
        ctx.now(),
      );
      return {
        repos: page.items.map(repoToProto),
        nextPageToken: page.nextPageToken,
        totalCount: page.totalCount,
        skipped: page.skipped,
      };
    },
  };
}
