/**
 * The JSON body of a REST call, read strictly (docs/rest.md "Requests"):
 *
 * - A body must not be compressed (Content-Encoding other than identity: INVALID_ARGUMENT,
 *   violation `body`); the REST door decompresses nothing.
 * - A body on a rule with a body must be JSON: `application/json` (charset utf-8 or none) or
 *   no Content-Type at all; anything else is INVALID_ARGUMENT (violation `body`). The bytes
 *   must be UTF-8 (decoded with a fatal TextDecoder), the text valid JSON, every string
 *   well-formed UTF-16 (no lone surrogate, e.g. from a `"\ud800"` escape), nesting at most 64
 *   deep, no object with the same key twice (protobuf-es's check, as on the RPC doors), and
 *   the value an object.
 * - Unknown JSON keys are INVALID_ARGUMENT (the policy of every JSON door here; grpc-gateway
 *   would drop them). Violations inside the body name the field by its proto path relative
 *   to the JSON the client sent (`nmae`, `spec.colour`), the frame the services' own
 *   validation uses (docs/published-api.md "Errors": `name` for CreateGroup).
 */
import { type DescField, type DescMessage, fromJson, fromJsonString, type JsonObject, type JsonValue, type Message } from "@bufbuild/protobuf";
import { EmptySchema } from "@bufbuild/protobuf/wkt";
import { invalidField } from "../errors/api-error.js";
import { expectation } from "./scalar-values.js";

const MAX_JSON_DEPTH = 64;

/** The media type and charset of a Content-Type header (lower case), or undefined for none. */
export function parseMediaType(header: string | undefined): { type: string; charset: string | undefined } | undefined {
  if (header === undefined || header.trim() === "") return undefined;
  const [type, ...params] = header.split(";");
  let charset: string | undefined;
  for (const p of params) {
    const eq = p.indexOf("=");
    if (eq < 0) continue;
    if (p.slice(0, eq).trim().toLowerCase() === "charset")
      charset = p
        .slice(eq + 1)
        .trim()
        .replace(/^"(.*)"$/, "$1")
        .toLowerCase();
  }
  return { type: (type as string).trim().toLowerCase(), charset };
}

/** Refuses a charset other than UTF-8 (none is UTF-8). */
export function requireUtf8Charset(media: { charset: string | undefined } | undefined): void {
  if (media?.charset !== undefined && media.charset !== "utf-8" && media.charset !== "utf8") {
    throw invalidField("body", `charset ${JSON.stringify(media.charset)} is not supported; send utf-8`);
  }
}

/**
 * The REST door decompresses nothing, so a compressed body (gzip, corrupt or not) is refused
 * as what it is rather than failing later as "not valid UTF-8".
 */
export function requireIdentityEncoding(encoding: string | undefined): void {
  if (encoding === undefined) return;
  const value = encoding.trim().toLowerCase();
  if (value !== "" && value !== "identity") {
    throw invalidField("body", `content encoding ${JSON.stringify(value)} is not supported; send the body uncompressed`);
  }
}

/** The text of `bytes`, refused (naming `field`) unless they are UTF-8. */
export function decodeUtf8(bytes: Uint8Array, field: string): string {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw invalidField(field, "is not valid UTF-8");
  }
}

/** The JSON value of a body: UTF-8, valid JSON, well-formed strings, bounded depth, no key twice. */
export function parseJson(bytes: Uint8Array): JsonValue {
  const text = decodeUtf8(bytes, "body");
  let json: JsonValue;
  try {
    json = JSON.parse(text) as JsonValue;
  } catch {
    throw invalidField("body", "is not valid JSON");
  }
  checkStrings(json, "", 0);
  if (isObject(json)) rejectDuplicateKeys(text);
  return json;
}

/**
 * A key twice in one object (at any depth, also when one copy is written with a \u escape)
 * is INVALID_ARGUMENT naming the key. JSON.parse keeps the last silently, so a client (or a
 * proxy) could be shown one value and have the other stored. The check is protobuf-es's own,
 * the one that makes the Connect, gRPC and gRPC-web JSON doors refuse such bodies: its
 * fromJsonString scans the text for duplicates before reading anything, and reading into
 * Empty with unknown fields ignored does nothing else. Its other complaints do not concern
 * us here (the caller's own checks word those).
 */
function rejectDuplicateKeys(text: string): void {
  try {
    fromJsonString(EmptySchema, text, { ignoreUnknownFields: true });
  } catch (err) {
    // The library quotes the key without escaping it, so take everything between the quotes.
    const duplicate = /duplicate object key "([\s\S]*)"$/.exec(err instanceof Error ? err.message : "");
    if (duplicate) throw invalidField("body", `duplicate object key ${JSON.stringify(duplicate[1])}`);
  }
}

/**
 * Every string (keys too) must be well-formed UTF-16, and the nesting bounded. This runs
 * before the schema is consulted, so a bad string is named by the JSON keys as sent.
 */
function checkStrings(value: JsonValue, path: string, depth: number): void {
  if (depth > MAX_JSON_DEPTH) throw invalidField("body", `nests deeper than ${MAX_JSON_DEPTH} levels`);
  if (typeof value === "string") {
    if (!isWellFormed(value)) throw invalidField(path || "body", "contains an unpaired surrogate (not valid Unicode)");
  } else if (Array.isArray(value)) {
    for (const v of value) checkStrings(v, path, depth + 1);
  } else if (value !== null && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      const p = path ? `${path}.${k}` : k;
      if (!isWellFormed(k)) throw invalidField(path || "body", "contains an unpaired surrogate (not valid Unicode)");
      checkStrings(v as JsonValue, p, depth + 1);
    }
  }
}

function isWellFormed(s: string): boolean {
  // String.prototype.isWellFormed exists on Node 20; the ES2022 lib typings predate it.
  return (s as unknown as { isWellFormed(): boolean }).isWellFormed();
}

/**
 * protobuf-es fromJson, with unknown keys and bad values reported as field violations by
 * proto path (relative to `schema`) instead of the library's message (which echoes values).
 */
export function decodeJsonMessage(schema: DescMessage, json: JsonValue): Message {
  if (json !== null && typeof json === "object" && !Array.isArray(json)) checkKeys(schema, json, "");
  try {
    return fromJson(schema, json, { ignoreUnknownFields: false });
  } catch {
    const where = json !== null && typeof json === "object" && !Array.isArray(json) ? locateBadValue(schema, json, "") : undefined;
    if (where) throw invalidField(where.path, expectation(where.field));
    throw invalidField("body", `is not a valid ${schema.name}`);
  }
}

/** Finds the JSON field of `schema` named `key` (proto name or JSON name). */
export function fieldByJsonKey(schema: DescMessage, key: string): DescField | undefined {
  return schema.fields.find((f) => f.jsonName === key || f.name === key);
}

/** True for a JSON object (not null, not an array). */
export function isObject(v: unknown): v is JsonObject {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

/** Rejects unknown keys, naming them by proto path (the unknown key itself as sent). */
function checkKeys(schema: DescMessage, json: JsonObject, prefix: string): void {
  if (schema.typeName.startsWith("google.protobuf.")) return; // WKT JSON forms are not field maps
  for (const [key, value] of Object.entries(json)) {
    const field = fieldByJsonKey(schema, key);
    if (!field) throw invalidField(`${prefix}${key}`, "unknown field");
    const path = `${prefix}${field.name}.`;
    if (field.fieldKind === "message" && isObject(value)) checkKeys(field.message, value, path);
    else if (field.fieldKind === "list" && field.listKind === "message" && Array.isArray(value)) {
      for (const v of value) if (isObject(v)) checkKeys(field.message, v, path);
    } else if (field.fieldKind === "map" && field.mapKind === "message" && isObject(value)) {
      for (const v of Object.values(value)) if (isObject(v)) checkKeys(field.message, v, path);
    }
  }
}

/** After fromJson failed: the first field whose value does not decode on its own. */
function locateBadValue(schema: DescMessage, json: JsonObject, prefix: string): { path: string; field: DescField } | undefined {
  for (const [key, value] of Object.entries(json)) {
    const field = fieldByJsonKey(schema, key);
    if (!field) continue;
    const path = `${prefix}${field.name}`;
    const nested =
      field.fieldKind === "message" || field.fieldKind === "list" || field.fieldKind === "map" ? (field as { message?: DescMessage }).message : undefined;
    if (nested && !nested.typeName.startsWith("google.protobuf.")) {
      const children =
        field.fieldKind === "message"
          ? [value]
          : field.fieldKind === "list" && Array.isArray(value)
            ? value
            : isObject(value) && field.fieldKind === "map"
              ? Object.values(value)
              : [];
      for (const child of children) {
        if (isObject(child)) {
          const found = locateBadValue(nested, child, `${path}.`);
          if (found) return found;
        }
      }
    }
    try {
      fromJson(schema, { [key]: value } as JsonValue, { ignoreUnknownFields: false });
    } catch {
      return { path, field };
    }
  }
  // Two members of one oneof: name the second.
  const seen = new Map<string, string>();
  for (const key of Object.keys(json)) {
    const field = fieldByJsonKey(schema, key);
    if (field?.oneof && json[key] !== null) {
      if (seen.has(field.oneof.name)) return { path: `${prefix}${field.name}`, field };
      seen.set(field.oneof.name, field.name);
    }
  }
  return undefined;
}
