/**
 * How the registry's records (repos, tags, deployments, end-of-life facts) are laid out in
 * rows, the same on every engine: list fields as JSON text, a tag's generated class beside
 * its name, what counts as "unchanged" for an upsert, and the errors of a name taken. Each
 * engine's repository reads and writes its own tables through these, so that the layout and
 * the answers cannot drift between engines.
 */
import { alreadyExists, type ApiError } from "../errors/api-error.js";
import type { EolFields, EolTagRecord } from "./eol-tags.js";
import type { HelmChartRecord } from "./repo-deployments.js";
import type { RepoChanges, RepoRecord } from "./repos.js";
import { GeneratedTag, generatedKind, type TagFields, type TagRecord } from "./tags.js";

/** JSON text of a string list column → the list (a damaged value reads as empty). */
export function parseStringList(text: string): string[] {
  try {
    const v: unknown = JSON.parse(text);
    return Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : [];
  } catch {
    return [];
  }
}

/** A repo row as every engine's table returns it. */
export interface StoredRepoRow {
  readonly uid: string;
  readonly parentUid: string;
  readonly name: string;
  readonly description: string;
  readonly catalogTier: number;
  readonly bundles: string;
  readonly aliases: string;
  readonly activeTags: string;
  readonly createTime: number;
  readonly updateTime: number;
}

/** The columns a repo's caller-set fields are stored in. */
export type RepoColumns = Partial<Pick<StoredRepoRow, "name" | "description" | "catalogTier" | "bundles" | "aliases" | "activeTags">>;

export function repoRecordOf(row: StoredRepoRow): RepoRecord {
  return {
    ...row,
    bundles: parseStringList(row.bundles),
    aliases: parseStringList(row.aliases),
    activeTags: parseStringList(row.activeTags),
  };
}

/** The columns of the fields `f` sets (the others are left out). */
export function repoColumns(f: RepoChanges): RepoColumns {
  const out: { -readonly [K in keyof RepoColumns]: RepoColumns[K] } = {};
  if (f.name !== undefined) out.name = f.name;
  if (f.description !== undefined) out.description = f.description;
  if (f.catalogTier !== undefined) out.catalogTier = f.catalogTier;
  if (f.bundles !== undefined) out.bundles = JSON.stringify(f.bundles);
  if (f.aliases !== undefined) out.aliases = JSON.stringify(f.aliases);
  if (f.activeTags !== undefined) out.activeTags = JSON.stringify(f.activeTags);
  return out;
}

/** Whether writing `columns` over `existing` would change nothing (an upsert then leaves update_time alone). */
export function repoUnchanged(existing: StoredRepoRow, columns: RepoColumns): boolean {
  return Object.entries(columns).every(([k, v]) => existing[k as keyof StoredRepoRow] === v);
}

/** ALREADY_EXISTS: the group has a repo of that name. */
export function repoNameTaken(name: string): ApiError {
  return alreadyExists("repo", name, `the group already has a repo named ${JSON.stringify(name)}`);
}

/** A tag row as every engine's table returns it. */
export interface StoredTagRow {
  readonly uid: string;
  readonly repoUid: string;
  readonly name: string;
  readonly digest: string;
  readonly deprecated: boolean;
  readonly bundles: string;
  readonly generated: number;
  readonly updateTime: number;
}

/** The columns a tag's caller-set fields are stored in (its generated class with its name). */
export type TagColumns = Pick<StoredTagRow, "name" | "digest" | "deprecated" | "bundles" | "generated">;

export function tagRecordOf(row: StoredTagRow): TagRecord {
  const { generated: _generated, ...rest } = row;
  return { ...rest, bundles: parseStringList(row.bundles) };
}

export function tagColumns(fields: TagFields): TagColumns {
  return {
    name: fields.name,
    digest: fields.digest,
    deprecated: fields.deprecated,
    bundles: JSON.stringify(fields.bundles),
    generated: generatedKind(fields.name),
  };
}

/** Whether writing `columns` over `existing` would change nothing. */
export function tagUnchanged(existing: StoredTagRow, columns: TagColumns): boolean {
  return (
    existing.name === columns.name && existing.digest === columns.digest && existing.deprecated === columns.deprecated && existing.bundles === columns.bundles
  );
}

/** ALREADY_EXISTS: the repo has a tag of that name. */
export function tagNameTaken(name: string): ApiError {
  return alreadyExists("tag", name, `the repo already has a tag named ${JSON.stringify(name)}`);
}

/**
 * The generated classes a tag list keeps (ordinary tags always), or undefined when `include`
 * names every class and no condition is needed.
 */
export function includedClasses(include: readonly GeneratedTag[]): number[] | undefined {
  return include.length >= 3 ? undefined : [GeneratedTag.None, ...include];
}

/** Tag names never reported as a "version" of the latest tag (GetRepoTagsSummary). */
export const NOT_VERSIONS: readonly string[] = ["latest", "latest-dev"];

/** The charts column of a deployment → its charts. */
export function parseCharts(json: string): HelmChartRecord[] {
  const value = JSON.parse(json) as unknown;
  return Array.isArray(value) ? (value as HelmChartRecord[]) : [];
}

/** ALREADY_EXISTS: the repo has a deployment. */
export function deploymentExists(repoUid: string): ApiError {
  return alreadyExists("deployment", repoUid, "the repo already has a deployment; replace it with UpdateDeployment");
}

/** The columns of a tag's end-of-life facts (absent values as NULL). */
export function eolColumns(fields: EolFields) {
  return {
    mainPackageName: fields.mainPackageName,
    tagStatus: fields.tagStatus,
    graceStatus: fields.graceStatus,
    gracePeriodExpiry: fields.gracePeriodExpiry ?? null,
    mainPackageVersion: fields.mainPackageVersion ?? null,
  };
}

type EolColumns = ReturnType<typeof eolColumns>;

/** Whether `existing` already holds `columns`. */
export function eolUnchanged(existing: EolColumns | undefined, columns: EolColumns): boolean {
  return existing !== undefined && Object.entries(columns).every(([k, v]) => existing[k as keyof EolColumns] === v);
}

/** An end-of-life row with its tag's name → the record. */
export function eolRecordOf(eol: EolColumns & { readonly tagUid: string }, tagName: string): EolTagRecord {
  return {
    tagUid: eol.tagUid,
    tagName,
    mainPackageName: eol.mainPackageName,
    tagStatus: eol.tagStatus,
    graceStatus: eol.graceStatus,
    gracePeriodExpiry: eol.gracePeriodExpiry ?? undefined,
    mainPackageVersion: eol.mainPackageVersion ?? undefined,
  };
}
