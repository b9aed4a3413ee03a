/**
 * matchesClaims, the decision the token exchange makes (docs/auth.md "The token exchange"): exact values
 * compare byte for byte, patterns are RE2 and anchored at both ends, and a catastrophic
 * pattern is decided in linear time. Plus the validation helpers' edge cases.
 */
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { Identity_ClaimMatchSchema } from "../../../gen/chainguard/platform/iam/v2beta1/identities_pb.js";
import { checkClaimMatch, checkIssuerUrl, checkPattern, MAX_PATTERN_LENGTH, matchesClaims, matchesString } from "../../../src/auth/claim-match.js";
import type { ClaimMatchRelationship, Relationship } from "../../../src/store/identities.js";

const ISSUER = "https://token.actions.githubusercontent.com";
const SUBJECT = "repo:acme/app:ref:refs/heads/main";

const exact: ClaimMatchRelationship = {
  kind: "claim_match",
  issuer: { exact: ISSUER },
  subject: { exact: SUBJECT },
  claims: {},
  claimPatterns: {},
};
const token = (claims: Record<string, unknown> = {}): Record<string, unknown> => ({ iss: ISSUER, sub: SUBJECT, aud: "https://api.example.com", ...claims });

describe("matchesClaims with a claim match", () => {
  it("accepts the exact issuer and subject", () => {
    expect(matchesClaims(exact, token())).toBe(true);
  });

  it.each([
    ["a longer ref", `${SUBJECT}-evil`],
    ["another case", SUBJECT.toUpperCase()],
    ["a trailing space", `${SUBJECT} `],
    ["a NUL", `${SUBJECT}\u0000`],
    ["a prefix", SUBJECT.slice(0, -1)],
    ["a number", 42],
    ["an array", [SUBJECT]],
  ])("refuses a near-miss subject: %s", (_label, sub) => {
    expect(matchesClaims(exact, token({ sub }))).toBe(false);
  });

  it("refuses a different issuer, a trailing slash, or a missing claim", () => {
    expect(matchesClaims(exact, token({ iss: `${ISSUER}/` }))).toBe(false);
    expect(matchesClaims(exact, token({ iss: "https://evil.example" }))).toBe(false);
    const { iss: _dropped, ...noIssuer } = token();
    expect(matchesClaims(exact, noIssuer)).toBe(false);
  });

  it("anchors patterns at both ends", () => {
    const r: Relationship = { ...exact, subject: { pattern: "repo:acme/app:ref:refs/heads/main" } };
    expect(matchesClaims(r, token())).toBe(true);
    expect(matchesClaims(r, token({ sub: "repo:acme/app:ref:refs/heads/main-evil" }))).toBe(false);
    expect(matchesClaims(r, token({ sub: "xrepo:acme/app:ref:refs/heads/main" }))).toBe(false);
    const alternation: Relationship = { ...exact, subject: { pattern: "a|ab" } };
    expect(matchesClaims(alternation, token({ sub: "ab" }))).toBe(true);
    expect(matchesClaims(alternation, token({ sub: "abc" }))).toBe(false);
    const branches: Relationship = { ...exact, subject: { pattern: "repo:acme/app:ref:refs/heads/(main|release-[0-9]+)" } };
    expect(matchesClaims(branches, token({ sub: "repo:acme/app:ref:refs/heads/release-12" }))).toBe(true);
    expect(matchesClaims(branches, token({ sub: "repo:acme/app:ref:refs/heads/release-12x" }))).toBe(false);
  });

  it("decides a catastrophic pattern in linear time", () => {
    const r: Relationship = { ...exact, subject: { pattern: "(a+)+$" } };
    const started = performance.now();
    expect(matchesClaims(r, token({ sub: `${"a".repeat(50)}!` }))).toBe(false);
    expect(matchesClaims(r, token({ sub: "a".repeat(100_000) }))).toBe(true);
    expect(performance.now() - started).toBeLessThan(500);
    const single = performance.now();
    matchesString({ pattern: "(a|aa)+$" }, `${"a".repeat(50)}!`);
    expect(performance.now() - single).toBeLessThan(50);
  });

  it("matches the audience against a string or any element of an array", () => {
    const r: Relationship = { ...exact, audience: { exact: "https://api.example.com" } };
    expect(matchesClaims(r, token())).toBe(true);
    expect(matchesClaims(r, token({ aud: ["sigstore", "https://api.example.com"] }))).toBe(true);
    expect(matchesClaims(r, token({ aud: ["sigstore"] }))).toBe(false);
    expect(matchesClaims(r, token({ aud: "https://api.example.com/" }))).toBe(false);
    expect(matchesClaims(r, token({ aud: undefined }))).toBe(false);
    const pattern: Relationship = { ...exact, audience: { pattern: "https://api\\.example\\.(com|dev)" } };
    expect(matchesClaims(pattern, token({ aud: ["x", "https://api.example.dev"] }))).toBe(true);
    expect(matchesClaims(pattern, token({ aud: "https://api.example.com.evil" }))).toBe(false);
    // No audience on the identity: the default applies when given, else aud is not checked.
    expect(matchesClaims(exact, token({ aud: "anything" }))).toBe(true);
    expect(matchesClaims(exact, token({ aud: "anything" }), { defaultAudience: "https://api.example.com" })).toBe(false);
    expect(matchesClaims(exact, token(), { defaultAudience: "https://api.example.com" })).toBe(true);
  });

  it("requires every exact claim and every claim pattern", () => {
    const r: Relationship = {
      ...exact,
      claims: { repository_owner: "acme", run_attempt: "1", fork: "false" },
      claimPatterns: { ref: "refs/heads/main" },
    };
    const good = token({ repository_owner: "acme", run_attempt: 1, fork: false, ref: "refs/heads/main" });
    expect(matchesClaims(r, good)).toBe(true);
    expect(matchesClaims(r, { ...good, ref: "refs/heads/main-evil" })).toBe(false);
    expect(matchesClaims(r, { ...good, repository_owner: "Acme" })).toBe(false);
    expect(matchesClaims(r, { ...good, repository_owner: { name: "acme" } })).toBe(false);
    const { ref: _dropped, ...noRef } = good;
    expect(matchesClaims(r, noRef)).toBe(false);
    // Inherited properties are not claims.
    const proto: Relationship = { ...exact, claimPatterns: { constructor: ".*" } };
    expect(matchesClaims(proto, token())).toBe(false);
  });
});

describe("matchesClaims with other relationships", () => {
  const keys: Relationship = {
    kind: "static_keys",
    issuer: "https://issuer.internal",
    subject: "builder",
    issuerKeys: "{}",
    expirationTime: 2_000,
    audiences: ["https://api.example.com"],
  };

  it("checks static keys' issuer, subject, audience and expiry", () => {
    const claims = { iss: "https://issuer.internal", sub: "builder", aud: ["https://api.example.com"] };
    expect(matchesClaims(keys, claims)).toBe(true);
    expect(matchesClaims(keys, claims, { now: 1_999 })).toBe(true);
    expect(matchesClaims(keys, claims, { now: 2_000 })).toBe(false);
    expect(matchesClaims(keys, { ...claims, sub: "builder " })).toBe(false);
    expect(matchesClaims(keys, { ...claims, aud: "other" })).toBe(false);
  });

  it("never matches AWS identities or service principals by claims", () => {
    expect(matchesClaims({ kind: "aws_identity", awsAccount: "123456789012" }, token())).toBe(false);
    expect(matchesClaims({ kind: "service_principal", servicePrincipal: 2 }, token())).toBe(false);
  });
});

describe("validation helpers", () => {
  it("accepts RE2 patterns and names the field of a bad one", () => {
    expect(checkPattern("f", "refs/heads/(main|dev)")).toBeUndefined();
    expect(checkPattern("f", "(")?.description).toMatch(/not a valid RE2 regular expression/);
    expect(checkPattern("f", "(?=lookahead)")?.field).toBe("f");
    expect(checkPattern("f", "a\\1")).toBeDefined(); // backreferences are not RE2
    expect(checkPattern("f", "")).toBeDefined();
    expect(checkPattern("f", "a".repeat(MAX_PATTERN_LENGTH + 1))).toBeDefined();
  });

  it("accepts https issuers and http only on loopback hosts", () => {
    for (const ok of ["https://idp.example.com", "https://idp.example.com:8443/realms/x", "http://localhost:8080", "http://127.3.4.5", "http://[::1]:1"]) {
      expect(checkIssuerUrl("issuer", ok), ok).toBeUndefined();
    }
    for (const bad of [
      "",
      "http://idp.example.com",
      "http://169.254.169.254",
      "http://localhost.evil.com",
      "ftp://idp.example.com",
      "https:idp.example.com",
      "https://idp.example.com/?q=1",
      "https://idp.example.com/#f",
      "https://user@idp.example.com",
      " https://idp.example.com",
      "https://idp.example.com/a b",
    ]) {
      expect(checkIssuerUrl("issuer", bad), bad).toBeDefined();
    }
  });

  it("reports every claim-match violation by field", () => {
    const cm = create(Identity_ClaimMatchSchema, {
      iss: { case: "issuerPattern", value: "(" },
      claims: { "": "x" },
      claimPatterns: { ref: "[", sub: "ok.*" },
    });
    expect(checkClaimMatch(cm).map((v) => v.field)).toEqual([
      "claim_match.issuer_pattern",
      "claim_match.subject",
      "claim_match.claims",
      'claim_match.claim_patterns["ref"]',
    ]);
  });
});
