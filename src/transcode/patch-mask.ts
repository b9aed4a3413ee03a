/**
 * PATCH mask inference (grpc-gateway's "patch feature", docs/published-api.md "Update
 * masks"): for PATCH with `body: "<field>"` and a request field `update_mask`
 * (google.protobuf.FieldMask) left empty by the query, the mask is the set of JSON keys
 * present in the body: proto names relative to the body field, nested message objects
 * expanded to their leaves (an empty object or null is the field itself), repeated, map and
 * well-known-type fields kept whole, sorted. Two deliberate differences from grpc-gateway:
 * OUTPUT_ONLY fields and the path-bound field are left out, so echoing a resource read with
 * GET is a harmless PATCH. An explicit mask (non-empty `update_mask`) always wins.
 */
import { create, type DescMessage, getOption, hasOption } from "@bufbuild/protobuf";
import { type ReflectMessage, reflect } from "@bufbuild/protobuf/reflect";
import { FieldMaskSchema } from "@bufbuild/protobuf/wkt";
import { FieldBehavior, field_behavior } from "../../gen/google/api/field_behavior_pb.js";
import { fieldByJsonKey, isObject } from "./json-body.js";
import { protoPath } from "./query-params.js";
import type { Route } from "./route-table.js";

type Obj = Record<string, unknown>;

/**
 * Sets the inferred `update_mask` on `root`, the request of `route` being bound, from
 * `bodyJson`, the JSON object the client sent for the body field (module comment); leaves it
 * alone when the rule is not such a PATCH or the mask is explicit.
 */
export function inferUpdateMask(route: Route, root: ReflectMessage, bodyJson: Obj): void {
  if (route.httpMethod !== "PATCH" || !route.bodyField) return;
  const schema = route.method.input;
  const maskField = schema.fields.find((f) => f.name === "update_mask" && f.fieldKind === "message" && f.message.typeName === FieldMaskSchema.typeName);
  const explicit = maskField && root.isSet(maskField) ? (root.get(maskField) as ReflectMessage).message : undefined;
  if (maskField && (explicit === undefined || (explicit as unknown as { paths: string[] }).paths.length === 0)) {
    const bound = route.variableFields.filter((c) => c[0] === route.bodyField).map((c) => protoPath(c.slice(1)));
    const paths = [...new Set(inferMask(route.bodyField.message, bodyJson, ""))].filter((p) => !bound.includes(p)).sort();
    root.set(maskField, reflect(FieldMaskSchema, create(FieldMaskSchema, { paths })));
  }
}

/** Mask paths from the JSON keys present (module comment), relative to `schema`. */
function inferMask(schema: DescMessage, json: Obj, prefix: string): string[] {
  const out: string[] = [];
  for (const [key, value] of Object.entries(json)) {
    const field = fieldByJsonKey(schema, key);
    if (!field) continue; // unknown keys were rejected before
    if (hasOption(field, field_behavior) && getOption(field, field_behavior).includes(FieldBehavior.OUTPUT_ONLY)) continue;
    const path = `${prefix}${field.name}`;
    if (field.fieldKind === "message" && !field.message.typeName.startsWith("google.protobuf.") && isObject(value) && Object.keys(value).length > 0) {
      out.push(...inferMask(field.message, value, `${path}.`));
    } else {
      out.push(path);
    }
  }
  return out;
}
