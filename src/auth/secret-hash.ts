/**
 * The one way bearer secrets of ours (refresh tokens, SCIM tokens) are stored: their SHA-256,
 * hex. The secrets carry 256 random bits, so no salt or slow hash is needed: a copy of the
 * database gives nothing that can be presented.
 */
import { createHash } from "node:crypto";

export function secretHash(secret: string): string {
  return createHash("sha256").update(secret).digest("hex");
}
