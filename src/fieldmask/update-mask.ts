/**
 * Which fields an Update changes (spec §4 rules 5 and 6, AIP-134).
 *
 * - An explicit mask (update_mask with at least one path): exactly those fields; `*` means
 *   every mutable field (full replacement with the values given). Paths may be snake_case
 *   or lowerCamelCase. A path naming an OUTPUT_ONLY or IMMUTABLE field, or no field at all,
 *   is INVALID_ARGUMENT with a BadRequest violation on `update_mask`. Duplicates are fine.
 * - No mask: the fields the caller set. Over gRPC/Connect that means fields with a
 *   non-default value (proto3 has no other signal); over REST the transcoder turns the JSON
 *   keys present in the body into an explicit mask, so `""` there does change a field.
 *
 * Only top-level fields of the resource are handled; resources whose masks reach into
 * nested messages pass `nested` paths they accept.
 */
import type { DescField, DescMessage, Message } from "@bufbuild/protobuf";
import { getOption, hasOption, isFieldSet } from "@bufbuild/protobuf";
import type { FieldMask } from "@bufbuild/protobuf/wkt";
import { FieldBehavior, field_behavior } from "../../gen/google/api/field_behavior_pb.js";
import { invalidField } from "../errors/api-error.js";

export interface MaskRules {
  /** Top-level proto field names (snake_case) an update may change. */
  readonly mutable: readonly string[];
}

/**
 * Returns the proto names (snake_case) of the fields to change, in `rules.mutable` order.
 * @throws ApiError INVALID_ARGUMENT on `update_mask`.
 */
export function resolveUpdatePaths(
  schema: DescMessage,
  resource: Message,
  mask: FieldMask | undefined,
  rules: MaskRules,
): string[] {
  const mutable = new Set(rules.mutable);
  if (!mask || mask.paths.length === 0) {
    return rules.mutable.filter((name) => {
      const field = schema.fields.find((f) => f.name === name);
      return field !== undefined && isFieldSet(resource, field);
    });
  }
  const chosen = new Set<string>();
  for (const raw of mask.paths) {
    const path = raw.trim();
    if (path === "*") {
      for (const name of rules.mutable) chosen.add(name);
      continue;
    }
    const field = schema.fields.find((f) => f.name === path || f.jsonName === path);
    if (!field) throw invalidField("update_mask", `unknown field ${JSON.stringify(path)}`);
    if (behaviors(field).includes(FieldBehavior.OUTPUT_ONLY)) {
      throw invalidField("update_mask", `field ${JSON.stringify(path)} is output only and cannot be updated`);
    }
    if (!mutable.has(field.name)) {
      throw invalidField("update_mask", `field ${JSON.stringify(path)} cannot be updated`);
    }
    chosen.add(field.name);
  }
  return rules.mutable.filter((name) => chosen.has(name));
}

function behaviors(field: DescField): FieldBehavior[] {
  return hasOption(field, field_behavior) ? getOption(field, field_behavior) : [];
}
