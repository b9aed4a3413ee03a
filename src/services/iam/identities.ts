/**
 * chainguard.platform.iam.v2beta1.IdentitiesService: identities that tokens can assume.
 *
 * Handlers validate, call the repository (src/store/identities.ts), convert. Decisions where
 * the published surface is silent:
 * - `parent` is an existing group's exact UIDP (malformed: INVALID_ARGUMENT `parent`;
 *   missing: NOT_FOUND). uid = parent + "/" + 16 hex.
 * - `name` follows the group name rules (3–63 characters of `^[a-z0-9 ._-]{1,}$`);
 *   `description` the description rules; `company` is free text of at most 512 characters.
 * - Exactly one member of `relationship` is set, and `service_principal` is not UNSPECIFIED;
 *   otherwise INVALID_ARGUMENT on `relationship`.
 * - claim_match (claim-match.ts): one of issuer/issuer_pattern and one of
 *   subject/subject_pattern are required (violations on `claim_match.issuer` /
 *   `claim_match.subject`); an exact issuer is an https URL (http only on loopback hosts); every
 *   pattern is RE2, compiled with re2js and matched against the whole value. An empty member of
 *   an optional pair (audience, arn, user_id) counts as unset.
 * - static_keys: issuer, subject and issuer_keys are required; issuer_keys is a JWKS
 *   (`{"keys":[…]}`, at least one key, each with a `kty`, none with private or symmetric key
 *   material, at most 64 KiB); expiration_time defaults to now + 365 days and must be in the
 *   future and at most 365 days away; at most one audience. The static-keys issuer is only
 *   compared with the token's `iss` (never fetched), so it need not be a URL.
 * - aws_identity: aws_account is exactly 12 digits; arn/arn_pattern and user_id/user_id_pattern
 *   are optional, patterns RE2.
 * - email, email_unverified and last_seen_time are output only: ignored on create and update;
 *   login and the token exchange set them (the store's `touchLastSeen`).
 * - Update: mutable top-level fields are name, description, company, claim_match,
 *   static_keys, aws_identity and service_principal. A relationship path replaces the
 *   relationship as a whole with the given member (validated as on create); naming the current
 *   kind without giving it (which would leave none) is INVALID_ARGUMENT `relationship`. A REST
 *   mask inferred from the body (`claim_match.issuer`, …) counts as its top-level field, so a
 *   REST body must carry the whole relationship.
 * - Anti-escalation (src/auth/grant-guard.ts): outside the operator, changing the
 *   relationship (how the identity is assumed: claim_match, static_keys, aws_identity,
 *   service_principal) to a different one, or deleting the identity, needs every capability
 *   its bindings grant, held at the identity's group; otherwise PERMISSION_DENIED with reason
 *   PRIVILEGE_ESCALATION. name, description and company are not guarded.
 * - Delete: NOT_FOUND when missing; the identity's role bindings go in the same transaction,
 *   unless one is its organization's last owner binding (FAILED_PRECONDITION LAST_OWNER).
 * - List filters: `uidp`, exact `name`, `relationship_type` (UNSPECIFIED = all). Orders: `uid`
 *   (default), `name`, `create_time`/`created_at`, `update_time`/`updated_at`.
 * - LookupIdentity: issuer and subject are required (INVALID_ARGUMENT otherwise); the answer
 *   is `userIdentityUid(issuer, subject)` (src/store/identities.ts), the very function user
 *   sign-in uses to create the identity, so the uid is the existing one or the one it will
 *   get. Nothing is read or written: any signed-in caller may compute it.
 * - UpdateIdentityMetadata changes the caller's own identity, taken from the token (the
 *   request carries no uid). Mutable: company (the Identity's company column) and the
 *   profile fields updates_opt_in, product, job_title, utm_*, latest_form_submit_url,
 *   latest_internal_referring_url, hubspot_utk, self_serve; uid, name, given_name and
 *   family_name are output only (a mask naming them is INVALID_ARGUMENT). Without a mask the
 *   non-default fields change, over REST too (no mask inference for `body: "*"`, as published,
 *   docs/published-api.md "Update masks"). Text fields hold at
 *   most 512 characters (URLs 2048). The answer's name is the identity's name; Trellis
 *   stores no given/family name, so those are empty. An operator token names no stored
 *   identity: FAILED_PRECONDITION (type NO_CALLER_IDENTITY), because the request is well
 *   formed and the caller authenticated and allowed, but the system is not in the state the
 *   method needs (a stored identity behind the token); retrying with the same token cannot
 *   succeed. A token whose identity was deleted since is NOT_FOUND on that identity.
 */
import { timestampMs } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  type Identity,
  type Identity_AWSIdentity,
  Identity_AWSIdentitySchema,
  Identity_ClaimMatchSchema,
  type Identity_StaticKeys,
  Identity_StaticKeysSchema,
  type IdentitiesService,
  IdentityMetadataSchema,
  IdentitySchema,
  ListIdentitiesRequestSchema,
  RelationshipType,
  ServicePrincipal,
} from "../../../gen/chainguard/platform/iam/v2beta1/identities_pb.js";
import { type FieldViolation, failedPrecondition, invalidArgument, invalidField, notFound } from "../../errors/api-error.js";
import { resolveNestedUpdatePaths, resolveUpdatePaths } from "../../fieldmask/update-mask.js";
import { listPage } from "../../pagination/page.js";
import type { IdentityChanges, RelationshipKind } from "../../store/identities.js";
import { IDENTITY_ORDERS, userIdentityUid } from "../../store/identities.js";
import { callerOf } from "../../auth/caller.js";
import type { ServiceContext } from "../context.js";
import { pageBinding, toUidpFilter } from "../list-request.js";
import { checkDescription, checkName, checkUidp, collect, requireValid } from "../validate.js";
import { checkClaimMatch, checkStringMatch, checkValue } from "../../auth/claim-match.js";
import { identityMetadataToProto, identityToProto, KIND_OF_TYPE, relationshipFromProto, STATIC_KEYS_MAX_LIFETIME_MS } from "./convert-identities.js";
import { escalationGuard } from "../../auth/grant-guard.js";
import { visibleScopes } from "../../auth/visible-scopes.js";

/** The members of the `relationship` oneof, by proto name (equal to the store's kinds). */
const RELATIONSHIP_FIELDS = ["claim_match", "static_keys", "aws_identity", "service_principal"] as const satisfies readonly RelationshipKind[];
const MUTABLE = ["name", "description", "company", ...RELATIONSHIP_FIELDS];
/** Explicit masks may name sub-fields of the relationship messages (REST infers them); they count as the whole member. */
const NESTED_MASK_RULES = {
  mutable: MUTABLE,
  nested: {
    claim_match: Identity_ClaimMatchSchema.fields.map((f) => f.name),
    static_keys: Identity_StaticKeysSchema.fields.map((f) => f.name),
    aws_identity: Identity_AWSIdentitySchema.fields.map((f) => f.name),
  },
};

const MAX_COMPANY = 512;
/** IdentityMetadata fields the caller may set on its own identity (module comment). */
const METADATA_MUTABLE = IdentityMetadataSchema.fields.map((f) => f.name).filter((name) => !["uid", "name", "given_name", "family_name"].includes(name));
const METADATA_TEXT_MAX = MAX_COMPANY;
const METADATA_URL_MAX = 2048;
const MAX_JWKS = 64 * 1024;
/** JWK members that carry private or symmetric key material (RFC 7518 §6). */
const PRIVATE_JWK_MEMBERS = ["d", "p", "q", "dp", "dq", "qi", "oth", "k"];
const AWS_ACCOUNT = /^[0-9]{12}$/;
const EXACTLY_ONE = {
  field: "relationship",
  description: "exactly one of claim_match, static_keys, aws_identity or service_principal (not UNSPECIFIED) is required",
};

export function createIdentitiesService(ctx: ServiceContext): Partial<ServiceImpl<typeof IdentitiesService>> {
  const repo = ctx.store.identities;

  return {
    async getIdentity(req) {
      requireValid(checkUidp("uid", req.uid));
      const row = await repo.get(req.uid);
      if (!row) throw notFound("identity", req.uid);
      return identityToProto(row);
    },

    async createIdentity(req) {
      const identity = req.identity;
      const now = ctx.now();
      const violations = collect(
        checkUidp("parent", req.parent),
        ...(identity
          ? [
              checkName("name", identity.name),
              checkDescription("description", identity.description),
              checkCompany(identity.company),
              ...relationshipViolations(identity.relationship, now),
            ]
          : [{ field: "identity", description: "is required" }]),
      );
      if (violations.length > 0 || !identity) throw invalidArgument(violations);
      const row = await repo.create(
        {
          parentUid: req.parent,
          name: identity.name,
          description: identity.description,
          company: identity.company,
          relationship: relationshipFromProto(identity.relationship, now),
        },
        now,
      );
      return identityToProto(row);
    },

    async updateIdentity(req, context) {
      const identity = req.identity;
      if (!identity) throw invalidField("identity", "is required");
      requireValid(checkUidp("uid", identity.uid));
      const now = ctx.now();
      const paths =
        req.updateMask && req.updateMask.paths.length > 0
          ? [...new Set(resolveNestedUpdatePaths(IdentitySchema, identity, req.updateMask, NESTED_MASK_RULES).map((p) => p.split(".")[0] ?? p))]
          : resolveUpdatePaths(IdentitySchema, identity, undefined, { mutable: MUTABLE });
      const changes: { -readonly [K in keyof IdentityChanges]: IdentityChanges[K] } = {};
      const violations: (FieldViolation | undefined)[] = [];
      for (const path of paths) {
        switch (path) {
          case "name":
            violations.push(checkName("name", identity.name));
            changes.name = identity.name;
            break;
          case "description":
            violations.push(checkDescription("description", identity.description));
            changes.description = identity.description;
            break;
          case "company":
            violations.push(checkCompany(identity.company));
            changes.company = identity.company;
            break;
        }
      }
      // The relationship fields named by the mask; the given member replaces the relationship
      // when it is one of them.
      const named = new Set(RELATIONSHIP_FIELDS.filter((f) => paths.includes(f)));
      const given = givenKind(identity);
      const replaces = given !== undefined && named.has(given);
      if (replaces) violations.push(...relationshipViolations(identity.relationship, now));
      const found = collect(...violations);
      if (found.length > 0) throw invalidArgument(found);
      if (replaces) changes.relationship = relationshipFromProto(identity.relationship, now);
      const guard = escalationGuard(context);
      const row = await repo.update(
        identity.uid,
        (current, view) => {
          const kind = current.relationship?.kind;
          if (changes.relationship === undefined && kind !== undefined && named.has(kind)) throw invalidArgument([EXACTLY_ONE]);
          // A new relationship decides who may assume the identity, and so who wields its
          // bindings: only a caller holding all of that may change it. Restating the same one
          // (a REST client writing back what it read) changes nothing and passes.
          if (changes.relationship !== undefined && JSON.stringify(changes.relationship) !== JSON.stringify(current.relationship)) {
            guard.identity(view, current.uid, current.parentUid);
          }
          return changes;
        },
        now,
      );
      return identityToProto(row);
    },

    async lookupIdentity(req) {
      const violations = collect(checkValue("issuer", req.issuer), checkValue("subject", req.subject));
      if (violations.length > 0) throw invalidArgument(violations);
      return { uid: userIdentityUid(req.issuer, req.subject) };
    },

    async updateIdentityMetadata(req, context) {
      const metadata = req.identityMetadata;
      if (!metadata) throw invalidField("identity_metadata", "is required");
      const paths = resolveUpdatePaths(IdentityMetadataSchema, metadata, req.updateMask, { mutable: METADATA_MUTABLE });
      const values = metadata as unknown as Record<string, unknown>;
      let company: string | undefined;
      const fields: Record<string, string | boolean> = {};
      const violations: (FieldViolation | undefined)[] = [];
      for (const path of paths) {
        const field = IdentityMetadataSchema.fields.find((f) => f.name === path);
        const value = field ? values[field.localName] : undefined;
        if (typeof value === "string") {
          const max = path.endsWith("_url") ? METADATA_URL_MAX : METADATA_TEXT_MAX;
          if ([...value].length > max) violations.push({ field: `identity_metadata.${path}`, description: `must be at most ${max} characters` });
        }
        if (path === "company") company = value as string;
        else if (typeof value === "string" || typeof value === "boolean") fields[path] = value;
      }
      const found = collect(...violations);
      if (found.length > 0) throw invalidArgument(found);
      const caller = callerOf(context);
      if (!caller || caller.operator) {
        throw failedPrecondition({
          type: "NO_CALLER_IDENTITY",
          description: "the caller's token names no stored identity (an operator token); identity metadata belongs to a signed-in identity",
        });
      }
      const row = await repo.updateMetadata(caller.subject, { company, metadata: fields }, ctx.now());
      return identityMetadataToProto(row);
    },

    async deleteIdentity(req, context) {
      requireValid(checkUidp("uid", req.uid));
      const guard = escalationGuard(context);
      await repo.delete(req.uid, (view, current) => guard.identity(view, current.uid, current.parentUid));
      return {};
    },

    async listIdentities(req, context) {
      if (RelationshipType[req.relationshipType] === undefined) {
        throw invalidField("relationship_type", "must be a RelationshipType value");
      }
      const filter = {
        uidp: toUidpFilter(req.uidp),
        name: req.name === "" ? undefined : req.name,
        kind: KIND_OF_TYPE[req.relationshipType],
        within: visibleScopes(context),
      };
      const page = await listPage(
        req,
        {
          orders: IDENTITY_ORDERS.spellings,
          defaultOrder: { key: "uid", desc: false },
          binding: pageBinding(context, ListIdentitiesRequestSchema, req),
          fetch: (q) => repo.list(filter, q),
          count: () => repo.count(filter),
          cursor: (row, order) => ({ value: IDENTITY_ORDERS.value(row, order), uid: row.uid }),
        },
        ctx.pageTokens,
        ctx.now(),
      );
      return {
        identities: page.items.map(identityToProto),
        nextPageToken: page.nextPageToken,
        totalCount: page.totalCount,
        skipped: page.skipped,
      };
    },
  };
}

/** The relationship member set on the wire, by proto name. */
function givenKind(identity: Identity): RelationshipKind | undefined {
  switch (identity.relationship.case) {
    case "claimMatch":
      return "claim_match";
    case "staticKeys":
      return "static_keys";
    case "awsIdentity":
      return "aws_identity";
    case "servicePrincipal":
      return "service_principal";
    case undefined:
      return undefined;
  }
}

/** Everything wrong with the relationship given on the wire (module comment). */
function relationshipViolations(relationship: Identity["relationship"], now: number): FieldViolation[] {
  switch (relationship.case) {
    case undefined:
      return [EXACTLY_ONE];
    case "claimMatch":
      return checkClaimMatch(relationship.value);
    case "staticKeys":
      return checkStaticKeys(relationship.value, now);
    case "awsIdentity":
      return checkAwsIdentity(relationship.value);
    case "servicePrincipal":
      if (relationship.value === ServicePrincipal.UNSPECIFIED) return [EXACTLY_ONE];
      return ServicePrincipal[relationship.value] === undefined ? [{ field: "service_principal", description: "must be a ServicePrincipal value" }] : [];
  }
}

function checkStaticKeys(sk: Identity_StaticKeys, now: number): FieldViolation[] {
  const expiration = sk.expirationTime ? timestampMs(sk.expirationTime) : undefined;
  return collect(
    checkValue("static_keys.issuer", sk.issuer),
    checkValue("static_keys.subject", sk.subject),
    checkJwks("static_keys.issuer_keys", sk.issuerKeys),
    expiration !== undefined && expiration <= now ? { field: "static_keys.expiration_time", description: "must be in the future" } : undefined,
    expiration !== undefined && expiration > now + STATIC_KEYS_MAX_LIFETIME_MS
      ? { field: "static_keys.expiration_time", description: "must be at most 365 days from now" }
      : undefined,
    sk.audiences.length > 1 ? { field: "static_keys.audiences", description: "must have at most one entry" } : undefined,
    ...sk.audiences.map((a, i) => checkValue(`static_keys.audiences[${i}]`, a)),
  );
}

/** A JSON Web Key Set of public keys (module comment). */
function checkJwks(field: string, value: string): FieldViolation | undefined {
  if (value === "") return { field, description: "is required" };
  if (value.length > MAX_JWKS) return { field, description: `must be at most ${MAX_JWKS} characters` };
  let keys: unknown;
  try {
    keys = (JSON.parse(value) as { keys?: unknown } | null)?.keys;
  } catch {
    keys = undefined;
  }
  if (!Array.isArray(keys) || keys.length === 0) {
    return { field, description: 'must be a JSON Web Key Set: {"keys":[…]} with at least one key' };
  }
  for (const [i, key] of keys.entries()) {
    if (typeof key !== "object" || key === null || Array.isArray(key) || typeof (key as { kty?: unknown }).kty !== "string") {
      return { field, description: `keys[${i}] must be a JSON Web Key object with a "kty"` };
    }
    if (PRIVATE_JWK_MEMBERS.some((m) => Object.hasOwn(key, m))) {
      return { field, description: `keys[${i}] must be a public key, without private or symmetric key material` };
    }
  }
  return undefined;
}

function checkAwsIdentity(aws: Identity_AWSIdentity): FieldViolation[] {
  return collect(
    AWS_ACCOUNT.test(aws.awsAccount) ? undefined : { field: "aws_identity.aws_account", description: "must be exactly 12 digits" },
    checkStringMatch(aws.awsArn, "aws_identity", "arn", false),
    checkStringMatch(aws.awsUserId, "aws_identity", "user_id", false),
  );
}

function checkCompany(company: string): FieldViolation | undefined {
  return company.length > MAX_COMPANY ? { field: "company", description: `must be at most ${MAX_COMPANY} characters` } : undefined;
}
