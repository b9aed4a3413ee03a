/**
 * What a token revocation may name (TokensService.RevokeTokens and `trellis tokens revoke`):
 * pure checks, so the CLI validates without loading the store.
 */
import { isUidp } from "../store/uidp.js";

/** `sub` of an operator token (src/auth/local-token.ts allows these names). */
const OPERATOR_SUBJECT = /^operator:[A-Za-z0-9._@-]{1,64}$/;
/** Our `jti`s are UUIDs; anything of another shape or far longer names no token of ours. */
const JTI = /^[A-Za-z0-9._:-]{1,128}$/;

/** What is wrong with a revocation's subject and jti ("" = every token), as field violations. */
export function revocationProblems(identity: string, jti: string): { field: string; description: string }[] {
  const problems: { field: string; description: string }[] = [];
  if (identity === "") problems.push({ field: "identity", description: "is required" });
  else if (!isUidp(identity) && !OPERATOR_SUBJECT.test(identity)) {
    problems.push({ field: "identity", description: "must be an identity UIDP, or operator:NAME for operator tokens" });
  }
  if (jti !== "" && !JTI.test(jti)) problems.push({ field: "jti", description: "must be the jti claim of a token (1-128 characters)" });
  return problems;
}
