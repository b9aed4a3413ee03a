/**
 * The JSON writer of the REST door and of the Connect fast door: a message straight to the JSON
 * value of its success body, in one pass, compiled once per message type from its descriptor.
 * It knows nothing of either door, so it sits below both (docs/architecture.md, "Layers").
 *
 * Why not protobuf-es `toJson` plus a post-pass (src/transcode/render-response.ts, still the
 * fallback): on a List page that pair was a large share of the server's CPU (docs/performance.md),
 * mostly Timestamps formatted twice (protobuf-es prints 0/3/6/9 fractional digits, the
 * post-pass printed them again with exactly 3) and a second walk over message and JSON. The
 * output is the same value: proto3 JSON as `toJson(schema, m, { alwaysEmitImplicit: true })`
 * writes it (field-number order, lowerCamelCase names, int64 as strings, enum names, bytes
 * as base64, NaN/Infinity as strings, defaults written out), then
 * - every google.protobuf.Timestamp with exactly three fractional digits, truncated;
 * - an enum field with implicit presence at 0 left out.
 * test/unit/json/json-writer.test.ts holds the two paths to that, byte for byte, on
 * random messages of every response type of the API.
 *
 * Only what the API's responses contain is compiled: proto3 scalars, enums, messages, lists,
 * maps, oneofs, Timestamp and Empty; Duration, FieldMask and Any values are handed to
 * protobuf-es `toJson` (the post-pass never touched them). A type that reaches anything else
 * (Struct and Value, whose fields protobuf-es keeps as plain JSON, the wrappers, which it keeps
 * unboxed, required fields, a `__proto__` field name) gets no writer and its responses keep
 * the `toJson` path.
 *
 * A second mode, `proto3`, writes exactly `toJson(schema, m, { alwaysEmitImplicit: true })`,
 * without the REST post-pass (Timestamps with 0, 3, 6 or 9 fractional digits as protobuf-es
 * prints them, zero enums written): the Connect door's JSON answers
 * (src/server/fast-unary/connect.ts), which connect-node would write with protobuf-es.
 * The same test holds that mode to `toJson` byte for byte.
 */
import { type DescEnum, type DescField, type DescMessage, type JsonObject, type JsonValue, type Message, ScalarType, toJson } from "@bufbuild/protobuf";
import { FeatureSet_FieldPresence } from "@bufbuild/protobuf/wkt";
import { base64Encode } from "@bufbuild/protobuf/wire";

/** Message (local protobuf-es representation) → its JSON value. Throws like `toJson` does. */
export type JsonWriter = (message: unknown) => JsonValue;

/** `rest`: the REST door's bodies (toJson plus the post-pass); `proto3`: toJson itself. */
export type JsonMode = "rest" | "proto3";

/** One compilation: its mode, and the writers of the types being compiled (recursion). */
interface Compiling {
  readonly mode: JsonMode;
  readonly started: Map<DescMessage, JsonWriter>;
}

type Local = Record<string, unknown>;
type ValueWriter = (value: unknown) => JsonValue;
type FieldWriter = (message: Local, json: JsonObject) => void;

const TIMESTAMP = "google.protobuf.Timestamp";
const EMPTY = "google.protobuf.Empty";
/** Well-known types whose fields hold the message itself and whose JSON protobuf-es writes. */
const DELEGATED = new Set(["google.protobuf.Duration", "google.protobuf.FieldMask", "google.protobuf.Any"]);
const TO_JSON_OPTIONS = { alwaysEmitImplicit: true } as const;
/** The proto3 JSON range of a Timestamp, in ms (what protobuf-es refuses outside). */
const TIMESTAMP_MS_MIN = Date.parse("0001-01-01T00:00:00Z");
const TIMESTAMP_MS_MAX = Date.parse("9999-12-31T23:59:59Z");

const writers: Record<JsonMode, WeakMap<DescMessage, JsonWriter | null>> = { rest: new WeakMap(), proto3: new WeakMap() };

/** The compiled writer for `desc`, or undefined when its type graph has a kind we do not compile. */
export function jsonWriterFor(desc: DescMessage, mode: JsonMode = "rest"): JsonWriter | undefined {
  let w = writers[mode].get(desc);
  if (w === undefined) {
    w = compilable(desc, new Set()) ? compileMessage(desc, { mode, started: new Map() }) : null;
    writers[mode].set(desc, w);
  }
  return w ?? undefined;
}

/** True when every message type reachable from `desc` is one compileMessage handles. */
function compilable(desc: DescMessage, seen: Set<DescMessage>): boolean {
  if (seen.has(desc)) return true;
  seen.add(desc);
  if (desc.typeName === TIMESTAMP || DELEGATED.has(desc.typeName)) return true;
  if (desc.typeName.startsWith("google.protobuf.") && desc.typeName !== EMPTY) return false;
  for (const field of desc.fields) {
    if (field.jsonName === "__proto__") return false;
    if (
      (field.fieldKind === "scalar" || field.fieldKind === "enum" || field.fieldKind === "message") &&
      field.presence === FeatureSet_FieldPresence.LEGACY_REQUIRED
    )
      return false;
    const nested = nestedMessage(field);
    if (nested && !compilable(nested, seen)) return false;
  }
  return true;
}

/** The message type a field holds: message fields, and lists/maps of messages. */
export function nestedMessage(field: DescField): DescMessage | undefined {
  if (field.fieldKind === "message") return field.message;
  if (field.fieldKind === "list" && field.listKind === "message") return field.message;
  if (field.fieldKind === "map" && field.mapKind === "message") return field.message;
  return undefined;
}

/** `compiling` ties recursive types to one writer each (a type may contain itself). */
function compileMessage(desc: DescMessage, compiling: Compiling): JsonWriter {
  const done = writers[compiling.mode].get(desc) ?? compiling.started.get(desc);
  if (done) return done;
  if (desc.typeName === TIMESTAMP) return compiling.mode === "rest" ? writeTimestamp : writeTimestampProto3;
  if (DELEGATED.has(desc.typeName)) return (message) => toJson(desc, message as Message, TO_JSON_OPTIONS);
  const fieldWriters: FieldWriter[] = [];
  const typeName = desc.typeName;
  const writer: JsonWriter = (message) => {
    const m = message as Local;
    if (m.$typeName !== typeName) throw new Error(`cannot encode ${String(m.$typeName)} as ${typeName} to JSON`);
    const json: JsonObject = {};
    for (let i = 0; i < fieldWriters.length; i++) (fieldWriters[i] as FieldWriter)(m, json);
    return json;
  };
  compiling.started.set(desc, writer);
  // protobuf-es writes fields in field-number order; so do we (the key order of the body).
  for (const field of [...desc.fields].sort((a, b) => a.number - b.number)) fieldWriters.push(compileField(field, compiling));
  return writer;
}

function compileField(field: DescField, compiling: Compiling): FieldWriter {
  const key = field.jsonName;
  const local = field.localName;
  switch (field.fieldKind) {
    case "list": {
      const item = valueWriter(field, field.listKind === "message" ? field.message : undefined, compiling);
      return (m, json) => {
        const items = m[local] as unknown[];
        const out: JsonValue[] = new Array(items.length);
        for (let i = 0; i < items.length; i++) out[i] = item(items[i]);
        json[key] = out;
      };
    }
    case "map": {
      const value = valueWriter(field, field.mapKind === "message" ? field.message : undefined, compiling);
      return (m, json) => {
        const record = m[local] as Local;
        const out: JsonObject = {};
        for (const k of Object.keys(record)) setOwn(out, k, value(record[k]));
        json[key] = out;
      };
    }
    default: {
      const value = valueWriter(field, field.fieldKind === "message" ? field.message : undefined, compiling);
      if (field.oneof) {
        const group = field.oneof.localName;
        return (m, json) => {
          const g = m[group] as { case?: string; value?: unknown };
          if (g.case === local) json[key] = value(g.value);
        };
      }
      if (field.presence !== FeatureSet_FieldPresence.IMPLICIT) {
        // Explicit presence (messages, proto3 `optional`): written when set.
        return (m, json) => {
          const v = m[local];
          if (v !== undefined && Object.hasOwn(m, local)) json[key] = value(v);
        };
      }
      if (field.fieldKind === "enum" && compiling.mode === "rest") {
        // The zero value of an implicit-presence enum carries nothing: left out.
        return (m, json) => {
          const v = m[local];
          if (v !== 0) json[key] = value(v);
        };
      }
      // Implicit-presence scalars: always written, zero values included.
      return (m, json) => {
        json[key] = value(m[local]);
      };
    }
  }
}

/** The writer of one value of `field` (a list item or map value for those kinds). */
function valueWriter(field: DescField, message: DescMessage | undefined, compiling: Compiling): ValueWriter {
  // A recursive type gets its own writer before its fields are compiled; it is complete by
  // the time it first runs.
  if (message) return compileMessage(message, compiling);
  if (field.fieldKind === "enum" || (field.fieldKind === "list" && field.listKind === "enum") || (field.fieldKind === "map" && field.mapKind === "enum")) {
    return enumWriter((field as { enum: DescEnum }).enum, field);
  }
  return scalarWriter((field as { scalar: ScalarType }).scalar, field);
}

function enumWriter(desc: DescEnum, field: DescField): ValueWriter {
  if (desc.typeName === "google.protobuf.NullValue") {
    return (v) => {
      if (typeof v !== "number") throw valueError(field, v);
      return null;
    };
  }
  const names = new Map(desc.values.map((v) => [v.number, v.jsonName]));
  return (v) => {
    if (typeof v !== "number") throw valueError(field, v);
    // A number the schema does not know (open proto3 enums) is written as the number.
    return names.get(v) ?? v;
  };
}

function scalarWriter(scalar: ScalarType, field: DescField): ValueWriter {
  switch (scalar) {
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return (v) => {
        if (typeof v !== "number") throw valueError(field, v);
        return v;
      };
    case ScalarType.FLOAT:
    case ScalarType.DOUBLE:
      return (v) => {
        if (typeof v !== "number") throw valueError(field, v);
        if (Number.isNaN(v)) return "NaN";
        if (v === Number.POSITIVE_INFINITY) return "Infinity";
        if (v === Number.NEGATIVE_INFINITY) return "-Infinity";
        return v;
      };
    case ScalarType.STRING:
      return (v) => {
        if (typeof v !== "string") throw valueError(field, v);
        return v;
      };
    case ScalarType.BOOL:
      return (v) => {
        if (typeof v !== "boolean") throw valueError(field, v);
        return v;
      };
    case ScalarType.BYTES:
      return (v) => {
        if (!(v instanceof Uint8Array)) throw valueError(field, v);
        return base64Encode(v);
      };
    default:
      // The 64-bit integers: decimal strings (bigint, or string/number with jstype options).
      return (v) => {
        if (typeof v === "bigint" || typeof v === "string" || (typeof v === "number" && Number.isInteger(v))) return v.toString();
        throw valueError(field, v);
      };
  }
}

/**
 * google.protobuf.Timestamp as RFC 3339 UTC with exactly three fractional digits, truncated
 * (docs/published-api.md "Resources", "millisecond precision").
 */
function writeTimestamp(message: unknown): string {
  const ts = checkedTimestamp(message);
  return formatMillis(ts.ms + Math.floor(ts.nanos / 1_000_000));
}

/** google.protobuf.Timestamp as protobuf-es writes it: 0, 3, 6 or 9 fractional digits. */
function writeTimestampProto3(message: unknown): string {
  const ts = checkedTimestamp(message);
  const second = formatMillis(ts.ms).slice(0, -5); // without its ".000Z"
  if (ts.nanos === 0) return `${second}Z`;
  const digits = String(ts.nanos + 1_000_000_000).slice(1);
  const fraction = digits.endsWith("000000") ? digits.slice(0, 3) : digits.endsWith("000") ? digits.slice(0, 6) : digits;
  return `${second}.${fraction}Z`;
}

/** The whole seconds (in ms) and nanos of a Timestamp, after proto3 JSON's range and nanos checks. */
function checkedTimestamp(message: unknown): { ms: number; nanos: number } {
  const ts = message as { $typeName?: string; seconds: bigint; nanos: number };
  if (ts.$typeName !== TIMESTAMP) throw new Error(`cannot encode ${String(ts.$typeName)} as ${TIMESTAMP} to JSON`);
  const ms = Number(ts.seconds) * 1000;
  if (!(ms >= TIMESTAMP_MS_MIN && ms <= TIMESTAMP_MS_MAX)) {
    throw new Error(`cannot encode ${TIMESTAMP} to JSON: must be from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z inclusive`);
  }
  if (!(ts.nanos >= 0 && ts.nanos <= 999_999_999)) throw new Error(`cannot encode ${TIMESTAMP} to JSON: nanos must be from 0 to 999999999`);
  return { ms, nanos: ts.nanos };
}

/**
 * `new Date(ms).toISOString()` for ms in the Timestamp range (a four-digit year, three
 * fractional digits), at a fraction of its cost (docs/performance.md): a List page of 50
 * groups formats 100 Timestamps. The civil date comes from the day number
 * (H. Hinnant's days-to-civil algorithm) and is kept for the next call, since the times on a
 * page tend to share a day. test/unit/json/json-writer.test.ts compares the two.
 */
export function formatMillis(ms: number): string {
  const days = Math.floor(ms / 86_400_000);
  let rest = ms - days * 86_400_000;
  if (days !== lastDay) {
    lastDay = days;
    lastDate = civilDate(days);
  }
  const h = Math.floor(rest / 3_600_000);
  rest -= h * 3_600_000;
  const m = Math.floor(rest / 60_000);
  rest -= m * 60_000;
  const s = Math.floor(rest / 1000);
  return `${lastDate}T${TWO[h]}:${TWO[m]}:${TWO[s]}.${THREE[rest - s * 1000]}Z`;
}

const TWO = Array.from({ length: 100 }, (_, i) => String(i).padStart(2, "0"));
const THREE = Array.from({ length: 1000 }, (_, i) => String(i).padStart(3, "0"));
let lastDay = Number.NaN;
let lastDate = "";

/** `YYYY-MM-DD` of a day number (days since 1970-01-01, proleptic Gregorian). */
function civilDate(days: number): string {
  const z = days + 719_468; // days since 0000-03-01
  const era = Math.floor(z / 146_097); // 400-year eras
  const doe = z - era * 146_097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153); // March = 0
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  const year = yoe + era * 400 + (month <= 2 ? 1 : 0);
  return `${String(year).padStart(4, "0")}-${TWO[month]}-${TWO[day]}`;
}

function valueError(field: DescField, value: unknown): Error {
  return new Error(`cannot encode field ${field.parent.typeName}.${field.name} to JSON: unexpected ${typeof value}`);
}

/** Map keys are data: `__proto__` must become an own key, not the object's prototype. */
function setOwn(obj: JsonObject, key: string, value: JsonValue): void {
  if (key === "__proto__") Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  else obj[key] = value;
}
