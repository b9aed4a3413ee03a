/**
 * Builds the request message of a REST call from the matched route, the path variables, the
 * query string and the body, following google/api/http.proto plus the decisions below
 * (docs/rest.md "Requests"; grpc-gateway's behaviour where a client can tell). Each concern
 * has its file: the JSON body (json-body.ts), the query string (query-params.ts), one value
 * from text (scalar-values.ts), the PATCH mask (patch-mask.ts); this one puts them together.
 *
 * Body
 * - `body: "*"`: the JSON body is the whole request; then no query parameter is accepted.
 *   `body: "<field>"`: the JSON body is that field's message. An empty body counts as `{}`.
 * - No body rule: a non-empty body is INVALID_ARGUMENT (`body`), except a POST with
 *   `Content-Type: application/x-www-form-urlencoded`, whose fields are treated exactly like
 *   query parameters (what Go's ParseForm gives grpc-gateway; the STS exchange's HTTP/1
 *   clients send that).
 *
 * Path variables are authoritative (authorization reads the uid from the path): a body value
 * that is present, not the default, and different, or a query parameter with a different
 * value, is INVALID_ARGUMENT naming the request field path (`item.uid`); an equal value is
 * accepted. A default value in the body (`""`, `0`) cannot be told from an absent one in
 * proto3 and is overwritten by the path value.
 *
 * Query parameters: a field inside the body field, any parameter when `body: "*"`, a
 * singular field given twice (also under its two names) and a second member of a oneof are
 * INVALID_ARGUMENT naming the proto path.
 */
import { create, type DescField, type JsonObject, type Message } from "@bufbuild/protobuf";
import { type ReflectList, type ReflectMessage, reflect } from "@bufbuild/protobuf/reflect";
import { invalidField } from "../errors/api-error.js";
import { decodeJsonMessage, decodeUtf8, isObject, parseJson, parseMediaType, requireIdentityEncoding, requireUtf8Charset } from "./json-body.js";
import { inferUpdateMask } from "./patch-mask.js";
import { parseFormEncoded, protoPath, resolveQueryKey } from "./query-params.js";
import type { Route } from "./route-table.js";
import { parseValue, SCALAR_LIKE } from "./scalar-values.js";

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
  if (bodyJson) inferUpdateMask(route, root, bodyJson);
  return message;
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
