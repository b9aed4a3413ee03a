/**
 * Builds the request message of a REST call from the matched route, the path variables, the
 * query string and the body, following google/api/http.proto plus the decisions below
 * (docs/rest.md "Requests"; grpc-gateway's behaviour where a client can tell).
 *
 * Body
 * - `body: "*"`: the JSON body is the whole request; then no query parameter is accepted.
 *   `body: "<field>"`: the JSON body is that field's message. An empty body counts as `{}`.
 * - No body rule: a non-empty body is INVALID_ARGUMENT (`body`), except a POST with
 *   `Content-Type: application/x-www-form-urlencoded`, whose fields are treated exactly like
 *   query parameters (what Go's ParseForm gives grpc-gateway; the STS exchange's HTTP/1
 *   clients send that).
 * - A body must not be compressed (Content-Encoding other than identity: INVALID_ARGUMENT,
 *   violation `body`); this door decompresses nothing.
 * - A body on a rule with a body must be JSON: `application/json` (charset utf-8 or none) or
 *   no Content-Type at all; anything else is INVALID_ARGUMENT (violation `body`). The bytes must be UTF-8 (decoded with a fatal
 *   TextDecoder), the text valid JSON, every string well-formed UTF-16 (no lone surrogate,
 *   e.g. from a `"\ud800"` escape), nesting at most 64 deep, no object with the same key
 *   twice (protobuf-es's check, as on the RPC doors), and the value an object.
 * - Unknown JSON keys are INVALID_ARGUMENT (the policy of every JSON door here; grpc-gateway
 *   would drop them). Violations inside the body name the field by its proto path relative
 *   to the JSON the client sent (`nmae`, `spec.colour`), the frame the services' own
 *   validation uses (docs/published-api.md "Errors": `name` for CreateGroup).
 *
 * Path variables are authoritative (authorization reads the uid from the path): a body value
 * that is present, not the default, and different, or a query parameter with a different
 * value, is INVALID_ARGUMENT naming the request field path (`item.uid`); an equal value is
 * accepted. A default value in the body (`""`, `0`) cannot be told from an absent one in
 * proto3 and is overwritten by the path value.
 *
 * Query parameters (and form fields)
 * - Names are dotted field paths of the request, each segment by proto name or JSON name
 *   (`uidp.descendants_of`, `uidp.descendantsOf`), through singular message fields only.
 * - Bindable leaves: scalars, enums, Timestamp, Duration, FieldMask and the wrapper types,
 *   and repeated scalars/enums (one value per repeated key; no comma splitting).
 * - INVALID_ARGUMENT: an unknown name (named as given; `access_token` too: credentials are
 *   never read from the URL), a message, map or repeated-message field, a field inside the
 *   body field, any parameter when `body: "*"`, a singular field given twice (also under
 *   its two names), a second member of a oneof, or a value that does not parse. Violations
 *   name the proto path (`page_size` even when sent as `pageSize`).
 * - Values: integers as strict decimal within the type's range (`1e3`, `10abc`, `+1`,
 *   overflow: rejected); 64-bit integers likewise, as decimal strings; floats as decimal
 *   numbers or NaN/Infinity/-Infinity (float32 overflow rejected); bools `true`/`false`;
 *   enums by exact name or declared number; Timestamp RFC 3339 (a real calendar date, `T`
 *   and `Z` upper case); Duration in the proto JSON form (`1.5s`, not `90m`); FieldMask
 *   comma-separated, each path snake_case or lowerCamelCase, stored snake_case; wrappers as
 *   their scalar; bytes standard or URL-safe base64, padding optional. The query string is
 *   form-decoded (`+` is a space; send `%2B`), strictly (a malformed escape is rejected).
 *
 * PATCH mask inference (grpc-gateway's "patch feature", docs/published-api.md "Update masks"): for PATCH with
 * `body: "<field>"` and a request field `update_mask` (google.protobuf.FieldMask) left empty
 * by the query, the mask is the set of JSON keys present in the body: proto names relative
 * to the body field, nested message objects expanded to their leaves (an empty object or
 * null is the field itself), repeated, map and well-known-type fields kept whole, sorted.
 * Two deliberate differences from grpc-gateway: OUTPUT_ONLY fields and the path-bound field
 * are left out, so echoing a resource read with GET is a harmless PATCH. An explicit mask
 * (non-empty `update_mask`) always wins.
 */
import {
  create,
  type DescEnum,
  type DescField,
  type DescMessage,
  fromJson,
  fromJsonString,
  getOption,
  hasOption,
  type JsonObject,
  type JsonValue,
  type Message,
  ScalarType,
} from "@bufbuild/protobuf";
import { type ReflectList, type ReflectMessage, reflect } from "@bufbuild/protobuf/reflect";
import {
  BoolValueSchema,
  BytesValueSchema,
  DoubleValueSchema,
  DurationSchema,
  EmptySchema,
  FieldMaskSchema,
  FloatValueSchema,
  Int32ValueSchema,
  Int64ValueSchema,
  StringValueSchema,
  TimestampSchema,
  UInt32ValueSchema,
  UInt64ValueSchema,
} from "@bufbuild/protobuf/wkt";
import { FieldBehavior, field_behavior } from "../../gen/google/api/field_behavior_pb.js";
import { type ApiError, invalidField } from "../errors/api-error.js";
import type { Route } from "./route-table.js";

/** What bindRequest reads from the HTTP request besides the route and path variables. */
export interface BindInput {
  /** The decoded query string (see parseFormEncoded). */
  readonly query: URLSearchParams;
  /** The raw body; absent or empty means no body. */
  readonly body?: Uint8Array;
  /** The Content-Type header, if any. */
  readonly contentType?: string;
  /** The Content-Encoding header, if any: only identity is taken (no decompression here). */
  readonly contentEncoding?: string;
}

const WRAPPERS: ReadonlyMap<string, DescMessage> = new Map(
  [
    DoubleValueSchema,
    FloatValueSchema,
    Int64ValueSchema,
    UInt64ValueSchema,
    Int32ValueSchema,
    UInt32ValueSchema,
    BoolValueSchema,
    StringValueSchema,
    BytesValueSchema,
  ].map((s) => [s.typeName, s] as const),
);
/** Well-known message types whose JSON form is a scalar: leaves for the query and the mask. */
const SCALAR_LIKE = new Set([TimestampSchema.typeName, DurationSchema.typeName, FieldMaskSchema.typeName, ...WRAPPERS.keys()]);
const MAX_JSON_DEPTH = 64;

type Obj = Record<string, unknown>;

/**
 * Builds the request message for `route` (module comment for every rule).
 * @param vars the decoded path variables by proto path, as RouteTable.match returns them.
 * @throws ApiError INVALID_ARGUMENT with a BadRequest violation naming the field; nothing is
 *   called when it throws.
 */
export function bindRequest(route: Route, vars: Readonly<Record<string, string>>, input: BindInput): Message {
  const schema = route.method.input;
  const params: [string, string][] = [...input.query];
  const body = input.body ?? new Uint8Array(0);
  const media = parseMediaType(input.contentType);
  if (body.length > 0) requireIdentityEncoding(input.contentEncoding);
  let message: Message;
  /** The JSON object the client sent (relative to the body field), when there is a body rule. */
  let bodyJson: Obj | undefined;

  if (route.body === "") {
    if (body.length > 0) {
      if (route.httpMethod !== "POST" || media?.type !== "application/x-www-form-urlencoded") {
        throw invalidField("body", "this method takes no request body");
      }
      requireUtf8Charset(media);
      params.push(...parseFormEncoded(decodeUtf8(body, "body"), "body"));
    }
    message = create(schema);
  } else {
    if (body.length > 0) {
      if (media !== undefined && media.type !== "application/json") {
        throw invalidField("body", `content type ${JSON.stringify(media.type)} is not supported; send application/json`);
      }
      requireUtf8Charset(media);
    }
    const json = body.length === 0 ? {} : parseJson(body);
    const target = route.bodyField ? route.bodyField.message : schema;
    if (!SCALAR_LIKE.has(target.typeName) && (json === null || typeof json !== "object" || Array.isArray(json))) {
      throw invalidField("body", "must be a JSON object");
    }
    const decoded = decodeJsonMessage(target, json);
    if (route.bodyField) {
      message = create(schema);
      reflect(schema, message).set(route.bodyField, reflect(target, decoded));
    } else {
      message = decoded;
    }
    if (json !== null && typeof json === "object" && !Array.isArray(json)) bodyJson = json as Obj;
  }
  const root = reflect(schema, message);

  // Path variables.
  const pathValues = new Map<string, unknown>();
  route.variableFields.forEach((chain, i) => {
    const name = route.variablePaths[i] as string;
    const leaf = chain[chain.length - 1] as DescField;
    const value = parseValue(leaf, vars[name] ?? "", name);
    const relative = bodyRelativeChain(route, chain);
    if (bodyJson && relative && jsonHas(bodyJson, relative)) {
      const current = getLeaf(root, chain);
      if (current !== undefined && !isDefault(current) && !sameValue(current, value)) {
        throw invalidField(name, "differs from the value in the URL path");
      }
    }
    setLeaf(root, chain, value, name);
    pathValues.set(name, value);
  });

  // Query parameters (and form fields).
  if (route.body === "*" && params.length > 0) {
    const key = (params[0] as [string, string])[0];
    let named = key;
    try {
      named = protoPath(resolveQueryKey(schema, key));
    } catch {
      // unknown: name it as given
    }
    throw invalidField(named, "query parameters are not accepted when the body carries the whole request");
  }
  const byPath = new Map<string, { chain: DescField[]; values: string[] }>();
  for (const [key, value] of params) {
    const chain = resolveQueryKey(schema, key);
    const path = protoPath(chain);
    let entry = byPath.get(path);
    if (!entry) {
      entry = { chain, values: [] };
      byPath.set(path, entry);
    }
    entry.values.push(value);
  }
  for (const [path, { chain, values }] of byPath) {
    if (route.bodyField && chain[0] === route.bodyField) {
      throw invalidField(path, "is set by the request body, not the query string");
    }
    const leaf = chain[chain.length - 1] as DescField;
    if (leaf.fieldKind === "list") {
      const list = containerOf(root, chain, path).get(leaf) as ReflectList;
      for (const v of values) list.add(parseValue(leaf, v, path));
      continue;
    }
    if (values.length > 1) throw invalidField(path, "must be given at most once");
    const value = parseValue(leaf, values[0] as string, path);
    if (pathValues.has(path)) {
      if (!sameValue(pathValues.get(path), value)) throw invalidField(path, "differs from the value in the URL path");
      continue;
    }
    setLeaf(root, chain, value, path);
  }

  // PATCH without an explicit mask: the mask is the JSON keys present in the body.
  if (route.httpMethod === "PATCH" && route.bodyField && bodyJson) {
    const maskField = schema.fields.find((f) => f.name === "update_mask" && f.fieldKind === "message" && f.message.typeName === FieldMaskSchema.typeName);
    const explicit = maskField && root.isSet(maskField) ? (root.get(maskField) as ReflectMessage).message : undefined;
    if (maskField && (explicit === undefined || (explicit as unknown as { paths: string[] }).paths.length === 0)) {
      const bound = route.variableFields.filter((c) => c[0] === route.bodyField).map((c) => protoPath(c.slice(1)));
      const paths = [...new Set(inferMask(route.bodyField.message, bodyJson, ""))].filter((p) => !bound.includes(p)).sort();
      root.set(maskField, reflect(FieldMaskSchema, create(FieldMaskSchema, { paths })));
    }
  }
  return message;
}

/**
 * Strict `application/x-www-form-urlencoded` decoding (the query string and form bodies):
 * `+` is a space, `%XX` escapes must be well-formed UTF-8, empty pairs are skipped.
 * @param where the violation field when a name itself cannot be decoded ("query", "body").
 * @throws ApiError INVALID_ARGUMENT naming the parameter (or `where`).
 */
export function parseFormEncoded(text: string, where: string): URLSearchParams {
  const out = new URLSearchParams();
  for (const pair of text.split("&")) {
    if (pair === "") continue;
    const eq = pair.indexOf("=");
    const rawKey = eq < 0 ? pair : pair.slice(0, eq);
    const rawValue = eq < 0 ? "" : pair.slice(eq + 1);
    const key = formDecode(rawKey);
    if (key === undefined) throw invalidField(where, "contains a malformed percent-escape");
    const value = formDecode(rawValue);
    if (value === undefined) throw invalidField(key, "contains a malformed percent-escape");
    out.append(key, value);
  }
  return out;
}

function formDecode(s: string): string | undefined {
  try {
    return decodeURIComponent(s.replaceAll("+", " "));
  } catch {
    return undefined;
  }
}

// ---------------------------------------------------------------------------------------
// Body decoding

function parseMediaType(header: string | undefined): { type: string; charset: string | undefined } | undefined {
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

function requireUtf8Charset(media: { charset: string | undefined } | undefined): void {
  if (media?.charset !== undefined && media.charset !== "utf-8" && media.charset !== "utf8") {
    throw invalidField("body", `charset ${JSON.stringify(media.charset)} is not supported; send utf-8`);
  }
}

/**
 * The REST door decompresses nothing, so a compressed body (gzip, corrupt or not) is refused
 * as what it is rather than failing later as "not valid UTF-8".
 */
function requireIdentityEncoding(encoding: string | undefined): void {
  if (encoding === undefined) return;
  const value = encoding.trim().toLowerCase();
  if (value !== "" && value !== "identity") {
    throw invalidField("body", `content encoding ${JSON.stringify(value)} is not supported; send the body uncompressed`);
  }
}

function decodeUtf8(bytes: Uint8Array, field: string): string {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw invalidField(field, "is not valid UTF-8");
  }
}

function parseJson(bytes: Uint8Array): JsonValue {
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
function decodeJsonMessage(schema: DescMessage, json: JsonValue): Message {
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
function fieldByJsonKey(schema: DescMessage, key: string): DescField | undefined {
  return schema.fields.find((f) => f.jsonName === key || f.name === key);
}

function isObject(v: unknown): v is JsonObject {
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

/** A violation description for a value that did not decode. Never echoes the value. */
function expectation(field: DescField): string {
  if (field.oneof) {
    // May also be the "two members of a oneof" case.
    return `has an invalid value, or another member of ${field.oneof.name} is set`;
  }
  switch (field.fieldKind) {
    case "list":
      return "must be a JSON array of valid values";
    case "map":
      return "must be a JSON object with valid keys and values";
    case "enum":
      return enumExpectation(field.enum);
    case "message":
      return messageExpectation(field.message);
    case "scalar":
      return scalarExpectation(field.scalar);
  }
  return "has an invalid value";
}

function enumExpectation(e: DescEnum): string {
  return `must be one of ${e.values.map((v) => v.name).join(", ")}`;
}

function messageExpectation(m: DescMessage): string {
  switch (m.typeName) {
    case TimestampSchema.typeName:
      return 'must be an RFC 3339 timestamp, e.g. "2026-11-22T10:00:00Z"';
    case DurationSchema.typeName:
      return 'must be a duration in seconds, e.g. "1.5s"';
    case FieldMaskSchema.typeName:
      return "must be a comma-separated list of field paths";
  }
  const wrapper = WRAPPERS.get(m.typeName);
  if (wrapper) return scalarExpectation((wrapper.fields[0] as DescField & { scalar: ScalarType }).scalar);
  return "must be a JSON object";
}

function scalarExpectation(t: ScalarType): string {
  switch (t) {
    case ScalarType.STRING:
      return "must be a string";
    case ScalarType.BOOL:
      return "must be true or false";
    case ScalarType.BYTES:
      return "must be base64";
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return "must be a number";
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return "must be a 32-bit integer";
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return "must be an unsigned 32-bit integer";
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return "must be an unsigned 64-bit integer";
    default:
      return "must be a 64-bit integer";
  }
}

// ---------------------------------------------------------------------------------------
// Field paths and values

function protoPath(chain: readonly DescField[]): string {
  return chain.map((f) => f.name).join(".");
}

/** Resolves a query name (proto or JSON name per segment) to a bindable leaf's field chain. */
function resolveQueryKey(schema: DescMessage, key: string): DescField[] {
  const names = key.split(".");
  const chain: DescField[] = [];
  let current: DescMessage = schema;
  for (let i = 0; i < names.length; i++) {
    const field = current.fields.find((f) => f.name === names[i] || f.jsonName === names[i]);
    if (!field) throw invalidField(key, "unknown query parameter");
    chain.push(field);
    const named = [...chain.map((f) => f.name), ...names.slice(i + 1)].join(".");
    const last = i === names.length - 1;
    if (field.fieldKind === "map") throw invalidField(named, "map fields cannot be set from the query string");
    if (field.fieldKind === "list" && field.listKind === "message") {
      throw invalidField(named, "repeated message fields cannot be set from the query string");
    }
    if (field.fieldKind === "message" && !SCALAR_LIKE.has(field.message.typeName)) {
      if (last) throw invalidField(named, "names a message; set its fields instead (e.g. a.b=value)");
      current = field.message;
      continue;
    }
    if (!last) throw invalidField(key, "unknown query parameter");
  }
  return chain;
}

/** The variable's chain relative to the JSON body, or undefined when the body does not cover it. */
function bodyRelativeChain(route: Route, chain: readonly DescField[]): readonly DescField[] | undefined {
  if (route.body === "*") return chain;
  if (route.bodyField && chain[0] === route.bodyField) return chain.slice(1);
  return undefined;
}

/** True when the JSON object carries a non-null value at the chain (proto or JSON names). */
function jsonHas(json: Obj, chain: readonly DescField[]): boolean {
  let current: unknown = json;
  for (const f of chain) {
    if (!isObject(current)) return false;
    const obj: JsonObject = current;
    const key = [f.jsonName, f.name].find((k) => obj[k] !== undefined && obj[k] !== null);
    if (key === undefined) return false;
    current = obj[key];
  }
  return true;
}

/** The reflect value of the leaf at `chain`, or undefined when a message on the way is unset. */
function getLeaf(root: ReflectMessage, chain: readonly DescField[]): unknown {
  let current = root;
  for (const f of chain.slice(0, -1)) {
    if (!current.isSet(f)) return undefined;
    current = current.get(f) as ReflectMessage;
  }
  return current.get(chain[chain.length - 1] as DescField);
}

/** The message holding the chain's leaf, creating (and setting) messages on the way. */
function containerOf(root: ReflectMessage, chain: readonly DescField[], path: string): ReflectMessage {
  let current = root;
  for (const f of chain.slice(0, -1)) {
    if (!current.isSet(f)) {
      checkOneof(current, f, path);
      current.set(f, reflect((f as DescField & { fieldKind: "message" }).message));
    }
    current = current.get(f) as ReflectMessage;
  }
  return current;
}

function setLeaf(root: ReflectMessage, chain: readonly DescField[], value: unknown, path: string): void {
  const container = containerOf(root, chain, path);
  const leaf = chain[chain.length - 1] as DescField;
  checkOneof(container, leaf, path);
  container.set(leaf, value);
}

/** A oneof member may only be set when no other member of its oneof is. */
function checkOneof(container: ReflectMessage, field: DescField, path: string): void {
  if (!field.oneof) return;
  const setCase = container.oneofCase(field.oneof);
  if (setCase !== undefined && setCase !== field) {
    throw invalidField(path, `cannot be set together with ${setCase.name} (oneof ${field.oneof.name})`);
  }
}

function isDefault(v: unknown): boolean {
  return v === "" || v === 0 || v === 0n || v === false || (v instanceof Uint8Array && v.length === 0);
}

function sameValue(a: unknown, b: unknown): boolean {
  if (a instanceof Uint8Array && b instanceof Uint8Array) return a.length === b.length && a.every((x, i) => x === b[i]);
  return a === b;
}

/**
 * Parses one path or query value for `field` (a singular leaf, or one element of a repeated
 * scalar/enum), returning it in protobuf-es reflect form (bigint for 64-bit integers,
 * ReflectMessage for well-known types).
 * @throws ApiError INVALID_ARGUMENT naming `path`.
 */
function parseValue(field: DescField, raw: string, path: string): unknown {
  const bad = (why: string) => invalidField(path, why);
  if (field.fieldKind === "enum" || (field.fieldKind === "list" && field.listKind === "enum")) {
    const e = (field as { enum: DescEnum }).enum;
    const byName = e.values.find((v) => v.name === raw);
    if (byName) return byName.number;
    if (/^-?\d+$/.test(raw)) {
      const byNumber = e.values.find((v) => v.number === Number(raw));
      if (byNumber) return byNumber.number;
    }
    throw bad(enumExpectation(e));
  }
  if (field.fieldKind === "message") {
    const m = field.message;
    if (m.typeName === TimestampSchema.typeName) {
      if (!isRfc3339(raw)) throw bad(messageExpectation(m));
      try {
        return reflect(TimestampSchema, fromJson(TimestampSchema, raw));
      } catch {
        throw bad(messageExpectation(m));
      }
    }
    if (m.typeName === DurationSchema.typeName) {
      if (!/^-?\d+(\.\d{1,9})?s$/.test(raw)) throw bad(messageExpectation(m));
      try {
        return reflect(DurationSchema, fromJson(DurationSchema, raw));
      } catch {
        throw bad(messageExpectation(m));
      }
    }
    if (m.typeName === FieldMaskSchema.typeName) {
      const paths = raw
        .split(",")
        .map((p) => p.trim())
        .filter((p) => p !== "")
        .map((p) => p.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`));
      return reflect(FieldMaskSchema, create(FieldMaskSchema, { paths }));
    }
    const wrapper = WRAPPERS.get(m.typeName) as DescMessage;
    const inner = wrapper.fields[0] as DescField & { scalar: ScalarType };
    return reflect(wrapper, create(wrapper, { value: parseScalar(inner.scalar, raw, bad) } as never));
  }
  return parseScalar((field as { scalar: ScalarType }).scalar, raw, bad);
}

function parseScalar(type: ScalarType, raw: string, bad: (why: string) => ApiError): unknown {
  const int = (min: bigint, max: bigint): bigint => {
    if (!/^-?\d+$/.test(raw)) throw bad(`${scalarExpectation(type)} in decimal`);
    const n = BigInt(raw);
    if (n < min || n > max) throw bad(`is out of range (${scalarExpectation(type)})`);
    return n;
  };
  switch (type) {
    case ScalarType.STRING:
      return raw;
    case ScalarType.BOOL:
      if (raw === "true") return true;
      if (raw === "false") return false;
      throw bad(scalarExpectation(type));
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return Number(int(-(2n ** 31n), 2n ** 31n - 1n));
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return Number(int(0n, 2n ** 32n - 1n));
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      return int(-(2n ** 63n), 2n ** 63n - 1n);
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return int(0n, 2n ** 64n - 1n);
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT: {
      let n: number;
      if (raw === "NaN") n = Number.NaN;
      else if (raw === "Infinity") n = Number.POSITIVE_INFINITY;
      else if (raw === "-Infinity") n = Number.NEGATIVE_INFINITY;
      else if (/^-?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/.test(raw)) n = Number(raw);
      else throw bad(scalarExpectation(type));
      if (Number.isFinite(n) && !Number.isFinite(type === ScalarType.FLOAT ? Math.fround(n) : n)) {
        throw bad(`is out of range (${scalarExpectation(type)})`);
      }
      return n;
    }
    case ScalarType.BYTES: {
      const unpadded = raw.replace(/={1,2}$/, "");
      if (!/^[A-Za-z0-9+/]*$/.test(unpadded) && !/^[A-Za-z0-9_-]*$/.test(unpadded)) throw bad(scalarExpectation(type));
      if (unpadded.length % 4 === 1 || (raw !== unpadded && raw.length % 4 !== 0)) throw bad(scalarExpectation(type));
      return new Uint8Array(Buffer.from(unpadded, "base64"));
    }
  }
  throw bad("cannot be set from the URL");
}

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?(Z|[+-](\d{2}):(\d{2}))$/;

/** RFC 3339 with a real calendar date (protobuf-es alone would roll 02-30 over to 03-01). */
function isRfc3339(s: string): boolean {
  const m = RFC3339.exec(s);
  if (!m) return false;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  return month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth && hour <= 23 && minute <= 59 && second <= 59;
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
