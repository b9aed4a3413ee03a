/**
 * How Trellis compares email addresses and their domains (docs/auth.md "Emails"): an invite's
 * email against the redeeming user's, and the caller's domain against verified organizations'
 * names (LookupGroup, CheckEligibility, RequestGroupAccess).
 *
 * Only the ASCII letters A-Z are folded to a-z; every other character compares as it is, code
 * point for code point. No Unicode case mapping and no normalization: those turn characters
 * of one address into another's (U+212A KELVIN SIGN lower-cases to "k", U+0130 to "i̇", U+017F
 * LONG S upper-cases to "S", NFKC maps fullwidth "ｅ" to "e"), so `toLowerCase()` let an address
 * that is not the invited one, or a domain that is not the organization's, match. Two
 * addresses that differ in any non-ASCII character are different addresses here, even where
 * a mail system might deliver both to one mailbox: the comparison may refuse, never confuse.
 * The local part is folded like the domain: RFC 5321 lets a host treat it as case-sensitive,
 * but the identity providers that verify emails (and Trellis before this rule) do not, and
 * A-Z folding cannot turn one address into a different real one at any of them.
 * Internationalized domains are compared as the identity provider spelled them (no IDNA
 * conversion between U-labels and xn-- A-labels).
 */

const ASCII_UPPER = /[A-Z]+/g;

/** `s` with A-Z lowered and every other character untouched. */
export function asciiLowerCase(s: string): string {
  return s.replace(ASCII_UPPER, (m) => m.toLowerCase());
}

/** Whether two email addresses are the same address: equal but for the case of ASCII letters. */
export function sameEmailAddress(a: string, b: string): boolean {
  return asciiLowerCase(a) === asciiLowerCase(b);
}

/** The domain of an email (after its last "@"), ASCII letters lowered, or undefined. */
export function emailDomain(email: string): string | undefined {
  const at = email.lastIndexOf("@");
  const domain = at > 0 ? asciiLowerCase(email.slice(at + 1)) : "";
  return domain === "" ? undefined : domain;
}
