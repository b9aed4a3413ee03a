/**
 * Success bodies: proto3 JSON (lowerCamelCase names, int64 as strings, enum names) with
 * default values written out (`"resourceLimits": {}`, `"skipped": 0`), `response_body`
 * honoured, and every google.protobuf.Timestamp with exactly three fractional digits
 * (`2026-11-22T10:00:00.000Z`, spec §2 "millisecond precision"). protobuf-es prints 0, 3, 6
 * or 9 digits, so a post-pass walks the message schema next to the JSON. The same pass drops
 * enum fields still at their zero (`*_UNSPECIFIED`) value: they carry no information and the
 * spec's resource shapes do not show them.
 */
import { type DescMessage, type JsonObject, type Message, toJson } from "@bufbuild/protobuf";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import type { Route } from "./route-table.js";

export function renderResponse(route: Route, message: Message): string {
  const schema = route.method.output;
  const json = toJson(schema, message, { alwaysEmitImplicit: true }) as JsonObject;
  normalize(schema, message as unknown as Record<string, unknown>, json);
  if (route.responseField) return JSON.stringify(json[route.responseField.jsonName] ?? null);
  return JSON.stringify(json);
}

type Ts = Parameters<typeof timestampMs>[0];

function iso(ts: Ts): string {
  return new Date(timestampMs(ts)).toISOString();
}

function normalize(schema: DescMessage, message: Record<string, unknown>, json: JsonObject): void {
  for (const field of schema.fields) {
    const value = message[field.localName];
    if (value === undefined || !(field.jsonName in json)) continue;
    const kind = field.fieldKind;
    if (kind === "enum" && value === 0 && field.oneof === undefined && !field.proto.proto3Optional) {
      delete json[field.jsonName];
      continue;
    }
    const msgDesc = kind === "message" ? field.message : kind === "list" && field.listKind === "message" ? field.message : kind === "map" && field.mapKind === "message" ? field.message : undefined;
    if (!msgDesc) continue;
    const isTs = msgDesc.typeName === "google.protobuf.Timestamp";
    if (!isTs && msgDesc.typeName.startsWith("google.protobuf.")) continue;
    const visit = (v: unknown, j: unknown): unknown => {
      if (isTs) return iso(v as Ts);
      normalize(msgDesc, v as Record<string, unknown>, j as JsonObject);
      return j;
    };
    if (kind === "message") json[field.jsonName] = visit(value, json[field.jsonName]) as JsonObject;
    else if (kind === "list") {
      const arr = json[field.jsonName] as unknown[];
      (value as unknown[]).forEach((v, i) => {
        arr[i] = visit(v, arr[i]);
      });
    } else {
      const obj = json[field.jsonName] as JsonObject;
      for (const [k, v] of Object.entries(value as Record<string, unknown>)) obj[k] = visit(v, obj[k]) as JsonObject;
    }
  }
}
