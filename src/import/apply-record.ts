/**
 * One import record → store writes, through the import writer's record scope (see
 * run-import.ts for the batching; the store's writer holds the transaction and the savepoints). Native records have the shape of the API's create requests,
 * so they are parsed with the generated schemas and validated by the same rules as the API:
 *
 *   {"parent": "<group uid>", "repo": {Repo JSON}}
 *   {"parent": "<repo uid>", "tag": {Tag JSON}}
 *   {"parent": "<group uid>", "repo_name": "nginx", "tag": {Tag JSON}}
 *   {"parent": "<group uid>", "advisory": {Advisory JSON, events included}, "origin": "..."}
 *   {"parent": "<repo uid>", "readme": {RepoReadme JSON}}            (or repo_name, as a tag)
 *   {"parent": "<repo uid>", "eol_tag": {v1 EolTag JSON, by name}}    (or repo_name, as a tag)
 *
 * plus OSV documents (osv.ts). `parent` may be left out when `--group` is given (for a tag,
 * with repo_name). Unknown keys are rejected, and so is a record with a NUL (U+0000) in any string. Output-only fields of repos and tags (uid,
 * timestamps) are ignored; an advisory's timestamps are kept, as feeds carry them.
 */
import { fromJson, type JsonValue, toJson } from "@bufbuild/protobuf";
import { EolGracePeriodStatus, EolTagSchema, EolTagStatus, PackageVersionSchema } from "../../gen/chainguard/platform/registry/registry_v1_pb.js";
import { RepoReadmeSchema, RepoSchema } from "../../gen/chainguard/platform/registry/v2beta1/repos_pb.js";
import { TagSchema } from "../../gen/chainguard/platform/registry/v2beta1/tags_pb.js";
import { AdvisorySchema } from "../../gen/chainguard/platform/vulnerabilities/v2beta1/advisories_pb.js";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { type FieldViolation, invalidArgument, notFound } from "../errors/api-error.js";
import { checkReadme, checkTagName } from "../services/registry/validate.js";
import { repoFields } from "../services/registry/repos.js";
import { tagFields } from "../services/registry/tags.js";
import { nulInJson } from "../services/nul-text.js";
import { checkDescription, checkUidp, collect } from "../services/validate.js";
import { advisoryFields } from "../services/vulnerabilities/convert.js";
import type { AdvisoryFields } from "../store/advisories.js";
import type { ImportWrites } from "../store/engine.js";
import type { UpsertOutcome } from "../store/repos.js";
import { isOsvDocument, osvToAdvisories } from "./osv.js";

export interface ApplyOptions {
  /** Parent group for records without `parent` (and for OSV documents). */
  readonly group?: string;
  readonly now: number;
}

const KEYS: Readonly<Record<string, readonly string[]>> = {
  repo: ["parent", "repo"],
  tag: ["parent", "repo_name", "tag"],
  advisory: ["parent", "advisory", "origin"],
  readme: ["parent", "repo_name", "readme"],
  eol_tag: ["parent", "repo_name", "eol_tag"],
};

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function parentOf(record: Record<string, unknown>, options: ApplyOptions, field = "parent"): string {
  const parent = record.parent === undefined ? options.group : record.parent;
  if (typeof parent !== "string") throw invalidArgument([{ field, description: "is required (in the record or as --group)" }]);
  const v = checkUidp(field, parent);
  if (v) throw invalidArgument([v]);
  return parent;
}

/** Required advisory fields and event review states (UNSPECIFIED is not a valid state). */
function checkAdvisory(f: AdvisoryFields): void {
  const violations: (FieldViolation | undefined)[] = [
    f.advisoryId === "" ? { field: "advisory.advisory_id", description: "is required" } : undefined,
    f.artifactName === "" ? { field: "advisory.artifact_name", description: "is required" } : undefined,
    ...f.events.map((e, i) => (e.reviewState === 0 ? { field: `advisory.events[${i}].review_state`, description: "is required" } : undefined)),
  ];
  const found = collect(...violations);
  if (found.length > 0) throw invalidArgument(found);
}

/**
 * The repo a tag, README or end-of-life record belongs to: `parent` names it, or, with
 * `repo_name`, `parent` (or --group) names its group. @throws NOT_FOUND (no such repo).
 */
async function repoOf(writes: ImportWrites, value: Record<string, unknown>, options: ApplyOptions, kind: string): Promise<string> {
  if (value.repo_name !== undefined) {
    if (typeof value.repo_name !== "string") throw new Error("repo_name must be a string");
    const group = parentOf(value, options);
    const repoUid = await writes.findRepoUid(group, value.repo_name);
    if (repoUid === undefined) throw notFound("repo", `${group} ${value.repo_name}`);
    return repoUid;
  }
  if (value.parent === undefined) throw new Error(`a ${kind} record needs parent (a repo uid) or repo_name`);
  return parentOf(value, options);
}

/**
 * Writes one record and returns what happened to each resource it holds.
 * @throws ApiError or Error explaining why the record is rejected.
 */
export async function applyRecord(writes: ImportWrites, value: unknown, options: ApplyOptions): Promise<UpsertOutcome[]> {
  // The API's NUL rule (validate.ts checkNoNul) for the whole record at once, before anything
  // is written: a string PostgreSQL could not store is refused on every engine alike.
  const nul = nulInJson(value);
  if (nul.length > 0) throw invalidArgument(nul);
  if (isOsvDocument(value)) {
    if (options.group === undefined) throw new Error("OSV documents need --group UID (the group the advisories go under)");
    const group = parentOf({}, options, "--group");
    const outcomes: UpsertOutcome[] = [];
    for (const f of osvToAdvisories(value)) outcomes.push(await writes.upsertAdvisory(group, f, options.now));
    return outcomes;
  }
  if (!isObject(value)) throw new Error("a record must be a JSON object");
  const kind = Object.keys(KEYS).find((k) => k in value);
  if (kind === undefined) throw new Error('a record must hold "repo", "tag" or "advisory", or be an OSV document');
  const unknown = Object.keys(value).filter((k) => !KEYS[kind]?.includes(k));
  if (unknown.length > 0) throw new Error(`unknown key ${JSON.stringify(unknown[0])} in a ${kind} record`);

  switch (kind) {
    case "repo": {
      const fields = repoFields(fromJson(RepoSchema, value.repo as JsonValue));
      return [await writes.upsertRepo(parentOf(value, options), fields, options.now)];
    }
    case "tag": {
      const fields = tagFields(fromJson(TagSchema, value.tag as JsonValue));
      return [await writes.upsertTag(await repoOf(writes, value, options, "tag"), fields, options.now)];
    }
    case "readme": {
      const readme = fromJson(RepoReadmeSchema, value.readme as JsonValue);
      const v = checkReadme("readme.content", readme.content);
      if (v) throw invalidArgument([v]);
      return [await writes.putReadme(await repoOf(writes, value, options, "readme"), readme.content, options.now)];
    }
    case "eol_tag": {
      const eol = fromJson(EolTagSchema, value.eol_tag as JsonValue);
      const found = collect(
        checkTagName("eol_tag.name", eol.name),
        checkDescription("eol_tag.main_package_name", eol.mainPackageName),
        EolTagStatus[eol.tagStatus] === undefined ? { field: "eol_tag.tag_status", description: "is not a known EolTagStatus" } : undefined,
        EolGracePeriodStatus[eol.graceStatus] === undefined ? { field: "eol_tag.grace_status", description: "is not a known EolGracePeriodStatus" } : undefined,
      );
      if (found.length > 0) throw invalidArgument(found);
      const repoUid = await repoOf(writes, value, options, "eol_tag");
      const tagUid = await writes.findTagUid(repoUid, eol.name);
      if (tagUid === undefined) throw notFound("tag", `${repoUid} ${eol.name}`);
      return [
        await writes.upsertEolTag(
          tagUid,
          {
            mainPackageName: eol.mainPackageName,
            tagStatus: eol.tagStatus,
            graceStatus: eol.graceStatus,
            gracePeriodExpiry: eol.gracePeriodExpiryDate ? Number(timestampMs(eol.gracePeriodExpiryDate)) : undefined,
            mainPackageVersion: eol.mainPackageVersion ? JSON.stringify(toJson(PackageVersionSchema, eol.mainPackageVersion)) : undefined,
          },
          options.now,
        ),
      ];
    }
    default: {
      if (value.origin !== undefined && typeof value.origin !== "string") throw new Error("origin must be a string");
      const fields = advisoryFields(fromJson(AdvisorySchema, value.advisory as JsonValue), value.origin as string | undefined);
      checkAdvisory(fields);
      return [await writes.upsertAdvisory(parentOf(value, options), fields, options.now)];
    }
  }
}
