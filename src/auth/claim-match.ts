/**
 * Claim matching: validating an identity's claim-match rules, and deciding whether a token's
 * claims satisfy an identity's relationship (`matchesClaims`, called by the token exchange).
 *
 * Patterns are RE2 syntax, compiled with re2js (linear time, no backtracking, so a hostile
 * pattern or claim cannot stall the server), and always match the WHOLE value: `main` does
 * not match `refs/heads/main-evil`, and `(a+)+$` against 50 `a`s and a `!` is decided in
 * linear time. Exact values compare with `===`: case, whitespace and NUL all count.
 */
import { RE2JS } from "re2js";
import type { Identity_ClaimMatch } from "../../gen/chainguard/platform/iam/v2beta1/identities_pb.js";
import type { FieldViolation } from "../errors/api-error.js";
import type { Relationship, StringMatch } from "../store/identities.js";

/** Longest accepted pattern (characters); longer ones are refused before compiling. */
export const MAX_PATTERN_LENGTH = 1024;
/** Longest accepted exact value (issuer, subject, audience, claim value). */
export const MAX_VALUE_LENGTH = 2048;
/** Most entries in each of `claims` and `claim_patterns`. */
export const MAX_CLAIM_ENTRIES = 64;

/** Compiled patterns by source, bounded: the oldest entry goes when it is full. */
const compiledPatterns = new Map<string, RE2JS>();
const MAX_COMPILED = 512;

/** The compiled form of a pattern. @throws RE2JSException when it does not compile. */
function compiled(pattern: string): RE2JS {
  let re = compiledPatterns.get(pattern);
  if (re === undefined) {
    re = RE2JS.compile(pattern);
    if (compiledPatterns.size >= MAX_COMPILED) compiledPatterns.delete(compiledPatterns.keys().next().value as string);
    compiledPatterns.set(pattern, re);
  }
  return re;
}

/** A pattern that is set must be non-empty, at most MAX_PATTERN_LENGTH characters, and valid RE2. */
export function checkPattern(field: string, pattern: string): FieldViolation | undefined {
  if (pattern === "") return { field, description: "must not be empty" };
  if (pattern.length > MAX_PATTERN_LENGTH) return { field, description: `must be at most ${MAX_PATTERN_LENGTH} characters` };
  try {
    compiled(pattern);
    return undefined;
  } catch (err) {
    return { field, description: `is not a valid RE2 regular expression: ${(err as Error).message}` };
  }
}

/** A required exact value: non-empty and at most MAX_VALUE_LENGTH characters. */
export function checkValue(field: string, value: string): FieldViolation | undefined {
  if (value === "") return { field, description: "is required" };
  return value.length > MAX_VALUE_LENGTH ? { field, description: `must be at most ${MAX_VALUE_LENGTH} characters` } : undefined;
}

/**
 * An issuer the server may fetch discovery documents from: an absolute https URL without
 * credentials, query or fragment; http only on a loopback host (localhost, 127.0.0.0/8, ::1),
 * for local identity providers.
 */
export function checkIssuerUrl(field: string, value: string): FieldViolation | undefined {
  const missing = checkValue(field, value);
  if (missing) return missing;
  const refused: FieldViolation = {
    field,
    description: "must be an absolute https URL without credentials, query or fragment (http only on a loopback host: localhost, 127.0.0.0/8, ::1)",
  };
  if (!/^https?:\/\/[^\s\p{Cc}?#]+$/u.test(value) || !URL.canParse(value)) return refused;
  const url = new URL(value);
  const host = url.hostname;
  const loopback = host === "localhost" || host === "[::1]" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
  if (url.protocol !== "https:" && !(url.protocol === "http:" && loopback)) return refused;
  return url.username === "" && url.password === "" ? undefined : refused;
}

/** One exact-or-pattern member of a oneof, as given on the wire. */
interface OneofMember {
  readonly case: string | undefined;
  readonly value?: unknown;
}

/**
 * Checks a oneof of an exact value (case `exact`, field `<prefix>.<exactField>`) and a pattern
 * (case `<exact>Pattern`, field `<prefix>.<exactField>_pattern`). A required pair must have one
 * non-empty member; an optional pair with an empty member counts as unset.
 */
export function checkStringMatch(
  oneof: OneofMember,
  prefix: string,
  exactField: string,
  required: boolean,
  checkExact: (field: string, value: string) => FieldViolation | undefined = checkValue,
): FieldViolation | undefined {
  const value = typeof oneof.value === "string" ? oneof.value : "";
  if (oneof.case === undefined || value === "") {
    return required ? { field: `${prefix}.${exactField}`, description: `one of ${exactField} or ${exactField}_pattern is required` } : undefined;
  }
  return oneof.case.endsWith("Pattern") ? checkPattern(`${prefix}.${exactField}_pattern`, value) : checkExact(`${prefix}.${exactField}`, value);
}

/** The store form of an exact-or-pattern oneof; undefined when unset or empty. */
export function stringMatchFromOneof(oneof: OneofMember): StringMatch | undefined {
  if (oneof.case === undefined || typeof oneof.value !== "string" || oneof.value === "") return undefined;
  return oneof.case.endsWith("Pattern") ? { pattern: oneof.value } : { exact: oneof.value };
}

/**
 * Rules of a claim match: exactly one of issuer/issuer_pattern (an exact issuer is an
 * https URL, see checkIssuerUrl) and of subject/subject_pattern; audience/audience_pattern
 * optional; `claims` (exact) and `claim_patterns` (RE2) with non-empty names, at most
 * MAX_CLAIM_ENTRIES each.
 */
export function checkClaimMatch(cm: Identity_ClaimMatch, prefix = "claim_match"): FieldViolation[] {
  const out: (FieldViolation | undefined)[] = [
    checkStringMatch(cm.iss, prefix, "issuer", true, checkIssuerUrl),
    checkStringMatch(cm.sub, prefix, "subject", true),
    checkStringMatch(cm.aud, prefix, "audience", false),
    ...checkClaimMap(`${prefix}.claims`, cm.claims, (field, value) =>
      value.length > MAX_VALUE_LENGTH ? { field, description: `must be at most ${MAX_VALUE_LENGTH} characters` } : undefined,
    ),
    ...checkClaimMap(`${prefix}.claim_patterns`, cm.claimPatterns, checkPattern),
  ];
  return out.filter((v): v is FieldViolation => v !== undefined);
}

/** Rules of a claims map: at most MAX_CLAIM_ENTRIES entries, non-empty names, and `check` on each value at `<field>["<name>"]`. */
function checkClaimMap(
  field: string,
  map: Readonly<Record<string, string>>,
  check: (field: string, value: string) => FieldViolation | undefined,
): (FieldViolation | undefined)[] {
  const entries = Object.entries(map);
  if (entries.length > MAX_CLAIM_ENTRIES) return [{ field, description: `must have at most ${MAX_CLAIM_ENTRIES} entries` }];
  return entries.map(([name, value]) =>
    name === "" ? { field, description: "claim names must not be empty" } : check(`${field}[${JSON.stringify(name)}]`, value),
  );
}

/** What a token's claims are matched against besides the relationship itself. */
export interface MatchOptions {
  /**
   * The audience required when the relationship names none (the proto's "defaulting to the
   * environment's issuer host"); when omitted, such a relationship does not check `aud`.
   */
  readonly defaultAudience?: string;
  /** ms since the epoch; when given, static keys past their expiration_time never match. */
  readonly now?: number;
}

/**
 * Whether a verified token's claims satisfy an identity's relationship:
 * - claim_match: `iss` and `sub` (strings) match exactly or by full-match pattern; the
 *   audience (or `defaultAudience`) matches `aud`, a string or any element of an array of
 *   strings; every `claims` entry equals the claim, every `claim_patterns` entry fully matches
 *   it (a claim that is a number or boolean is compared as its decimal/`true`/`false` text;
 *   objects, arrays and absent claims never match).
 * - static_keys: `iss` and `sub` exact; `aud` contains the registered audience (or
 *   `defaultAudience` when none is registered); not expired when `now` is given. Checking
 *   the signature against the registered keys is the caller's job.
 * - aws_identity, service_principal: never (they are not proved with token claims).
 */
export function matchesClaims(relationship: Relationship, claims: Readonly<Record<string, unknown>>, options: MatchOptions = {}): boolean {
  const claim = (name: string): unknown => (Object.hasOwn(claims, name) ? claims[name] : undefined);
  const fallbackAudience = options.defaultAudience === undefined ? undefined : { exact: options.defaultAudience };
  switch (relationship.kind) {
    case "claim_match": {
      const r = relationship;
      return (
        matchesString(r.issuer, claim("iss")) &&
        matchesString(r.subject, claim("sub")) &&
        matchesAudience(r.audience ?? fallbackAudience, claim("aud")) &&
        Object.entries(r.claims).every(([name, exact]) => matchesString({ exact }, claimText(claim(name)))) &&
        Object.entries(r.claimPatterns).every(([name, pattern]) => matchesString({ pattern }, claimText(claim(name))))
      );
    }
    case "static_keys": {
      const r = relationship;
      const audience = r.audiences[0] === undefined ? fallbackAudience : { exact: r.audiences[0] };
      return (
        (options.now === undefined || options.now < r.expirationTime) &&
        matchesString({ exact: r.issuer }, claim("iss")) &&
        matchesString({ exact: r.subject }, claim("sub")) &&
        matchesAudience(audience, claim("aud"))
      );
    }
    default:
      return false;
  }
}

/** Whether `value` is a string that equals the exact value or fully matches the pattern. */
export function matchesString(m: StringMatch, value: unknown): boolean {
  if (typeof value !== "string") return false;
  return "exact" in m ? m.exact === value : compiled(m.pattern).matches(value);
}

/** No required audience, or `aud` (a string or an array of strings) has a matching entry. */
function matchesAudience(m: StringMatch | undefined, aud: unknown): boolean {
  if (m === undefined) return true;
  return (Array.isArray(aud) ? aud : [aud]).some((a) => matchesString(m, a));
}

/** A claim value as text for `claims`/`claim_patterns`: strings as they are, numbers and booleans as JSON prints them. */
function claimText(v: unknown): string | undefined {
  if (typeof v === "string") return v;
  if ((typeof v === "number" && Number.isFinite(v)) || typeof v === "boolean") return String(v);
  return undefined;
}
