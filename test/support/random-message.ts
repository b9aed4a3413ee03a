/**
 * Random messages of any type, from its descriptor, for differential tests: every field kind
 * set or left at its zero, with the values serialisers get wrong (negative and 64-bit
 * integers, NaN and ±Infinity, -0, empty and unicode strings with escapes, empty bytes, enum
 * numbers the schema does not name, map keys such as `__proto__`, Timestamps at the ends of
 * their range and with nanos). Deterministic for a given seed.
 */
import { create, type DescField, type DescMessage, type Message, ScalarType } from "@bufbuild/protobuf";
import { FeatureSet_FieldPresence } from "@bufbuild/protobuf/wkt";

/** Mulberry32: small, fast and good enough to pick test values. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const STRINGS = ["", "a", "groups/x", 'quote " and \\ backslash', "new\nline\ttab", "\u0000\u001f", "ünïcødé ☃ 𝄞", "\u2028\u2029", "__proto__", "constructor"];
const MAP_KEYS = ["k", "", "__proto__", "toString", "with space", "ünï"];
const INT32 = [0, 1, -1, 2147483647, -2147483648, 42];
const UINT32 = [0, 1, 4294967295, 42];
const INT64 = [0n, 1n, -1n, 9007199254740993n, -9223372036854775808n, 9223372036854775807n];
const UINT64 = [0n, 1n, 9007199254740993n, 18446744073709551615n];
const DOUBLES = [0, -0, 1.5, -2.25, 1e21, 5e-324, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY];
/** Seconds for Timestamps: the ends of the proto3 JSON range and ordinary times. */
const SECONDS = [0n, -62135596800n, 253402300799n, 1795860000n, 951782400n, -1n];

export interface RandomOptions {
  /** Chance a Timestamp is out of the JSON range or has bad nanos (both writers must throw). */
  readonly invalidTimestamp?: number;
  readonly maxDepth?: number;
}

export function randomMessage(desc: DescMessage, rnd: () => number, options: RandomOptions = {}, depth = 0): Message {
  const m = create(desc) as unknown as Record<string, unknown>;
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
  if (desc.typeName === "google.protobuf.Timestamp") {
    const bad = rnd() < (options.invalidTimestamp ?? 0);
    m.seconds = bad && rnd() < 0.5 ? pick([-62135596801n, 253402300800n]) : rnd() < 0.5 ? pick(SECONDS) : BigInt(Math.floor(rnd() * 4e9) - 1e9);
    m.nanos = bad ? pick([-1, 1_000_000_000]) : pick([0, 1, 999_999, 1_000_000, 123_456_000, 123_456_789, 999_999_999]);
    return m as unknown as Message;
  }
  const maxDepth = options.maxDepth ?? 3;
  const value = (field: DescField, kind: "scalar" | "enum" | "message", scalar?: ScalarType): unknown => {
    if (kind === "message") return randomMessage((field as { message: DescMessage }).message, rnd, options, depth + 1);
    if (kind === "enum") {
      const values = (field as { enum: { values: readonly { number: number }[] } }).enum.values;
      return rnd() < 0.1 ? 99 : pick(values).number;
    }
    switch (scalar) {
      case ScalarType.STRING:
        return pick(STRINGS);
      case ScalarType.BOOL:
        return rnd() < 0.5;
      case ScalarType.BYTES:
        return Uint8Array.from({ length: Math.floor(rnd() * 5) }, () => Math.floor(rnd() * 256));
      case ScalarType.DOUBLE:
      case ScalarType.FLOAT:
        return pick(DOUBLES);
      case ScalarType.INT32:
      case ScalarType.SINT32:
      case ScalarType.SFIXED32:
        return pick(INT32);
      case ScalarType.UINT32:
      case ScalarType.FIXED32:
        return pick(UINT32);
      case ScalarType.UINT64:
      case ScalarType.FIXED64:
        return pick(UINT64);
      default:
        return pick(INT64);
    }
  };
  const deep = depth >= maxDepth;
  for (const member of desc.oneofs) {
    const candidates = member.fields.filter((f) => !(deep && f.fieldKind === "message"));
    if (candidates.length === 0 || rnd() < 0.3) continue;
    const f = pick(candidates);
    m[member.localName] = { case: f.localName, value: value(f, f.fieldKind as "scalar" | "enum" | "message", (f as { scalar?: ScalarType }).scalar) };
  }
  for (const field of desc.fields) {
    if (field.oneof) continue;
    if (field.fieldKind === "list") {
      if (deep && field.listKind === "message") continue;
      const n = Math.floor(rnd() * 3);
      m[field.localName] = Array.from({ length: n }, () => value(field, field.listKind, field.scalar));
    } else if (field.fieldKind === "map") {
      if (deep && field.mapKind === "message") continue;
      const record: Record<string, unknown> = {};
      for (let i = Math.floor(rnd() * 3); i > 0; i--) {
        Object.defineProperty(record, keyFor(field.mapKey, pick), {
          value: value(field, field.mapKind, field.scalar),
          enumerable: true,
          writable: true,
          configurable: true,
        });
      }
      m[field.localName] = record;
    } else if (field.fieldKind === "message") {
      if (!deep && rnd() < 0.6) m[field.localName] = value(field, "message");
    } else if (field.presence === FeatureSet_FieldPresence.IMPLICIT) {
      // Half left at the zero value create() gave it.
      if (rnd() < 0.5) m[field.localName] = value(field, field.fieldKind, field.fieldKind === "scalar" ? field.scalar : undefined);
    } else if (rnd() < 0.5) {
      m[field.localName] = value(field, field.fieldKind, field.fieldKind === "scalar" ? field.scalar : undefined);
    }
  }
  return m as unknown as Message;
}

/** A map key in protobuf-es's local form (an object key: the key's string form). */
function keyFor(key: ScalarType, pick: <T>(xs: readonly T[]) => T): string {
  switch (key) {
    case ScalarType.STRING:
      return pick(MAP_KEYS);
    case ScalarType.BOOL:
      return pick(["true", "false"]);
    default:
      return String(pick([0, 1, -1, 42]));
  }
}
