/**
 * UIDP helpers: uids are slash-separated lowercase hex paths, a 40-hex root followed by
 * 16-hex segments (docs/published-api.md "Uids"). A resource's ancestors are the prefixes of its uid, which
 * is what makes authorization and "descendants of" checks cheap string work.
 */
import { randomBytes } from "node:crypto";

/** The validity pattern of a UIDP. */
export const UIDP_PATTERN = /^[0-9a-f]{40}(?:\/[0-9a-f]{16})*$/;

/** True when `uid` is a well-formed UIDP. */
export function isUidp(uid: string): boolean {
  return UIDP_PATTERN.test(uid);
}

/** A new root uid (20 random bytes) or a new child of `parent` (8 random bytes). */
export function newUidp(parent: string | null | undefined): string {
  return parent ? `${parent}/${randomBytes(8).toString("hex")}` : randomBytes(20).toString("hex");
}

/** Parent uid, or null for a root. */
export function parentOf(uid: string): string | null {
  const i = uid.lastIndexOf("/");
  return i < 0 ? null : uid.slice(0, i);
}

/** The root segment of a uid. */
export function rootOf(uid: string): string {
  const i = uid.indexOf("/");
  return i < 0 ? uid : uid.slice(0, i);
}

/** Strict ancestors, nearest first. */
export function ancestorsOf(uid: string): string[] {
  const out: string[] = [];
  for (let p = parentOf(uid); p !== null; p = parentOf(p)) out.push(p);
  return out;
}

/** True when `ancestor` is `uid` or one of its ancestors. */
export function isAncestorOrSelf(ancestor: string, uid: string): boolean {
  return uid === ancestor || uid.startsWith(`${ancestor}/`);
}
