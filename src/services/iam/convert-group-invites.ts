/**
 * GroupInvite store records → proto messages.
 */
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { type GroupInvite, GroupInviteSchema } from "../../../gen/chainguard/platform/iam/v2beta1/group_invites_pb.js";
import type { GroupInviteRecord } from "../../store/group-invites.js";

/**
 * The proto form of an invite. `code` is set only by CreateGroupInvite (the one time it
 * exists outside the store's hash); `ttl` is input only and never set; `role` is the role as
 * it is now, absent when it was deleted.
 */
export function groupInviteToProto(row: GroupInviteRecord, code = ""): GroupInvite {
  return create(GroupInviteSchema, {
    uid: row.uid,
    roleUid: row.roleUid,
    role: row.role && {
      uid: row.role.uid,
      name: row.role.name,
      description: row.role.description,
      capabilities: [...row.role.capabilities],
    },
    email: row.email,
    expirationTime: timestampFromMs(row.expirationTime),
    singleUse: row.singleUse,
    code,
    keyId: row.keyId,
    createTime: timestampFromMs(row.createTime),
  });
}
