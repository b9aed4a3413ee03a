/**
 * What a client depends on in a proto file, written out as comparable lines: for each message
 * its fields (number, name, JSON name, type, oneof, presence, field behaviour, iam_scope) and
 * resource option, for each enum its values, for each service its methods (input, output,
 * kind), their HTTP rules and their `chainguard.annotations.iam` and `.events` annotations.
 * Comments, imports, file paths and language options (go_package, java_*) are left out: they
 * are not on any wire.
 *
 * Two uses: the published-compatibility test compares our files with the published ones
 * (test/proto/published.test.ts), and the GA twin test compares each v2 file with its
 * v2beta1 twin after renaming the version (test/proto/ga-twins.test.ts).
 */
import { type DescEnum, type DescField, type DescFile, type DescMessage, type DescMethod, type DescService, getOption, hasOption } from "@bufbuild/protobuf";
import { events } from "../../gen/chainguard/annotations/events_pb.js";
import { iam, iam_scope } from "../../gen/chainguard/annotations/iam_pb.js";
import { http } from "../../gen/google/api/annotations_pb.js";
import { field_behavior, FieldBehavior } from "../../gen/google/api/field_behavior_pb.js";
import type { HttpRule } from "../../gen/google/api/http_pb.js";
import { resource } from "../../gen/google/api/resource_pb.js";
import { Capability } from "../../gen/chainguard/capabilities/capabilities_pb.js";

/** Full type name (after `rename`) → its lines. */
export type Digest = Map<string, string[]>;

export function digestFiles(files: readonly DescFile[], rename: (text: string) => string = (s) => s): Digest {
  const out: Digest = new Map();
  const add = (name: string, lines: string[]) => out.set(rename(name), lines.map(rename));
  const walkMessage = (m: DescMessage) => {
    add(m.typeName, messageLines(m));
    for (const n of m.nestedMessages) walkMessage(n);
    for (const e of m.nestedEnums) add(e.typeName, enumLines(e));
  };
  for (const file of files) {
    for (const m of file.messages) walkMessage(m);
    for (const e of file.enums) add(e.typeName, enumLines(e));
    for (const s of file.services) add(s.typeName, serviceLines(s));
  }
  return out;
}

/** Differences of `actual` from `expected`, one line each (empty: the same). */
export function digestDifferences(expected: Digest, actual: Digest): string[] {
  const diffs: string[] = [];
  for (const [name, lines] of expected) {
    const got = actual.get(name);
    if (!got) {
      diffs.push(`${name}: missing`);
      continue;
    }
    for (const l of lines) if (!got.includes(l)) diffs.push(`${name}: lacks ${l}`);
    for (const l of got) if (!lines.includes(l)) diffs.push(`${name}: has ${l}`);
    if (diffs.length === 0 && lines.join("\n") !== got.join("\n")) diffs.push(`${name}: declared in another order`);
  }
  for (const name of actual.keys()) if (!expected.has(name)) diffs.push(`${name}: not expected`);
  return diffs;
}

function messageLines(m: DescMessage): string[] {
  const lines = m.fields.map(fieldLine);
  if (hasOption(m, resource)) {
    const r = getOption(m, resource);
    lines.push(`resource ${r.type} ${r.pattern.join(" ")}`);
  }
  return lines;
}

function fieldLine(f: DescField): string {
  const parts = [`field ${f.number} ${f.name} json=${f.jsonName} ${fieldType(f)}`];
  if (f.oneof) parts.push(`oneof=${f.oneof.name}`);
  if (f.proto.proto3Optional) parts.push("optional");
  if (hasOption(f, field_behavior))
    parts.push(
      `behavior=${getOption(f, field_behavior)
        .map((b) => FieldBehavior[b])
        .join(",")}`,
    );
  if (getOption(f, iam_scope)) parts.push("iam_scope");
  return parts.join(" ");
}

function fieldType(f: DescField): string {
  switch (f.fieldKind) {
    case "scalar":
      return `scalar:${f.scalar}`;
    case "enum":
      return `enum:${f.enum.typeName}`;
    case "message":
      return `message:${f.message.typeName}`;
    case "list":
      return `repeated ${f.listKind === "scalar" ? `scalar:${f.scalar}` : f.listKind === "enum" ? `enum:${f.enum.typeName}` : `message:${f.message.typeName}`}`;
    case "map":
      return `map<${f.mapKey}, ${f.mapKind === "scalar" ? `scalar:${f.scalar}` : f.mapKind === "enum" ? `enum:${f.enum.typeName}` : `message:${f.message.typeName}`}>`;
  }
}

function enumLines(e: DescEnum): string[] {
  return e.values.map((v) => `value ${v.number} ${v.name}`);
}

function serviceLines(s: DescService): string[] {
  return s.methods.flatMap(methodLines);
}

function methodLines(m: DescMethod): string[] {
  const lines = [`rpc ${m.name}(${m.input.typeName}) returns (${m.output.typeName}) ${m.methodKind}`];
  if (hasOption(m, http)) lines.push(...httpLines(m.name, getOption(m, http)));
  if (hasOption(m, iam)) {
    const mode = getOption(m, iam).mode;
    if (mode.case === "disabled") lines.push(`${m.name} iam disabled`);
    else if (mode.case === "enabled") {
      const caps = mode.value.capabilities.map((c) => `${Capability[c] ?? "?"}=${c}`).join(",");
      lines.push(`${m.name} iam enabled [${caps}]${mode.value.unscoped ? " unscoped" : ""}`);
    }
  }
  if (hasOption(m, events)) {
    const e = getOption(m, events);
    lines.push(`${m.name} events ${e.type} [${e.extensions.join(",")}] audience=${e.audience}`);
  }
  return lines;
}

function httpLines(method: string, rule: HttpRule): string[] {
  const own = `${method} http ${rule.pattern.case ?? "none"} ${rule.pattern.case === "custom" ? `${rule.pattern.value.kind} ${rule.pattern.value.path}` : (rule.pattern.value ?? "")} body=${rule.body} response_body=${rule.responseBody}`;
  return [own, ...rule.additionalBindings.flatMap((b) => httpLines(`${method} (additional)`, b))];
}
