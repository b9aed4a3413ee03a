/**
 * Which fields an Update changes (docs/published-api.md "Update masks", AIP-134).
 *
 * - An explicit mask (update_mask with at least one path): exactly those fields; `*` means
 *   every field this resource lets an update change (`MaskRules.wildcard`, by default every
 *   mutable field): full replacement with the values given. Paths may be snake_case
 *   or lowerCamelCase. A path naming an OUTPUT_ONLY or IMMUTABLE field, or no field at all,
 *   is INVALID_ARGUMENT with a BadRequest violation on `update_mask`. Duplicates are fine.
 * - No mask: the fields the caller set. Over gRPC/Connect that means fields with a
 *   non-default value (proto3 has no other signal); over REST the transcoder turns the JSON
 *   keys present in the body into an explicit mask, so `""` there does change a field.
 *
 * `resolveUpdatePaths` handles top-level fields only. Resources whose masks reach into
 * nested messages (`oidc.issuer`, the REST door's leaf paths) use `resolveNestedUpdatePaths`,
 * which also accepts `<field>.<sub>` for the message fields it is told about.
 */
import type { DescField, DescMessage, Message } from "@bufbuild/protobuf";
import { getOption, hasOption, isFieldSet } from "@bufbuild/protobuf";
import { reflect } from "@bufbuild/protobuf/reflect";
import type { FieldMask } from "@bufbuild/protobuf/wkt";
import { FieldBehavior, field_behavior } from "../../gen/google/api/field_behavior_pb.js";
import { invalidField } from "../errors/api-error.js";

export interface MaskRules {
  /** Top-level proto field names (snake_case) an update may change. */
  readonly mutable: readonly string[];
  /**
   * What `*` stands for on THIS resource, when it is less than `mutable`: a field only some
   * resources of the type may set (a folder has no `kind` of its own) must not be dragged in
   * by `*`, or "replace everything with what I sent" fails on a field the caller never
   * mentioned. Naming such a field explicitly still reaches the service's own check, with its
   * own message. Defaults to `mutable`.
   */
  readonly wildcard?: readonly string[];
}

/** The fields `*` stands for. */
function wildcardFields(rules: MaskRules): readonly string[] {
  return rules.wildcard ?? rules.mutable;
}

/**
 * Returns the proto names (snake_case) of the fields to change, in `rules.mutable` order.
 * @throws ApiError INVALID_ARGUMENT on `update_mask`.
 */
export function resolveUpdatePaths(schema: DescMessage, resource: Message, mask: FieldMask | undefined, rules: MaskRules): string[] {
  const mutable = new Set(rules.mutable);
  if (!mask || mask.paths.length === 0) {
    return rules.mutable.filter((name) => {
      const field = schema.fields.find((f) => f.name === name);
      return field !== undefined && isFieldSet(resource, field);
    });
  }
  const chosen = new Set<string>();
  for (const raw of mask.paths) {
    const path = raw.trim();
    if (path === "*") {
      for (const name of wildcardFields(rules)) chosen.add(name);
      continue;
    }
    chosen.add(maskedField(schema, path, mutable, path).name);
  }
  return rules.mutable.filter((name) => chosen.has(name));
}

export interface NestedMaskRules extends MaskRules {
  /**
   * Message fields named in `mutable` whose own fields a mask may address as `<field>.<sub>`,
   * each mapped to the sub-fields (snake_case) that may be named that way.
   */
  readonly nested: Readonly<Record<string, readonly string[]>>;
}

/**
 * `resolveUpdatePaths` for resources whose masks reach one level into nested messages
 * (docs/published-api.md "Update masks": the REST door turns `{"oidc":{"issuer":…}}` into `oidc.issuer`).
 *
 * - An explicit mask may name a top-level field (the whole value, message or not) or
 *   `<field>.<sub>` for a field in `rules.nested` (either part snake_case or lowerCamelCase).
 *   `*` means every top-level field of `wildcardFields(rules)`. A top-level path subsumes
 *   its own sub-paths.
 *   OUTPUT_ONLY, unlisted, unknown or deeper paths are INVALID_ARGUMENT on `update_mask`.
 * - No mask: every set top-level field, except that a field in `rules.nested` contributes
 *   `<field>.<sub>` for each listed sub-field set to a non-default value, never itself, so a
 *   partial nested message over gRPC changes what it sets, as the same JSON does over REST.
 *
 * Returns canonical snake_case paths in `rules.mutable` order, each nested field's sub-paths
 * in the order of its list.
 * @throws ApiError INVALID_ARGUMENT on `update_mask`.
 */
export function resolveNestedUpdatePaths(schema: DescMessage, resource: Message, mask: FieldMask | undefined, rules: NestedMaskRules): string[] {
  const whole = new Set<string>();
  const subs = new Set<string>();
  if (!mask || mask.paths.length === 0) {
    const message = reflect(schema, resource);
    for (const name of rules.mutable) {
      const field = schema.fields.find((f) => f.name === name);
      if (field === undefined || !message.isSet(field)) continue;
      const allowed = rules.nested[name];
      if (allowed === undefined || field.fieldKind !== "message") {
        whole.add(name);
        continue;
      }
      const inner = message.get(field);
      for (const sub of allowed) {
        const subField = field.message.fields.find((f) => f.name === sub);
        if (subField !== undefined && inner.isSet(subField)) subs.add(`${name}.${sub}`);
      }
    }
  } else {
    const mutable = new Set(rules.mutable);
    for (const raw of mask.paths) {
      const path = raw.trim();
      if (path === "*") {
        for (const name of wildcardFields(rules)) whole.add(name);
        continue;
      }
      const [head = "", sub, ...deeper] = path.split(".");
      const field = maskedField(schema, head, mutable, path);
      if (sub === undefined) {
        whole.add(field.name);
        continue;
      }
      const allowed = rules.nested[field.name];
      if (allowed === undefined || field.fieldKind !== "message" || deeper.length > 0) {
        throw invalidField("update_mask", `field ${JSON.stringify(path)} cannot be updated`);
      }
      subs.add(`${field.name}.${maskedField(field.message, sub, new Set(allowed), path).name}`);
    }
  }
  const out: string[] = [];
  for (const name of rules.mutable) {
    if (whole.has(name)) {
      out.push(name);
      continue;
    }
    for (const sub of rules.nested[name] ?? []) if (subs.has(`${name}.${sub}`)) out.push(`${name}.${sub}`);
  }
  return out;
}

/**
 * The field of `schema` a mask path segment names, if an update may change it.
 * `path` is the whole path, for the message.
 */
function maskedField(schema: DescMessage, segment: string, mutable: ReadonlySet<string>, path: string): DescField {
  const field = schema.fields.find((f) => f.name === segment || f.jsonName === segment);
  if (!field) throw invalidField("update_mask", `unknown field ${JSON.stringify(path)}`);
  if (behaviors(field).includes(FieldBehavior.OUTPUT_ONLY)) {
    throw invalidField("update_mask", `field ${JSON.stringify(path)} is output only and cannot be updated`);
  }
  if (!mutable.has(field.name)) {
    throw invalidField("update_mask", `field ${JSON.stringify(path)} cannot be updated`);
  }
  return field;
}

function behaviors(field: DescField): FieldBehavior[] {
  return hasOption(field, field_behavior) ? getOption(field, field_behavior) : [];
}
