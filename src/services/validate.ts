/**
 * Field rules shared by the services (published validation, docs/published-api.md "Validation", and docs/published-api.md "Resources").
 * Each returns a FieldViolation or undefined so a handler can report every problem at once.
 */
import { type FieldViolation, invalidArgument } from "../errors/api-error.js";
import { isUidp } from "../store/uidp.js";

/** Group (and similar) names (docs/published-api.md "Validation"). */
export const NAME_PATTERN = "^[a-z0-9 ._-]{1,}$";
const NAME_RE = new RegExp(NAME_PATTERN);
export const NAME_MIN = 3;
export const NAME_MAX = 63;
export const DESCRIPTION_MAX = 512;

/** Names: the spec's pattern, and the published 3-63 characters. */
export function checkName(field: string, value: string): FieldViolation | undefined {
  if (!NAME_RE.test(value)) return { field, description: `name must match ${JSON.stringify(NAME_PATTERN)}` };
  if (value.length < NAME_MIN || value.length > NAME_MAX) {
    return { field, description: `name must be between ${NAME_MIN} and ${NAME_MAX} characters long` };
  }
  return undefined;
}

/** Descriptions: printable text and spaces, at most 512 characters (published `^[\S ]{0,512}$`). */
export function checkDescription(field: string, value: string): FieldViolation | undefined {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: rejecting control characters is the point
  if ([...value].length > DESCRIPTION_MAX || /[\u0000-\u001f\u007f]|[^\S ]/u.test(value)) {
    return {
      field,
      description: `description must be at most ${DESCRIPTION_MAX} characters with no line breaks, tabs or control characters`,
    };
  }
  return undefined;
}

/**
 * U+0000 (NUL), refused in every client-supplied string a write carries, whatever the field:
 * PostgreSQL text cannot hold it while SQLite can, so accepting it would store a value on one
 * engine that the other answers INTERNAL for. Refusing it everywhere keeps both the same.
 * Applied once per write call to the whole request (nul-text.ts), and by the importer.
 */
export const NUL_DESCRIPTION = "must not contain the NUL character (U+0000)";

/** A string with no NUL character. */
export function checkNoNul(field: string, value: string): FieldViolation | undefined {
  return value.includes("\u0000") ? { field, description: NUL_DESCRIPTION } : undefined;
}

/** A required UIDP. */
export function checkUidp(field: string, value: string): FieldViolation | undefined {
  if (value === "") return { field, description: "is required" };
  if (!isUidp(value)) return { field, description: "must be a valid UIDP (lowercase hex segments separated by '/')" };
  return undefined;
}

/** An optional UIDP (empty allowed). */
export function checkOptionalUidp(field: string, value: string): FieldViolation | undefined {
  return value === "" ? undefined : checkUidp(field, value);
}

/**
 * Most values one repeated list filter (ListAdvisories' filters, every List's `uidp.ids`) may
 * carry. Each value is an SQL parameter, and SQLite refuses statements with more than 32766;
 * a 1 MiB request could otherwise turn into INTERNAL.
 */
export const FILTER_VALUES_MAX = 1000;

/** A repeated filter with at most FILTER_VALUES_MAX values. */
export function checkValueCount(field: string, values: readonly unknown[]): FieldViolation | undefined {
  return values.length > FILTER_VALUES_MAX ? { field, description: `must have at most ${FILTER_VALUES_MAX} values` } : undefined;
}

/** The violations that are present, for handlers that report every problem at once. */
export function collect(...violations: (FieldViolation | undefined)[]): FieldViolation[] {
  return violations.filter((v): v is FieldViolation => v !== undefined);
}

/** Throws INVALID_ARGUMENT for a single violation, if any. */
export function requireValid(violation: FieldViolation | undefined): void {
  if (violation) throw invalidArgument([violation]);
}
