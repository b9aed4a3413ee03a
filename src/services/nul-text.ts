/**
 * The NUL rule (validate.ts `checkNoNul`) applied to a whole request, once, instead of a line
 * per string field in every service: a walk over the decoded request message's string fields,
 * compiled from the descriptor once per message type at start-up.
 *
 * Which calls pay for it: only the methods that write, i.e. every method with an HTTP binding
 * that is not GET (creates, updates, deletes, exchanges, batch calls). A GET method only reads,
 * so a NUL in its request cannot be stored; it finds nothing, as any other unknown value would.
 * Deciding per method from the descriptor (rather than by looking for a `\u0000` escape in the
 * raw body) covers every door alike: binary protobuf bodies hold plain 0x00 bytes everywhere,
 * so only the decoded message says where a NUL is a character of a string.
 *
 * The importer's records are plain JSON, walked by `nulInJson` below with the same rule.
 */
import { type DescField, type DescMessage, type DescMethod, getOption, hasOption, ScalarType } from "@bufbuild/protobuf";
import { http } from "../../gen/google/api/annotations_pb.js";
import { type FieldViolation, invalidArgument } from "../errors/api-error.js";
import { checkNoNul, NUL_DESCRIPTION } from "./validate.js";

/** Throws INVALID_ARGUMENT naming every string field of `request` that holds a NUL. */
export type RequestCheck = (request: unknown) => void;

type Walk = (value: unknown, path: string, out: FieldViolation[]) => void;

/** True when the method only reads: every HTTP binding it declares is a GET. */
function isReadOnly(method: DescMethod): boolean {
  if (method.methodKind !== "unary" || !hasOption(method, http)) return false;
  const rule = getOption(method, http);
  return rule.pattern.case === "get" && rule.additionalBindings.every((b) => b.pattern.case === "get");
}

/**
 * The check a method's requests go through before its implementation, or undefined when it
 * needs none (a read-only method, or a request type with no string anywhere in it).
 */
export function writeRequestCheck(method: DescMethod): RequestCheck | undefined {
  if (method.methodKind !== "unary" || isReadOnly(method)) return undefined;
  const walk = messageWalk(method.input, new Map());
  const test = messageTest(method.input, new Map());
  if (!walk || !test) return undefined;
  return (request) => {
    // The scan that every write pays is the allocation-free test; the walk that builds field
    // paths runs only for a request that holds a NUL somewhere.
    if (!test(request)) return;
    const found: FieldViolation[] = [];
    walk(request, "", found);
    if (found.length > 0) throw invalidArgument(found);
  };
}

type Test = (value: unknown) => boolean;

const hasNul: Test = (value) => typeof value === "string" && value.includes("\u0000");

/** True when any string in a message of this type holds a NUL; undefined when none can occur. */
function messageTest(message: DescMessage, seen: Map<DescMessage, Test | undefined | "pending">): Test | undefined {
  const known = seen.get(message);
  if (known === "pending") return (value) => (seen.get(message) as Test | undefined)?.(value) ?? false;
  if (seen.has(message)) return known as Test | undefined;
  seen.set(message, "pending");
  const steps: Test[] = [];
  for (const field of message.fields) {
    const step = fieldTest(field, seen);
    if (!step) continue;
    const own = field.localName;
    const oneof = field.oneof?.localName;
    steps.push(
      oneof === undefined
        ? (msg) => step((msg as Record<string, unknown>)[own])
        : (msg) => {
            const chosen = (msg as Record<string, { case?: string; value?: unknown } | undefined>)[oneof];
            return chosen?.case === own && step(chosen.value);
          },
    );
  }
  const test: Test | undefined =
    steps.length === 0
      ? undefined
      : (msg) => {
          if (typeof msg !== "object" || msg === null) return false;
          for (const step of steps) if (step(msg)) return true;
          return false;
        };
  seen.set(message, test);
  return test;
}

function fieldTest(field: DescField, seen: Map<DescMessage, Test | undefined | "pending">): Test | undefined {
  switch (field.fieldKind) {
    case "scalar":
      return field.scalar === ScalarType.STRING ? hasNul : undefined;
    case "message":
      return field.message.typeName === "google.protobuf.StringValue" ? hasNul : messageTest(field.message, seen);
    case "list": {
      const each =
        field.listKind === "scalar"
          ? field.scalar === ScalarType.STRING
            ? hasNul
            : undefined
          : field.listKind === "message"
            ? messageTest(field.message, seen)
            : undefined;
      if (!each) return undefined;
      return (value) => {
        if (!Array.isArray(value)) return false;
        for (const item of value) if (each(item)) return true;
        return false;
      };
    }
    case "map": {
      const keyIsText = field.mapKey === ScalarType.STRING;
      const each =
        field.mapKind === "scalar"
          ? field.scalar === ScalarType.STRING
            ? hasNul
            : undefined
          : field.mapKind === "message"
            ? messageTest(field.message, seen)
            : undefined;
      if (!keyIsText && !each) return undefined;
      return (value) => {
        if (typeof value !== "object" || value === null) return false;
        for (const key in value) {
          if ((keyIsText && key.includes("\u0000")) || each?.((value as Record<string, unknown>)[key])) return true;
        }
        return false;
      };
    }
    default:
      return undefined;
  }
}

/**
 * The walk of one message type, or undefined when no string can occur in it. `seen` holds the
 * walks being built, so a recursive message type refers to its own walk instead of looping.
 */
function messageWalk(message: DescMessage, seen: Map<DescMessage, Walk | undefined | "pending">): Walk | undefined {
  const known = seen.get(message);
  if (known === "pending") return (value, path, out) => (seen.get(message) as Walk | undefined)?.(value, path, out);
  if (seen.has(message)) return known as Walk | undefined;
  seen.set(message, "pending");
  const steps: Walk[] = [];
  for (const field of message.fields) {
    const step = fieldWalk(field, seen);
    if (!step) continue;
    const oneof = field.oneof;
    const own = field.localName;
    steps.push(
      oneof
        ? (msg, path, out) => {
            const chosen = (msg as Record<string, { case?: string; value?: unknown } | undefined>)[oneof.localName];
            if (chosen?.case === own) step(chosen.value, path, out);
          }
        : (msg, path, out) => step((msg as Record<string, unknown>)[own], path, out),
    );
  }
  const walk: Walk | undefined =
    steps.length === 0
      ? undefined
      : (msg, path, out) => {
          if (typeof msg !== "object" || msg === null) return;
          for (const step of steps) step(msg, path, out);
        };
  seen.set(message, walk);
  return walk;
}

/** The walk of one field's value (a string, a message, a list or a map), or undefined. */
function fieldWalk(field: DescField, seen: Map<DescMessage, Walk | undefined | "pending">): Walk | undefined {
  const name = field.name;
  const at = (path: string) => (path === "" ? name : `${path}.${name}`);
  switch (field.fieldKind) {
    case "scalar":
      return field.scalar === ScalarType.STRING ? (value, path, out) => pushNul(value, at(path), out) : undefined;
    case "message": {
      // Wrapper types (google.protobuf.StringValue) arrive unboxed, as a plain string.
      if (field.message.typeName === "google.protobuf.StringValue") return (value, path, out) => pushNul(value, at(path), out);
      const inner = messageWalk(field.message, seen);
      return inner ? (value, path, out) => inner(value, at(path), out) : undefined;
    }
    case "list": {
      const each: Walk | undefined =
        field.listKind === "scalar"
          ? field.scalar === ScalarType.STRING
            ? (value, path, out) => pushNul(value, path, out)
            : undefined
          : field.listKind === "message"
            ? messageWalk(field.message, seen)
            : undefined;
      if (!each) return undefined;
      return (value, path, out) => {
        if (!Array.isArray(value)) return;
        for (let i = 0; i < value.length; i++) each(value[i], `${at(path)}[${i}]`, out);
      };
    }
    case "map": {
      const keyIsText = field.mapKey === ScalarType.STRING;
      const each: Walk | undefined =
        field.mapKind === "scalar"
          ? field.scalar === ScalarType.STRING
            ? (value, path, out) => pushNul(value, path, out)
            : undefined
          : field.mapKind === "message"
            ? messageWalk(field.message, seen)
            : undefined;
      if (!keyIsText && !each) return undefined;
      return (value, path, out) => {
        if (typeof value !== "object" || value === null) return;
        const base = at(path);
        for (const [key, entry] of Object.entries(value)) {
          // The key is the client's own text: quoted, so a NUL in it is written as an escape.
          const where = `${base}[${JSON.stringify(key)}]`;
          if (keyIsText && key.includes("\u0000")) out.push({ field: where, description: `has a key that ${NUL_DESCRIPTION}` });
          each?.(entry, where, out);
        }
      };
    }
    default:
      return undefined;
  }
}

function pushNul(value: unknown, field: string, out: FieldViolation[]): void {
  if (typeof value !== "string") return;
  const violation = checkNoNul(field, value);
  if (violation) out.push(violation);
}

/**
 * Every string (key or value) holding a NUL in a parsed JSON value, by its path in the record
 * (`repo.description`, `advisory.events[0].note`). For the importer, whose records are JSON.
 */
export function nulInJson(value: unknown, path = "", out: FieldViolation[] = []): FieldViolation[] {
  if (typeof value === "string") {
    const violation = checkNoNul(path === "" ? "record" : path, value);
    if (violation) out.push(violation);
  } else if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) nulInJson(value[i], `${path}[${i}]`, out);
  } else if (typeof value === "object" && value !== null) {
    for (const [key, entry] of Object.entries(value)) {
      const where = path === "" ? key : `${path}.${key}`;
      if (key.includes("\u0000")) out.push({ field: JSON.stringify(where), description: `is a key that ${NUL_DESCRIPTION}` });
      else nulInJson(entry, where, out);
    }
  }
  return out;
}
