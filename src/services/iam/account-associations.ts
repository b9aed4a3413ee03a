/**
 * chainguard.platform.iam.v2beta1.AccountAssociationsService: the cloud accounts a group
 * trusts (one association per group; its uid is the group's uid).
 *
 * Handlers validate, call the repository (src/store/account-associations.ts), convert.
 * Decisions where the published surface is silent:
 * - `parent` is an existing group's exact UIDP; a second association for it is ALREADY_EXISTS.
 * - `name` follows the shared name rule (3–63 characters of `^[a-z0-9 ._-]{1,}$`).
 * - No provider block is required; each block given is validated: `amazon.account` is 12
 *   digits; `google.project_id` is required (printable, no whitespace) and
 *   `google.project_number` is required digits; `azure.tenant_id` is a UUID and
 *   `azure.client_ids` a non-empty map of names to UUIDs; `chainguard.service_bindings` a
 *   non-empty map whose values are UIDPs; each GitHub installation has `installation_id` > 0.
 * - Update mask paths: `name`, `description` and the provider blocks (`amazon`, `google`,
 *   `chainguard`, `azure`, `github`). A block path replaces the block with the one given, or
 *   removes it when the body has none. The REST door's leaf paths (`google.project_id`, …)
 *   change those fields of the stored block (creating it if absent); without a mask a block in
 *   the body contributes the fields it sets, so gRPC and REST agree. The resulting blocks are
 *   validated as on create.
 * - Delete is idempotent (docs/published-api.md "Creates and deletes"); Get of a missing association is NOT_FOUND.
 * - List filters (`uidp`, exact `name`) apply to the association uid, i.e. the group's uid:
 *   `descendants_of` P finds the associations of P's strict descendants, not P's own (use
 *   `ids` or Get for that). Orders: `group` (the default, ascending) and `uid` (both the uid),
 *   `name`, `create_time`/`created_at`.
 * - CheckAccountAssociation: UNIMPLEMENTED with `needs`. "Set up well enough to be used"
 *   can only be learned from the cloud provider (assume the AWS role, impersonate the Google
 *   service account, get an Azure token for the tenant); the stored blocks only say what the
 *   customer typed. Answering READY from them would be a guess, so the method says what it
 *   would need instead.
 */
import type { ServiceImpl } from "@connectrpc/connect";
import {
  AccountAssociationSchema,
  type AccountAssociationsService,
  ListAccountAssociationsRequestSchema,
} from "../../../gen/chainguard/platform/iam/v2beta1/account_associations_pb.js";
import { type FieldViolation, invalidArgument, invalidField, notFound, unimplemented } from "../../errors/api-error.js";
import { resolveNestedUpdatePaths } from "../../fieldmask/update-mask.js";
import { listPage } from "../../pagination/page.js";
import { type AccountAssociationChanges, type AccountProviders, ACCOUNT_ASSOCIATION_ORDERS } from "../../store/account-associations.js";
import { isUidp } from "../../store/uidp.js";
import type { ServiceContext } from "../context.js";
import { pageBinding, toUidpFilter } from "../list-request.js";
import { checkDescription, checkName, checkUidp, collect, requireValid } from "../validate.js";
import { accountAssociationToProto, EMPTY_PROVIDERS, providersFromProto } from "./convert-account-associations.js";
import { visibleScopes } from "../../auth/visible-scopes.js";

/** Provider blocks and the fields of each a mask may name. */
const PROVIDER_FIELDS = {
  amazon: ["account"],
  google: ["project_id", "project_number"],
  chainguard: ["service_bindings"],
  azure: ["tenant_id", "client_ids"],
  github: ["app_installations"],
} as const;
type Provider = keyof typeof PROVIDER_FIELDS;
const PROVIDERS = Object.keys(PROVIDER_FIELDS) as Provider[];

const MASK_RULES = { mutable: ["name", "description", ...PROVIDERS], nested: PROVIDER_FIELDS };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const TOKEN = /^[^\s\p{Cc}]{1,256}$/u;

export function createAccountAssociationsService(ctx: ServiceContext): Partial<ServiceImpl<typeof AccountAssociationsService>> {
  const repo = ctx.store.accountAssociations;

  return {
    async checkAccountAssociation() {
      throw unimplemented(
        "chainguard.platform.iam.v2beta1.AccountAssociationsService/CheckAccountAssociation",
        "a call to the cloud provider (AWS, Google Cloud or Azure) with the association's credentials",
      );
    },

    async getAccountAssociation(req) {
      requireValid(checkUidp("uid", req.uid));
      const row = await repo.get(req.uid);
      if (!row) throw notFound("account association", req.uid);
      return accountAssociationToProto(row);
    },

    async createAccountAssociation(req) {
      const aa = req.accountAssociation;
      const providers = aa ? providersFromProto(aa) : {};
      const violations = collect(
        checkUidp("parent", req.parent),
        aa ? checkName("name", aa.name) : { field: "name", description: "name is required" },
        aa ? checkDescription("description", aa.description) : undefined,
        ...providerViolations(providers, PROVIDERS),
      );
      if (violations.length > 0 || !aa) throw invalidArgument(violations);
      const row = await repo.create({ groupUid: req.parent, name: aa.name, description: aa.description, providers }, ctx.now());
      return accountAssociationToProto(row);
    },

    async updateAccountAssociation(req) {
      const aa = req.accountAssociation;
      if (!aa) throw invalidField("account_association", "is required");
      requireValid(checkUidp("uid", aa.uid));
      const paths = resolveNestedUpdatePaths(AccountAssociationSchema, aa, req.updateMask, MASK_RULES);
      const changes: { -readonly [K in keyof AccountAssociationChanges]: AccountAssociationChanges[K] } = {};
      const violations: (FieldViolation | undefined)[] = [];
      if (paths.includes("name")) {
        violations.push(checkName("name", aa.name));
        changes.name = aa.name;
      }
      if (paths.includes("description")) {
        violations.push(checkDescription("description", aa.description));
        changes.description = aa.description;
      }
      const found = collect(...violations);
      if (found.length > 0) throw invalidArgument(found);
      const touched = PROVIDERS.filter((p) => paths.some((path) => path === p || path.startsWith(`${p}.`)));
      const row = await repo.update(
        aa.uid,
        (current) => {
          if (touched.length === 0) return changes;
          const providers = mergeProviders(current.providers, providersFromProto(aa), paths);
          const bad = providerViolations(providers, touched);
          if (bad.length > 0) throw invalidArgument(bad);
          return { ...changes, providers };
        },
        ctx.now(),
      );
      return accountAssociationToProto(row);
    },

    async deleteAccountAssociation(req) {
      requireValid(checkUidp("uid", req.uid));
      await repo.delete(req.uid);
      return {};
    },

    async listAccountAssociations(req, context) {
      const filter = { uidp: toUidpFilter(req.uidp), name: req.name === "" ? undefined : req.name, within: visibleScopes(context) };
      const page = await listPage(
        req,
        {
          orders: ACCOUNT_ASSOCIATION_ORDERS.spellings,
          defaultOrder: { key: "uid", desc: false },
          binding: pageBinding(context, ListAccountAssociationsRequestSchema, req),
          fetch: (q) => repo.list(filter, q),
          count: () => repo.count(filter),
          cursor: (row, order) => ({ value: ACCOUNT_ASSOCIATION_ORDERS.value(row, order), uid: row.uid }),
        },
        ctx.pageTokens,
        ctx.now(),
      );
      return {
        accountAssociations: page.items.map(accountAssociationToProto),
        nextPageToken: page.nextPageToken,
        totalCount: page.totalCount,
        skipped: page.skipped,
      };
    },
  };
}

/**
 * The stored blocks with the masked ones applied: a block path replaces (or removes) the
 * block, a `<block>.<field>` path sets that field of the stored block (or of an empty one).
 */
function mergeProviders(current: AccountProviders, given: AccountProviders, paths: readonly string[]): AccountProviders {
  const next: Record<string, unknown> = { ...current };
  for (const provider of PROVIDERS) {
    if (paths.includes(provider)) {
      next[provider] = given[provider];
      continue;
    }
    const fields = PROVIDER_FIELDS[provider].filter((f) => paths.includes(`${provider}.${f}`));
    if (fields.length === 0) continue;
    const block: Record<string, unknown> = { ...(current[provider] ?? EMPTY_PROVIDERS[provider]) };
    const source = (given[provider] ?? EMPTY_PROVIDERS[provider]) as Record<string, unknown>;
    for (const f of fields) {
      const key = f.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
      block[key] = source[key];
    }
    next[provider] = block;
  }
  for (const provider of PROVIDERS) if (next[provider] === undefined) delete next[provider];
  return next as AccountProviders;
}

/** Validation of the given provider blocks (those in `which` that are present). */
function providerViolations(p: AccountProviders, which: readonly Provider[]): FieldViolation[] {
  const out: (FieldViolation | undefined)[] = [];
  const has = (name: Provider) => which.includes(name) && p[name] !== undefined;
  if (has("amazon") && p.amazon) {
    out.push(/^\d{12}$/.test(p.amazon.account) ? undefined : { field: "amazon.account", description: "must be a 12-digit AWS account id" });
  }
  if (has("google") && p.google) {
    out.push(
      TOKEN.test(p.google.projectId) ? undefined : { field: "google.project_id", description: "is required (at most 256 characters, no whitespace)" },
      /^\d{1,20}$/.test(p.google.projectNumber) ? undefined : { field: "google.project_number", description: "is required and must be digits" },
    );
  }
  if (has("azure") && p.azure) {
    out.push(
      UUID.test(p.azure.tenantId) ? undefined : { field: "azure.tenant_id", description: "must be a UUID" },
      mapViolation("azure.client_ids", p.azure.clientIds, (v) => UUID.test(v), "a UUID client id"),
    );
  }
  if (has("chainguard") && p.chainguard) {
    out.push(mapViolation("chainguard.service_bindings", p.chainguard.serviceBindings, isUidp, "an identity UIDP"));
  }
  if (has("github") && p.github) {
    for (const [key, list] of Object.entries(p.github.appInstallations)) {
      if (list.some((i) => BigInt(i.installationId) <= 0n)) {
        out.push({ field: "github.app_installations", description: `installation_id must be positive (entry ${key})` });
      }
    }
  }
  return collect(...out);
}

function mapViolation(field: string, map: Readonly<Record<string, string>>, valid: (value: string) => boolean, what: string): FieldViolation | undefined {
  const entries = Object.entries(map);
  if (entries.length === 0) return { field, description: "must have at least one entry" };
  const bad = entries.find(([k, v]) => k === "" || !valid(v));
  return bad ? { field, description: `entry ${JSON.stringify(bad[0])} must have a non-empty key and ${what} as value` } : undefined;
}
