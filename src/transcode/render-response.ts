/**
 * Success bodies of the REST door. Most response types go through the compiled writer in
 * json-writer.ts; this file holds what it must equal, and the path for the types it does not
 * compile (any reaching Struct, Any, Duration, wrappers, FieldMask): proto3 JSON from
 * protobuf-es `toJson` with
 * `alwaysEmitImplicit: true` (lowerCamelCase names, int64 as strings, enums as names, default
 * values written out: `"resourceLimits": {}`, `"verified": false`, `"skipped": 0`), with
 * `response_body` honoured. Unset message fields and unset `optional` scalars are omitted
 * (grpc-gateway would print `null`; protobuf-es has no such option and the spec's samples
 * never show `null`).
 *
 * A post-pass then walks the message schema alongside the JSON (not a regex over text):
 * - every google.protobuf.Timestamp, at any depth (fields, lists, map values), is written
 *   with exactly three fractional digits, truncated: `2026-11-22T10:00:00.000Z` (docs/published-api.md "Resources",
 *   "millisecond precision"; protobuf-es prints 0, 3, 6 or 9 digits);
 * - an enum field with implicit presence still at its zero value (`*_UNSPECIFIED`) is left
 *   out: it carries no information and the published resource shapes do not show it.
 *   Enums inside lists and maps, oneof members and `optional` enums are always written.
 * Values inside google.protobuf.Struct/Value/Any are not touched.
 *
 * With `response_body`, the body is that field's JSON value; an unset message field renders
 * as `{}` (what grpc-gateway writes for a nil message), an unset optional scalar or an unset
 * well-known type whose JSON form is not an object (Timestamp, wrappers, ...) as `null`.
 */
import { type DescField, type DescMessage, type JsonObject, type JsonValue, type Message, toJson } from "@bufbuild/protobuf";
import { type Timestamp, TimestampSchema } from "@bufbuild/protobuf/wkt";
import { formatMillis, jsonWriterFor, nestedMessage } from "../json/json-writer.js";
import type { Route } from "./route-table.js";

/**
 * Renders the response message of `route` as the JSON text of the HTTP body.
 * @throws Error when protobuf-es cannot serialise the message (e.g. a Timestamp out of range);
 *   the REST door turns that into INTERNAL.
 */
export function renderResponse(route: Route, message: Message): string {
  const schema = route.method.output;
  const writer = jsonWriterFor(schema);
  const shaped = writer ? writer(message) : renderWithToJson(schema, message);
  if (!route.responseField) return JSON.stringify(shaped);
  const field = route.responseField;
  const value = (shaped as JsonObject)[field.jsonName];
  if (value !== undefined) return JSON.stringify(value);
  return field.fieldKind === "message" && !SCALAR_JSON.has(field.message.typeName) ? "{}" : "null";
}

/** The reference rendering: protobuf-es `toJson` and the post-pass described above. */
export function renderWithToJson(schema: DescMessage, message: Message): JsonValue {
  const json = toJson(schema, message, { alwaysEmitImplicit: true });
  return normalizeMessage(schema, message as unknown as Record<string, unknown>, json);
}

/** Well-known types whose JSON form is not an object: unset, they render as `null`. */
const SCALAR_JSON = new Set(
  [
    "Timestamp",
    "Duration",
    "FieldMask",
    "Value",
    "ListValue",
    "DoubleValue",
    "FloatValue",
    "Int64Value",
    "UInt64Value",
    "Int32Value",
    "UInt32Value",
    "BoolValue",
    "StringValue",
    "BytesValue",
  ].map((n) => `google.protobuf.${n}`),
);

/** `2026-11-22T10:00:00.000Z`: RFC 3339 UTC, exactly three fractional digits, truncated. */
export function formatTimestampMillis(ts: Timestamp): string {
  // Nanos (0..999 999 999) truncated to whole milliseconds never carry into the seconds.
  return formatMillis(Number(ts.seconds) * 1000 + Math.floor(ts.nanos / 1_000_000));
}

/** Returns the JSON for `message` with the post-pass applied (mutating `json` in place). */
function normalizeMessage(schema: DescMessage, message: Record<string, unknown>, json: JsonValue): JsonValue {
  if (schema.typeName === TimestampSchema.typeName) return formatTimestampMillis(message as unknown as Timestamp);
  if (schema.typeName.startsWith("google.protobuf.") || json === null || typeof json !== "object" || Array.isArray(json)) {
    return json;
  }
  for (const field of schema.fields) {
    if (!(field.jsonName in json)) continue;
    const value = field.oneof ? oneofValue(message, field) : message[field.localName];
    if (value === undefined) continue;
    if (field.fieldKind === "enum" && value === 0 && !field.oneof && !field.proto.proto3Optional) {
      delete json[field.jsonName];
      continue;
    }
    const nested = nestedMessage(field);
    if (!nested) continue;
    const current = json[field.jsonName] as JsonValue;
    if (field.fieldKind === "message") {
      json[field.jsonName] = normalizeMessage(nested, value as Record<string, unknown>, current);
    } else if (field.fieldKind === "list" && Array.isArray(current)) {
      (value as unknown[]).forEach((v, i) => {
        current[i] = normalizeMessage(nested, v as Record<string, unknown>, current[i] as JsonValue);
      });
    } else if (field.fieldKind === "map" && current !== null && typeof current === "object" && !Array.isArray(current)) {
      // Local map keys are object keys, i.e. already the strings toJson writes.
      for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
        if (key in current) current[key] = normalizeMessage(nested, v as Record<string, unknown>, current[key] as JsonValue);
      }
    }
  }
  return json;
}

function oneofValue(message: Record<string, unknown>, field: DescField): unknown {
  const group = message[(field.oneof as { localName: string }).localName] as { case?: string; value?: unknown } | undefined;
  return group?.case === field.localName ? group.value : undefined;
}
