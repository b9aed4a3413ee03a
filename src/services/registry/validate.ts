/**
 * Field rules of the registry resources (docs/published-api.md "Validation" and the OCI distribution spec).
 * Each returns a FieldViolation or undefined, like src/services/validate.ts.
 */
import type { FieldViolation } from "../../errors/api-error.js";

/** OCI repository path: lowercase components joined by ".", "_", "__" or dashes, "/"-separated. */
const REPO_NAME_RE = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:\/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$/;
export const REPO_NAME_MAX = 255;

/** OCI tag names (tags.proto, docs/published-api.md "Validation"). */
export const TAG_PATTERN = "^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$";
const TAG_RE = new RegExp(TAG_PATTERN);

/** OCI digests as Trellis stores them: sha256 only, lowercase hex. */
export const DIGEST_PATTERN = "^sha256:[0-9a-f]{64}$";
const DIGEST_RE = new RegExp(DIGEST_PATTERN);

/** Image aliases, "<name>:<tag>" (docs/published-api.md "Validation"). */
const ALIAS_RE = /^[a-zA-Z0-9_.\-/]*[a-zA-Z0-9_.-]:[a-zA-Z0-9_.-]+$/;

/** The published bundle allow-list. */
export const BUNDLES: ReadonlySet<string> = new Set(["application", "base", "byol", "ai", "ai-gpu", "featured", "fips", "commercial", "emeritoss"]);

export function checkRepoName(field: string, value: string): FieldViolation | undefined {
  if (value === "") return { field, description: "is required" };
  if (value.length > REPO_NAME_MAX || !REPO_NAME_RE.test(value)) {
    return {
      field,
      description: `must be an OCI repository name (lowercase letters and digits separated by ".", "_", "__", "-" or "/", at most ${REPO_NAME_MAX} characters)`,
    };
  }
  return undefined;
}

export function checkTagName(field: string, value: string): FieldViolation | undefined {
  if (value === "") return { field, description: "is required" };
  if (!TAG_RE.test(value)) return { field, description: `must match ${JSON.stringify(TAG_PATTERN)}` };
  return undefined;
}

export function checkDigest(field: string, value: string): FieldViolation | undefined {
  if (value === "") return { field, description: "is required" };
  if (!DIGEST_RE.test(value)) return { field, description: `must be an OCI digest matching ${JSON.stringify(DIGEST_PATTERN)}` };
  return undefined;
}

/** Every element of a list field, reported with its index. */
export function checkEach(field: string, values: readonly string[], check: (field: string, value: string) => FieldViolation | undefined): FieldViolation[] {
  return values.map((v, i) => check(`${field}[${i}]`, v)).filter((v): v is FieldViolation => v !== undefined);
}

export function checkBundle(field: string, value: string): FieldViolation | undefined {
  return BUNDLES.has(value) ? undefined : { field, description: `must be one of ${[...BUNDLES].join(", ")}` };
}

export function checkAlias(field: string, value: string): FieldViolation | undefined {
  return ALIAS_RE.test(value) ? undefined : { field, description: 'must be an image reference "<name>:<tag>"' };
}

/** Largest README, in UTF-8 bytes. Markdown documents of real images are a few KiB. */
export const README_MAX_BYTES = 256 * 1024;

// biome-ignore lint/suspicious/noControlCharactersInRegex: rejecting control characters is the point
const TEXT_CONTROL_RE = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;

function isWellFormed(s: string): boolean {
  // String.prototype.isWellFormed exists on Node 20; the ES2022 lib typings predate it.
  return (s as unknown as { isWellFormed(): boolean }).isWellFormed();
}

/**
 * A README: Markdown text of at most README_MAX_BYTES. Control characters other than tab and
 * line breaks have no place in Markdown, and an unpaired surrogate is not text (SQLite would
 * store it as U+FFFD); both are refused rather than altered. The JSON doors already refuse
 * unpaired surrogates; checking here keeps the rule true for every caller of this check.
 */
export function checkReadme(field: string, value: string): FieldViolation | undefined {
  if (Buffer.byteLength(value, "utf8") > README_MAX_BYTES) {
    return { field, description: `must be at most ${README_MAX_BYTES} bytes of UTF-8 (${README_MAX_BYTES / 1024} KiB)` };
  }
  if (!isWellFormed(value) || TEXT_CONTROL_RE.test(value)) {
    return { field, description: "must be UTF-8 text (no unpaired surrogates, no control characters other than tab and line breaks)" };
  }
  return undefined;
}

/** Limits of a deployment's charts (v1 Deployment). */
export const DEPLOYMENT_CHARTS_MAX = 100;
export const CHART_TEXT_MAX = 2048;

/** An http(s) or oci URL, at most CHART_TEXT_MAX characters, for a chart's repo or source. */
export function checkChartUrl(field: string, value: string, schemes: readonly string[]): FieldViolation | undefined {
  const bad = { field, description: `must be a ${schemes.join(" or ")} URL of at most ${CHART_TEXT_MAX} characters` };
  if (value.length > CHART_TEXT_MAX || !isWellFormed(value) || TEXT_CONTROL_RE.test(value) || /\s/.test(value)) return bad;
  try {
    const url = new URL(value);
    return schemes.includes(url.protocol.slice(0, -1)) && url.host !== "" ? undefined : bad;
  } catch {
    return bad;
  }
}

/** A chart name within its repository: printable, no spaces, at most 255 characters. */
export function checkChartName(field: string, value: string): FieldViolation | undefined {
  if (value === "" || value.length > 255 || !isWellFormed(value) || TEXT_CONTROL_RE.test(value) || /\s/.test(value)) {
    return { field, description: "must be a chart name of 1 to 255 characters with no spaces or control characters" };
  }
  return undefined;
}
