/**
 * RoleBinding store records → proto messages, hydrated with the identity, group and role as
 * they are now.
 */
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { type RoleBinding, RoleBindingSchema } from "../../../gen/chainguard/platform/iam/v2beta1/role_bindings_pb.js";
import type { RoleBindingRecord } from "../../store/role-bindings.js";

export function roleBindingToProto(row: RoleBindingRecord): RoleBinding {
  return create(RoleBindingSchema, {
    uid: row.uid,
    identity: { ...row.identity },
    group: { ...row.group },
    role: { ...row.role },
    createTime: timestampFromMs(row.createTime),
    identityUid: row.identityUid,
    roleUid: row.roleUid,
  });
}
