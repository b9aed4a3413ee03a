/**
 * Group invites as every engine stores and redeems them. The invite code is shown once, on
 * create, and only its SHA-256 is stored. A code is the invite's `key_id` (16 hex, listable,
 * not secret) followed by 32 random bytes in base64url (256 bits), so a redemption finds its
 * row through the key_id index and then compares the hash. Reads hydrate the invite's role as
 * it is now (a left join: the role columns are null when it is gone).
 */
import { createHash, randomBytes } from "node:crypto";
import { failedPrecondition, notFound } from "../errors/api-error.js";
import type { GroupInviteRecord, InviteToRedeem } from "./group-invites.js";

const KEY_ID_LENGTH = 16;

/** A fresh invite code, its key id and the hash that is stored. */
export function newInviteCode(): { keyId: string; code: string; codeHash: string } {
  const keyId = randomBytes(KEY_ID_LENGTH / 2).toString("hex");
  const code = keyId + randomBytes(32).toString("base64url");
  return { keyId, code, codeHash: hashInviteCode(code) };
}

/** Where a redemption looks for the invite of `code`: its key id and the hash of the whole code. */
export function inviteLookup(code: string): { keyId: string; codeHash: string } {
  return { keyId: code.slice(0, KEY_ID_LENGTH), codeHash: hashInviteCode(code) };
}

function hashInviteCode(code: string): string {
  return createHash("sha256").update(code).digest("hex");
}

/** NOT_FOUND for a code that names no invite (the code itself is never echoed). */
export function inviteNotFound(): Error {
  return notFound("group invite", "(by code)");
}

/** FAILED_PRECONDITION INVITE_EXPIRED from the invite's expiration time on. */
export function requireUnexpired(invite: { readonly uid: string; readonly expirationTime: number }, now: number): void {
  if (now >= invite.expirationTime) {
    throw failedPrecondition({ type: "INVITE_EXPIRED", subject: invite.uid, description: "the group invite has expired" });
  }
}

/** What a redemption's judge is shown of a stored invite and the identity redeeming it. */
export function inviteToRedeem(
  invite: { readonly uid: string; readonly parentUid: string; readonly roleUid: string; readonly email: string; readonly creator: string | null },
  identityEmail: string,
): InviteToRedeem {
  return { uid: invite.uid, parentUid: invite.parentUid, roleUid: invite.roleUid, email: invite.email, creator: invite.creator, identityEmail };
}

/** A row of an engine's hydrated read: the invite without its hash, and its role's columns. */
export interface InviteReadRow extends Omit<GroupInviteRecord, "role"> {
  readonly roleFound: string | null;
  readonly roleName: string | null;
  readonly roleDescription: string | null;
  readonly roleCapabilities: string | null;
}

export function groupInviteRecordOf(row: InviteReadRow): GroupInviteRecord {
  const { roleFound, roleName, roleDescription, roleCapabilities, ...invite } = row;
  if (roleFound === null) return invite;
  return {
    ...invite,
    role: {
      uid: roleFound,
      name: roleName ?? "",
      description: roleDescription ?? "",
      capabilities: JSON.parse(roleCapabilities ?? "[]") as number[],
    },
  };
}
