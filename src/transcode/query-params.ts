/**
 * The query string (and form fields) of a REST call: decoded, and each name resolved to the
 * request field it sets (docs/rest.md "Requests").
 *
 * - The query string is form-decoded (`+` is a space; send `%2B`), strictly (a malformed
 *   escape is rejected).
 * - Names are dotted field paths of the request, each segment by proto name or JSON name
 *   (`uidp.descendants_of`, `uidp.descendantsOf`), through singular message fields only.
 * - Bindable leaves: scalars, enums, Timestamp, Duration, FieldMask and the wrapper types,
 *   and repeated scalars/enums (one value per repeated key; no comma splitting).
 * - INVALID_ARGUMENT: an unknown name (named as given; `access_token` too: credentials are
 *   never read from the URL), a message, map or repeated-message field (here); a field
 *   inside the body field, any parameter when `body: "*"`, a singular field given twice
 *   (also under its two names), a second member of a oneof (bind-request.ts), or a value that
 *   does not parse (scalar-values.ts). Violations name the proto path (`page_size` even when
 *   sent as `pageSize`).
 */
import type { DescField, DescMessage } from "@bufbuild/protobuf";
import { invalidField } from "../errors/api-error.js";
import { SCALAR_LIKE } from "./scalar-values.js";

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

/** A field chain as its dotted proto path (`uidp.descendants_of`), the name violations use. */
export function protoPath(chain: readonly DescField[]): string {
  return chain.map((f) => f.name).join(".");
}

/** Resolves a query name (proto or JSON name per segment) to a bindable leaf's field chain. */
export function resolveQueryKey(schema: DescMessage, key: string): DescField[] {
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
