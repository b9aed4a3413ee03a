/**
 * OSV (https://ossf.github.io/osv-schema/) documents → advisories. OSV is what most
 * vulnerability feeds publish, Chainguard's and Wolfi's included.
 *
 * One advisory per `affected[]` package, keyed like every advisory by (group, id, package
 * name), so re-importing a feed updates in place. The mapping:
 * - advisory_id = `id`; aliases = `aliases`; severities from `severity[]` (CVSS_V2/V3/V4);
 *   create/update/delete time = `published` / `modified` / `withdrawn`.
 * - artifact_name = component_name = package name; component_type = ecosystem; artifact_type
 *   = "apk" for the Wolfi and Chainguard ecosystems (the ecosystem, lowercased, otherwise);
 *   artifact_architecture = `ecosystem_specific.architecture` when given.
 * - events, in order: an approved manual detection at `published`, then an approved `fixed`
 *   event (at `modified`) for each `fixed` version in the package's ranges.
 * Anything that is not a valid OSV document is thrown as a plain Error (the record is rejected).
 */
import type { AdvisoryEventFields, AdvisoryFields } from "../store/advisories.js";
import { REVIEW_STATE_APPROVED } from "../store/advisories.js";

/** Author recorded on advisories and events imported from OSV when the document names none. */
export const OSV_AUTHOR = "osv-import";

/** EventTypeFilter numbers (advisories.proto) of the events OSV yields. */
const DETECTION = 1;
const FIXED = 3;

const SEVERITY_TYPES: Readonly<Record<string, number>> = { CVSS_V2: 1, CVSS_V3: 2, CVSS_V4: 3 };

/** True when a parsed JSON value looks like an OSV document rather than a native record. */
export function isOsvDocument(value: unknown): boolean {
  return isObject(value) && typeof value.id === "string" && ("affected" in value || "schema_version" in value || "modified" in value);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function str(v: unknown, what: string): string {
  if (typeof v !== "string") throw new Error(`${what} must be a string`);
  return v;
}

function optionalTime(v: unknown, what: string): number | undefined {
  if (v === undefined || v === null) return undefined;
  const ms = Date.parse(str(v, what));
  if (!/^\d{4}-\d{2}-\d{2}T/.test(v as string) || Number.isNaN(ms)) throw new Error(`${what} must be an RFC 3339 time`);
  return ms;
}

function strings(v: unknown, what: string): string[] {
  if (v === undefined) return [];
  if (!Array.isArray(v)) throw new Error(`${what} must be an array of strings`);
  return v.map((x, i) => str(x, `${what}[${i}]`));
}

/** The advisories an OSV document describes. @throws Error naming the first invalid field. */
export function osvToAdvisories(doc: unknown): AdvisoryFields[] {
  if (!isObject(doc)) throw new Error("OSV document must be a JSON object");
  const id = str(doc.id, "id").trim();
  if (id === "" || id.length > 256) throw new Error("id must be 1 to 256 characters");
  const published = optionalTime(doc.published, "published");
  const modified = optionalTime(doc.modified, "modified");
  const withdrawn = optionalTime(doc.withdrawn, "withdrawn");
  const aliases = strings(doc.aliases, "aliases");
  const severity = doc.severity === undefined ? [] : doc.severity;
  if (!Array.isArray(severity)) throw new Error("severity must be an array");
  const severities = severity.map((s, i) => {
    if (!isObject(s)) throw new Error(`severity[${i}] must be an object`);
    return { type: SEVERITY_TYPES[str(s.type, `severity[${i}].type`)] ?? 0, score: str(s.score, `severity[${i}].score`) };
  });
  const author = isObject(doc.database_specific) && typeof doc.database_specific.author === "string" ? doc.database_specific.author : OSV_AUTHOR;
  if (!Array.isArray(doc.affected) || doc.affected.length === 0) throw new Error("affected must be a non-empty array");

  return doc.affected.map((a, i): AdvisoryFields => {
    const where = `affected[${i}]`;
    if (!isObject(a) || !isObject(a.package)) throw new Error(`${where}.package must be an object`);
    const name = str(a.package.name, `${where}.package.name`);
    const ecosystem = str(a.package.ecosystem, `${where}.package.ecosystem`);
    if (name === "") throw new Error(`${where}.package.name must not be empty`);
    const specific = isObject(a.ecosystem_specific) ? a.ecosystem_specific : {};
    const events: AdvisoryEventFields[] = [
      {
        createTime: published,
        author,
        reviewer: "",
        reviewState: REVIEW_STATE_APPROVED,
        issue: null,
        eventType: DETECTION,
        body: JSON.stringify({ manual: {} }),
        findings: null,
      },
    ];
    const ranges = a.ranges === undefined ? [] : a.ranges;
    if (!Array.isArray(ranges)) throw new Error(`${where}.ranges must be an array`);
    ranges.forEach((r, j) => {
      if (!isObject(r) || !Array.isArray(r.events)) throw new Error(`${where}.ranges[${j}].events must be an array`);
      for (const e of r.events) {
        if (isObject(e) && e.fixed !== undefined) {
          const fixedVersion = str(e.fixed, `${where}.ranges[${j}].events[].fixed`);
          events.push({
            createTime: modified,
            author,
            reviewer: "",
            reviewState: REVIEW_STATE_APPROVED,
            issue: null,
            eventType: FIXED,
            body: JSON.stringify({ fixedVersion }),
            findings: null,
          });
        }
      }
    });
    return {
      advisoryId: id,
      legacyAdvisoryId: null,
      author,
      artifactName: name,
      artifactType: ecosystem === "Wolfi" || ecosystem === "Chainguard" ? "apk" : ecosystem.toLowerCase(),
      artifactArchitecture: typeof specific.architecture === "string" ? specific.architecture : "",
      componentName: name,
      componentLocation: "",
      componentType: ecosystem,
      aliases,
      severities,
      deleteTime: withdrawn ?? null,
      createTime: published,
      updateTime: modified,
      events,
    };
  });
}
