/**
 * The REST route table: every RouteSpec (http-rule.ts) compiled once at start-up into a
 * segment trie, with every variable, body and response_body field path resolved to field
 * descriptors. At request time it only matches. Nothing is routed by hand.
 *
 * Start-up fails (throws) on: a template outside the grammar; a template that does not start
 * with a literal segment (the REST door shares its port with `/<package.Service>/<Method>`
 * paths and claims only paths whose first segment is one of its literals); a variable naming
 * an unknown field, or a path through a repeated, map or non-message field, or a leaf that is
 * not a singular scalar or enum; a body that is not `*` or a singular top-level message field;
 * an unknown response_body field; and two bindings with the same HTTP method, the same
 * template shape (literals, `*`, `**`; variable names do not count) and the same verb — the
 * error names both methods.
 *
 * Matching (http.proto leaves all of this open; docs/rest.md "Routing"):
 * - Routing runs on the RAW path, split at '/'. Literal segments compare percent-decoded.
 *   Each variable is decoded on its own after the match, fully, `%2F` included: a
 *   multi-segment one (`**` or a multi-segment pattern) holds a uid whose '/' a client may
 *   send as is or percent-encoded, as OpenAPI-generated clients do for a path parameter
 *   (grpc-gateway accepts both). The route was chosen on the raw path before any decoding,
 *   so an encoded '/' can never move the request to another route; and the decoded value is
 *   checked segment by segment, so `%2F..%2F` or `%2F%2F` is refused like `/../` or `//`.
 * - Precedence is per segment, left to right: a literal beats `*`, which beats `**`; `**`
 *   tries the fewest segments first, so a literal after it wins (`/repos/{uid=**}/readme`
 *   beats `/repos/{uid=**}`), and a route ending exactly here beats a `**` that would match
 *   zero segments (`GET /iam/v2beta1/groups` is ListGroups, not GetGroup with uid "").
 * - `**` may match zero segments: `POST /iam/v2beta1/groups` reaches `{parent=**}` with
 *   parent "". The HTTP method takes part in matching: the best template that has the
 *   request's method wins; only when none has it is the answer 405, with `Allow` listing
 *   the methods of every template that matched the path.
 * - A `:suffix` on the last segment is split off as a custom verb only when some binding
 *   registers that verb (Envoy's rule), so ids containing ':' still route; a registered
 *   verb that yields no route for the path falls back to treating the suffix as part of
 *   the segment. An escaped colon (`%3A`) is never a verb separator.
 * - One trailing '/' is ignored (`/v1/items/` is `/v1/items`), like Envoy; there is no
 *   other normalisation.
 * - INVALID_ARGUMENT (400), before any handler runs: an empty segment (`//`, or a second
 *   trailing '/') or a malformed percent-escape anywhere in the path (field `path`, since
 *   no request field is involved); a `.` or `..` segment, or an escape that is not UTF-8,
 *   inside a captured value (field: the variable's proto path).
 */
import type { DescField, DescMessage, DescMethodUnary, DescService } from "@bufbuild/protobuf";
import { invalidField } from "../errors/api-error.js";
import { readHttpRules, type RouteSpec } from "./http-rule.js";
import { type PathTemplate, parsePathTemplate } from "./path-template.js";

/** One compiled HTTP binding. */
export interface Route {
  readonly method: DescMethodUnary;
  /** Upper-case HTTP method. */
  readonly httpMethod: string;
  readonly template: PathTemplate;
  /** `""` (no body), `"*"` (whole request) or the top-level body field's proto name. */
  readonly body: string;
  /** The body field when `body` names one (always a singular message field). */
  readonly bodyField: (DescField & { fieldKind: "message" }) | undefined;
  /** The response field when the rule has a response_body. */
  readonly responseField: DescField | undefined;
  /** Per template variable: the field chain from the request message to the bound leaf. */
  readonly variableFields: readonly (readonly DescField[])[];
  /** Per template variable: its dotted proto path (`item.uid`); the keys of `vars`. */
  readonly variablePaths: readonly string[];
  /** The binding it was compiled from. */
  readonly spec: RouteSpec;
}

/** Outcome of `RouteTable.match`. `vars` maps each variable's proto path to its decoded value. */
export type RouteMatch =
  | { readonly kind: "match"; readonly route: Route; readonly vars: Readonly<Record<string, string>> }
  | { readonly kind: "notFound" }
  | { readonly kind: "methodNotAllowed"; readonly allow: readonly string[] };

/** The compiled table: immutable, shared by every request. */
export interface RouteTable {
  /** Every compiled binding, in declaration order. */
  readonly routes: readonly Route[];
  /**
   * True when the path's first segment is the first literal of some template, i.e. the REST
   * door should answer it (404/405 included). False leaves it to the RPC doors.
   */
  handles(rawPath: string): boolean;
  /**
   * Matches a raw (still percent-encoded) path without its query string.
   * @throws ApiError INVALID_ARGUMENT for malformed paths and captured values (module comment).
   */
  match(httpMethod: string, rawPath: string): RouteMatch;
}

interface Node {
  readonly literals: Map<string, Node>;
  star: Node | undefined;
  dstar: Node | undefined;
  /** Routes that end at this node: verb ("" for none) → HTTP method → route. */
  readonly ends: Map<string, Map<string, Route>>;
}

const newNode = (): Node => ({ literals: new Map(), star: undefined, dstar: undefined, ends: new Map() });

/**
 * Compiles the table for `services` (every unary method with a google.api.http rule).
 * @throws Error naming the method and binding on any problem listed in the module comment.
 */
export function createRouteTable(services: readonly DescService[]): RouteTable {
  const routes = readHttpRules(services).map(compileRoute);
  const root = newNode();
  const firstLiterals = new Set<string>();
  const verbs = new Set<string>();
  for (const route of routes) {
    let node = root;
    for (const part of route.template.parts) {
      if (part.kind === "literal") {
        const value = part.value as string;
        let next = node.literals.get(value);
        if (!next) {
          next = newNode();
          node.literals.set(value, next);
        }
        node = next;
      } else if (part.kind === "star") {
        node.star ??= newNode();
        node = node.star;
      } else {
        node.dstar ??= newNode();
        node = node.dstar;
      }
    }
    const verb = route.template.verb ?? "";
    let byMethod = node.ends.get(verb);
    if (!byMethod) {
      byMethod = new Map();
      node.ends.set(verb, byMethod);
    }
    const other = byMethod.get(route.httpMethod);
    if (other) {
      throw new Error(`conflicting HTTP rules: ${other.spec.where} and ${route.spec.where} bind the same method, template and verb`);
    }
    byMethod.set(route.httpMethod, route);
    firstLiterals.add(route.template.parts[0]?.value as string);
    if (route.template.verb !== undefined) verbs.add(route.template.verb);
  }
  // Longest first, so a verb containing ':' is preferred over its own suffix.
  const verbList = [...verbs].sort((a, b) => b.length - a.length);

  return {
    routes,
    handles(rawPath) {
      if (!rawPath.startsWith("/")) return false;
      const first = rawPath.slice(1).split("/")[0] as string;
      // The first segment may also be the last, carrying a verb: `/items:count`.
      const candidates = [first];
      for (let c = first.indexOf(":"); c > 0; c = first.indexOf(":", c + 1)) candidates.push(first.slice(0, c));
      return candidates.some((c) => {
        const decoded = lenientDecode(c);
        return decoded !== undefined && firstLiterals.has(decoded);
      });
    },
    match(httpMethod, rawPath) {
      if (!rawPath.startsWith("/") || rawPath === "/") return { kind: "notFound" };
      let path = rawPath.slice(1);
      if (path.endsWith("/")) path = path.slice(0, -1);
      const segs = path.split("/");
      for (const s of segs) {
        if (s === "") throw invalidField("path", "must not contain empty segments");
        if (!WELL_ESCAPED.test(s)) throw invalidField("path", "contains a malformed percent-escape");
      }
      const allow = new Set<string>();
      for (const { raw, verb } of verbSplits(segs, verbList)) {
        const decoded = raw.map(lenientDecode);
        let found: RouteMatch | undefined;
        walk(root, decoded, (node, ranges) => {
          const byMethod = node.ends.get(verb);
          if (!byMethod) return false;
          const route = byMethod.get(httpMethod);
          if (route) {
            found = { kind: "match", route, vars: captureVars(route, raw, ranges) };
            return true;
          }
          for (const m of byMethod.keys()) allow.add(m);
          return false;
        });
        if (found) return found;
      }
      if (allow.size > 0) return { kind: "methodNotAllowed", allow: [...allow].sort() };
      return { kind: "notFound" };
    },
  };
}

function compileRoute(spec: RouteSpec): Route {
  const fail = (why: string): never => {
    throw new Error(`${spec.where}: ${why}`);
  };
  let template: PathTemplate;
  try {
    template = parsePathTemplate(spec.template);
  } catch (err) {
    return fail((err as Error).message);
  }
  if (template.parts[0]?.kind !== "literal") fail("the template must start with a literal segment");
  const input = spec.method.input;
  const variableFields = template.variables.map((v) => resolveVariable(input, v.fieldPath, fail));
  let bodyField: Route["bodyField"];
  if (spec.body !== "" && spec.body !== "*") {
    const field = input.fields.find((f) => f.name === spec.body);
    if (!field) fail(`body names unknown field ${JSON.stringify(spec.body)}`);
    if (field?.fieldKind !== "message") fail(`body field ${spec.body} must be a singular message field`);
    bodyField = field as Route["bodyField"];
  }
  let responseField: DescField | undefined;
  if (spec.responseBody !== "") {
    responseField = spec.method.output.fields.find((f) => f.name === spec.responseBody);
    if (!responseField) fail(`response_body names unknown field ${JSON.stringify(spec.responseBody)}`);
  }
  return {
    method: spec.method,
    httpMethod: spec.verb,
    template,
    body: spec.body,
    bodyField,
    responseField,
    variableFields,
    variablePaths: template.variables.map((v) => v.fieldPath.join(".")),
    spec,
  };
}

/** Resolves `a.b.c` (proto names) to its field chain: singular messages, then a scalar/enum leaf. */
function resolveVariable(message: DescMessage, path: readonly string[], fail: (why: string) => never): DescField[] {
  const dotted = path.join(".");
  const chain: DescField[] = [];
  let current: DescMessage = message;
  path.forEach((name, i) => {
    const field = current.fields.find((f) => f.name === name);
    if (!field) fail(`variable ${dotted}: ${current.typeName} has no field ${JSON.stringify(name)}`);
    chain.push(field as DescField);
    if (i < path.length - 1) {
      if (field?.fieldKind !== "message") fail(`variable ${dotted}: ${name} is not a singular message field`);
      current = (field as DescField & { fieldKind: "message" }).message;
    } else if (field?.fieldKind !== "scalar" && field?.fieldKind !== "enum") {
      fail(`variable ${dotted} must name a singular scalar or enum field`);
    }
  });
  return chain;
}

const WELL_ESCAPED = /^(?:[^%]|%[0-9A-Fa-f]{2})*$/;

/** The ways to read the last segment: with each registered verb split off, then as it is. */
function* verbSplits(segs: readonly string[], verbs: readonly string[]): Generator<{ raw: string[]; verb: string }> {
  const last = segs[segs.length - 1] as string;
  for (const verb of verbs) {
    if (last.length > verb.length + 1 && last.endsWith(`:${verb}`)) {
      yield { raw: [...segs.slice(0, -1), last.slice(0, -verb.length - 1)], verb };
    }
  }
  yield { raw: [...segs], verb: "" };
}

/**
 * Depth-first over the trie in precedence order (literal, then `*`, then `**` with the
 * shortest span first), calling `visit` at every node where the path ends until it returns
 * true. `ranges[d]` is the [start, end) of the segments consumed by the part at depth d; it
 * is only valid during the call. A plain recursion with a stop flag rather than recursive
 * generators: `yield*` through every level showed in a REST GetGroup's profile
 * (docs/performance.md).
 */
function walk(root: Node, segs: readonly (string | undefined)[], visit: (node: Node, ranges: [number, number][]) => boolean): void {
  const ranges: [number, number][] = [];
  const descend = (node: Node, i: number, depth: number): boolean => {
    if (i === segs.length) {
      if (node.ends.size > 0 && visit(node, ranges)) return true;
    } else {
      const seg = segs[i];
      const literal = seg === undefined ? undefined : node.literals.get(seg);
      if (literal) {
        ranges[depth] = [i, i + 1];
        if (descend(literal, i + 1, depth + 1)) return true;
      }
      if (node.star) {
        ranges[depth] = [i, i + 1];
        if (descend(node.star, i + 1, depth + 1)) return true;
      }
    }
    if (node.dstar) {
      for (let end = i; end <= segs.length; end++) {
        ranges[depth] = [i, end];
        if (descend(node.dstar, end, depth + 1)) return true;
      }
    }
    return false;
  };
  descend(root, 0, 0);
}

function captureVars(route: Route, raw: readonly string[], ranges: readonly [number, number][]): Record<string, string> {
  const vars: Record<string, string> = {};
  route.template.variables.forEach((v, index) => {
    const name = route.variablePaths[index] as string;
    const start = (ranges[v.firstPart] as [number, number])[0];
    const end = (ranges[v.lastPart] as [number, number])[1];
    const segs = raw.slice(start, end);
    const decode = (s: string): string => {
      const d = lenientDecode(s);
      if (d === undefined) throw invalidField(name, "contains a percent-escape that is not UTF-8");
      return d;
    };
    const value = segs.map(decode).join("/");
    // The value's own segments, '/' from the path and decoded %2F alike: a client that
    // encodes every '/' of a uid must get exactly what one that encodes none gets.
    const parts = v.multiSegment ? (value === "" ? [] : value.split("/")) : segs.map(decode);
    for (const d of parts) {
      if (d === "." || d === "..") throw invalidField(name, "must not contain '.' or '..' path segments");
      if (d === "") throw invalidField(name, "must not contain an empty path segment");
    }
    vars[name] = value;
  });
  return vars;
}

/** decodeURIComponent, or undefined when the escapes are malformed or not UTF-8. */
function lenientDecode(s: string): string | undefined {
  if (!s.includes("%")) return s;
  try {
    return decodeURIComponent(s);
  } catch {
    return undefined;
  }
}
