/**
 * One value of a path variable or query parameter (or form field), parsed from its text for
 * its field, and the words a violation uses to say what a field takes (the JSON body's
 * violations use them too: json-body.ts).
 *
 * - Integers as strict decimal within the type's range (`1e3`, `10abc`, `+1`, overflow:
 *   rejected); 64-bit integers likewise, as decimal strings; floats as decimal numbers or
 *   NaN/Infinity/-Infinity (float32 overflow rejected); bools `true`/`false`; enums by exact
 *   name or declared number; Timestamp RFC 3339 (a real calendar date, `T` and `Z` upper
 *   case); Duration in the proto JSON form (`1.5s`, not `90m`); FieldMask comma-separated,
 *   each path snake_case or lowerCamelCase, stored snake_case; wrappers as their scalar;
 *   bytes standard or URL-safe base64, padding optional.
 * - A violation description never echoes the value.
 */
import { create, type DescEnum, type DescField, type DescMessage, fromJson, ScalarType } from "@bufbuild/protobuf";
import { reflect } from "@bufbuild/protobuf/reflect";
import {
  BoolValueSchema,
  BytesValueSchema,
  DoubleValueSchema,
  DurationSchema,
  FieldMaskSchema,
  FloatValueSchema,
  Int32ValueSchema,
  Int64ValueSchema,
  StringValueSchema,
  TimestampSchema,
  UInt32ValueSchema,
  UInt64ValueSchema,
} from "@bufbuild/protobuf/wkt";
import { type ApiError, invalidField } from "../errors/api-error.js";

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
/** Well-known message types whose JSON form is a scalar: leaves for the query; a body of one need not be an object. */
export const SCALAR_LIKE = new Set([TimestampSchema.typeName, DurationSchema.typeName, FieldMaskSchema.typeName, ...WRAPPERS.keys()]);

/** A violation description for a value that did not decode. Never echoes the value. */
export function expectation(field: DescField): string {
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

/**
 * Parses one path or query value for `field` (a singular leaf, or one element of a repeated
 * scalar/enum), returning it in protobuf-es reflect form (bigint for 64-bit integers,
 * ReflectMessage for well-known types).
 * @throws ApiError INVALID_ARGUMENT naming `path`.
 */
export function parseValue(field: DescField, raw: string, path: string): unknown {
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
