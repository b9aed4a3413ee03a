/**
 * Builds the request message of a REST call from the path variables, the query string and
 * the JSON body, following google.api.http's rules plus these decisions (transcoding.md §8):
 *
 * - `body: "*"` binds the whole JSON body and then no query parameter is accepted;
 *   `body: "<field>"` binds that field; no body rule → a body is rejected, except a
 *   form-encoded POST, whose fields count as query parameters (HTTP/1 STS clients send that).
 * - JSON: must be UTF-8, well-formed, an object; unknown keys are INVALID_ARGUMENT naming
 *   the key (the same policy as the Connect JSON door).
 * - Path variables are authoritative: a body value or a query parameter that names a
 *   path-bound field is INVALID_ARGUMENT when it differs (authorization reads the path).
 * - Query parameters set non-message leaves by proto name or JSON name, through singular
 *   nested messages (`uidp.descendants_of`, `uidp.descendantsOf`); repeated fields take
 *   repeated keys (no comma splitting); a singular field given twice, an unknown name, a
 *   message/map field, or a body-bound field is INVALID_ARGUMENT. Values: strict decimal
 *   integers in range, true/false, enum name or number, Timestamp RFC 3339, Duration "1.5s",
 *   FieldMask comma-separated (snake or camel; stored snake), wrappers as their scalar.
 * - PATCH with a body field and no update_mask: the mask is the JSON keys present in the
 *   body (spec §4 rule 5), proto names, nested objects expanded to leaves, sorted, without
 *   output-only and path-bound fields.
 */
import {
  create,
  type DescField,
  type DescMessage,
  fromJson,
  getOption,
  hasOption,
  type JsonValue,
  type Message,
  ScalarType,
} from "@bufbuild/protobuf";
import { DurationSchema, FieldMaskSchema, TimestampSchema } from "@bufbuild/protobuf/wkt";
import { FieldBehavior, field_behavior } from "../../gen/google/api/field_behavior_pb.js";
import { ApiError, GrpcCode, invalidField } from "../errors/api-error.js";
import type { Route } from "./route-table.js";

export interface BindInput {
  readonly httpMethod: string;
  readonly query: URLSearchParams;
  readonly body: Uint8Array;
  readonly contentType: string | undefined;
}

/** An unsupported media type (HTTP 415; gRPC code INVALID_ARGUMENT). */
export class UnsupportedMediaTypeError extends ApiError {
  override name = "UnsupportedMediaTypeError";
}

const WRAPPERS = new Set([
  "google.protobuf.DoubleValue",
  "google.protobuf.FloatValue",
  "google.protobuf.Int64Value",
  "google.protobuf.UInt64Value",
  "google.protobuf.Int32Value",
  "google.protobuf.UInt32Value",
  "google.protobuf.BoolValue",
  "google.protobuf.StringValue",
  "google.protobuf.BytesValue",
]);
const LEAF_MESSAGES = new Set([
  "google.protobuf.Timestamp",
  "google.protobuf.Duration",
  "google.protobuf.FieldMask",
  ...WRAPPERS,
]);

type Obj = Record<string, unknown>;

/** @throws ApiError INVALID_ARGUMENT (or UnsupportedMediaTypeError) naming the field. */
export function bindRequest(route: Route, vars: readonly string[], input: BindInput): Message {
  const schema = route.method.input;
  const query = new URLSearchParams(input.query);
  let message: Obj;
  let bodyJson: Obj | undefined;
  const mediaType = input.contentType?.split(";")[0]?.trim().toLowerCase();

  if (route.body === "") {
    if (input.body.length > 0) {
      if (input.httpMethod === "POST" && mediaType === "application/x-www-form-urlencoded") {
        for (const [k, v] of new URLSearchParams(decodeUtf8(input.body))) query.append(k, v);
      } else {
        throw invalidField("body", "this method takes no request body");
      }
    }
    message = create(schema) as unknown as Obj;
  } else {
    if (input.body.length > 0 && mediaType !== undefined && mediaType !== "application/json") {
      throw new UnsupportedMediaTypeError(GrpcCode.InvalidArgument, `Invalid argument: body: content type ${JSON.stringify(mediaType)} is not supported; send application/json`, {
        fieldViolations: [{ field: "body", description: "must be application/json" }],
      });
    }
    bodyJson = input.body.length === 0 ? {} : parseJsonObject(input.body);
    if (route.body === "*") {
      message = decodeJson(schema, bodyJson, "") as unknown as Obj;
      const first = [...query.keys()][0];
      if (first !== undefined) throw invalidField(first, "query parameters are not accepted when the body carries the whole request");
    } else {
      const field = route.bodyField as DescField & { fieldKind: "message" };
      message = create(schema) as unknown as Obj;
      message[field.localName] = decodeJson(field.message, bodyJson, "");
    }
  }

  route.variableFields.forEach((chain, i) => {
    const value = parseLeaf(chain[chain.length - 1] as DescField, vars[i] ?? "", chain.map((f) => f.name).join("."));
    setLeaf(message, chain, value, true);
  });

  for (const key of new Set(query.keys())) {
    const values = query.getAll(key);
    const chain = resolveQueryPath(schema, key);
    const path = chain.map((f) => f.name).join(".");
    if (route.bodyField && chain[0] === route.bodyField) throw invalidField(key, "is carried by the request body, not the query string");
    if (route.variableFields.some((v) => sameChain(v, chain))) throw invalidField(key, "is bound by the URL path");
    const leaf = chain[chain.length - 1] as DescField;
    if (leaf.fieldKind === "list") {
      setLeaf(message, chain, values.map((v) => parseLeaf(leaf, v, path)), false);
    } else {
      if (values.length > 1) throw invalidField(path, "must be given at most once");
      setLeaf(message, chain, parseLeaf(leaf, values[0] as string, path), false);
    }
  }

  if (input.httpMethod === "PATCH" && route.bodyField?.fieldKind === "message" && bodyJson) {
    const maskField = schema.fields.find((f) => f.name === "update_mask" && f.fieldKind === "message" && f.message.typeName === "google.protobuf.FieldMask");
    const current = maskField ? (message[maskField.localName] as { paths: string[] } | undefined) : undefined;
    if (maskField && (!current || current.paths.length === 0)) {
      const bound = route.variableFields.filter((c) => c[0] === route.bodyField).map((c) => c.slice(1).map((f) => f.name).join("."));
      const paths = inferMask(route.bodyField.message, bodyJson, "").filter((p) => !bound.includes(p)).sort();
      message[maskField.localName] = create(FieldMaskSchema, { paths });
    }
  }
  return message as unknown as Message;
}

function parseJsonObject(bytes: Uint8Array): Obj {
  const text = decodeUtf8(bytes);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw invalidField("body", "is not valid JSON");
  }
  if (json === null || typeof json !== "object" || Array.isArray(json)) throw invalidField("body", "must be a JSON object");
  return json as Obj;
}

function decodeUtf8(bytes: Uint8Array): string {
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw invalidField("body", "is not valid UTF-8");
  }
  // String.prototype.isWellFormed exists on Node 20; the ES2022 lib typings predate it.
  if (!(text as unknown as { isWellFormed(): boolean }).isWellFormed()) throw invalidField("body", "contains an unpaired surrogate");
  return text;
}

/** fromJson with protobuf-es errors turned into field violations. */
function decodeJson(schema: DescMessage, json: Obj, prefix: string): Message {
  try {
    return fromJson(schema, json as JsonValue, { ignoreUnknownFields: false });
  } catch (err) {
    const text = err instanceof Error ? err.message : String(err);
    const unknown = /key "([^"]+)" is unknown/.exec(text);
    if (unknown) throw invalidField(`${prefix}${unknown[1]}`, "unknown field");
    const bad = /cannot decode field ([\w.]+) from JSON/.exec(text);
    if (bad) {
      const name = (bad[1] as string).split(".").pop() as string;
      throw invalidField(`${prefix}${name}`, "has a value of the wrong type or format");
    }
    throw invalidField("body", "does not match the request message");
  }
}

function resolveQueryPath(schema: DescMessage, key: string): DescField[] {
  const chain: DescField[] = [];
  let current: DescMessage = schema;
  const names = key.split(".");
  names.forEach((name, i) => {
    const field = current.fields.find((f) => f.name === name || f.jsonName === name);
    if (!field) throw invalidField(key, "unknown query parameter");
    chain.push(field);
    const last = i === names.length - 1;
    if (field.fieldKind === "message" && !LEAF_MESSAGES.has(field.message.typeName)) {
      if (last) throw invalidField(key, "names a message; set its fields instead (e.g. a.b=value)");
      current = field.message;
    } else if (!last) {
      throw invalidField(key, "unknown query parameter");
    } else if (field.fieldKind === "map") {
      throw invalidField(key, "map fields cannot be set from the query string");
    } else if (field.fieldKind === "list" && field.listKind === "message") {
      throw invalidField(key, "repeated messages cannot be set from the query string");
    }
  });
  return chain;
}

function sameChain(a: readonly DescField[], b: readonly DescField[]): boolean {
  return a.length === b.length && a.every((f, i) => f === b[i]);
}

/** Sets a leaf, creating the messages on the way. A path value must not contradict the body. */
function setLeaf(message: Obj, chain: readonly DescField[], value: unknown, fromPath: boolean): void {
  let target = message;
  for (const f of chain.slice(0, -1)) {
    if (f.fieldKind !== "message") break;
    target[f.localName] ??= create(f.message);
    target = target[f.localName] as Obj;
  }
  const leaf = chain[chain.length - 1] as DescField;
  const existing = target[leaf.localName];
  if (fromPath && existing !== undefined && existing !== "" && existing !== 0 && existing !== value) {
    throw invalidField(chain.map((f) => f.name).join("."), "in the body differs from the value in the URL path");
  }
  target[leaf.localName] = value;
}

function parseLeaf(field: DescField, raw: string, path: string): unknown {
  const bad = (why: string) => invalidField(path, why);
  if (field.fieldKind === "message" || (field.fieldKind === "list" && field.listKind === "message")) {
    const typeName = field.fieldKind === "message" ? field.message.typeName : (field as { message: DescMessage }).message.typeName;
    const msg = field.fieldKind === "message" ? field.message : (field as { message: DescMessage }).message;
    if (typeName === "google.protobuf.FieldMask") {
      const paths = raw.split(",").map((p) => p.trim()).filter(Boolean).map((p) => p.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`));
      return create(FieldMaskSchema, { paths });
    }
    if (typeName === "google.protobuf.Timestamp" || typeName === "google.protobuf.Duration") {
      try {
        return fromJson(typeName === "google.protobuf.Timestamp" ? TimestampSchema : DurationSchema, raw);
      } catch {
        throw bad(typeName === "google.protobuf.Timestamp" ? "must be an RFC 3339 timestamp" : 'must be a duration like "1.5s"');
      }
    }
    // Wrapper types: protobuf-es unboxes singular wrapper fields, so the field holds the
    // primitive itself (repeated messages never reach here: they are refused earlier).
    const inner = msg.fields[0] as DescField & { fieldKind: "scalar" };
    return parseScalar(inner.scalar, raw, bad);
  }
  if (field.fieldKind === "enum" || (field.fieldKind === "list" && field.listKind === "enum")) {
    const desc = (field as { enum: { values: { name: string; number: number }[] } }).enum;
    const byName = desc.values.find((v) => v.name === raw);
    if (byName) return byName.number;
    if (/^-?\d+$/.test(raw) && desc.values.some((v) => v.number === Number(raw))) return Number(raw);
    throw bad(`must be one of ${desc.values.map((v) => v.name).join(", ")}`);
  }
  const scalar = (field as { scalar: ScalarType }).scalar;
  return parseScalar(scalar, raw, bad);
}

function parseScalar(type: ScalarType, raw: string, bad: (why: string) => ApiError): unknown {
  const intIn = (min: bigint, max: bigint) => {
    if (!/^-?\d+$/.test(raw)) throw bad("must be a decimal integer");
    const n = BigInt(raw);
    if (n < min || n > max) throw bad("is out of range");
    return n;
  };
  switch (type) {
    case ScalarType.STRING:
      return raw;
    case ScalarType.BOOL:
      if (raw === "true") return true;
      if (raw === "false") return false;
      throw bad("must be true or false");
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return Number(intIn(-2147483648n, 2147483647n));
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return Number(intIn(0n, 4294967295n));
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      return intIn(-9223372036854775808n, 9223372036854775807n);
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return intIn(0n, 18446744073709551615n);
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT: {
      const n = Number(raw);
      if (raw.trim() === "" || !Number.isFinite(n)) throw bad("must be a number");
      return n;
    }
    case ScalarType.BYTES:
      if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(raw)) throw bad("must be base64");
      return new Uint8Array(Buffer.from(raw, raw.includes("-") || raw.includes("_") ? "base64url" : "base64"));
  }
  throw bad("cannot be set from the query string");
}

function inferMask(schema: DescMessage, json: Obj, prefix: string): string[] {
  const out: string[] = [];
  for (const [key, value] of Object.entries(json)) {
    const field = schema.fields.find((f) => f.jsonName === key || f.name === key);
    if (!field) continue; // already rejected by fromJson
    const behaviors = hasOption(field, field_behavior) ? getOption(field, field_behavior) : [];
    if (behaviors.includes(FieldBehavior.OUTPUT_ONLY)) continue;
    if (
      field.fieldKind === "message" &&
      !LEAF_MESSAGES.has(field.message.typeName) &&
      value !== null &&
      typeof value === "object" &&
      !Array.isArray(value) &&
      Object.keys(value).length > 0
    ) {
      out.push(...inferMask(field.message, value as Obj, `${prefix}${field.name}.`));
    } else {
      out.push(`${prefix}${field.name}`);
    }
  }
  return out;
}
