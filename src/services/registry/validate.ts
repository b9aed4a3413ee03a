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
export const BUNDLES: ReadonlySet<string> = new Set([
  "application",
  "base",
  "byol",
  "ai",
  "ai-gpu",
  "featured",
  "fips",
  "commercial",
  "emeritoss",
]);

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
export function checkEach(
  field: string,
  values: readonly string[],
  check: (field: string, value: string) => FieldViolation | undefined,
): FieldViolation[] {
  return values.map((v, i) => check(`${field}[${i}]`, v)).filter((v): v is FieldViolation => v !== undefined);
}

export function checkBundle(field: string, value: string): FieldViolation | undefined {
  return BUNDLES.has(value) ? undefined : { field, description: `must be one of ${[...BUNDLES].join(", ")}` };
}

export function checkAlias(field: string, value: string): FieldViolation | undefined {
  return ALIAS_RE.test(value) ? undefined : { field, description: 'must be an image reference "<name>:<tag>"' };
}
