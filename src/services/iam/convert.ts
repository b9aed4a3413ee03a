/**
 * Store rows → IAM proto messages. The only place that knows both shapes.
 */
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { type Group, GroupSchema } from "../../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import type { GroupRecord } from "../../store/groups.js";

export function groupToProto(row: GroupRecord): Group {
  return create(GroupSchema, {
    uid: row.uid,
    name: row.name,
    description: row.description,
    resourceLimits: {},
    verified: row.verified,
    kind: row.kind,
    createTime: timestampFromMs(row.createTime),
    updateTime: timestampFromMs(row.updateTime),
  });
}
