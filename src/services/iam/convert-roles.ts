/**
 * Role store records → proto messages.
 */
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { type Role, RoleSchema } from "../../../gen/chainguard/platform/iam/v2beta1/roles_pb.js";
import type { RoleRecord } from "../../store/roles.js";

export function roleToProto(row: RoleRecord): Role {
  return create(RoleSchema, {
    uid: row.uid,
    name: row.name,
    description: row.description,
    capabilities: [...row.capabilities],
    createTime: timestampFromMs(row.createTime),
    updateTime: timestampFromMs(row.updateTime),
  });
}
