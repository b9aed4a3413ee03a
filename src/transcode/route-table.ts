/**
 * The REST route table, compiled once at start-up from every method's google.api.http rule
 * (including additional_bindings). No route is written by hand.
 *
 * Matching (decided where http.proto is silent; ../shared/transcoding.md §2):
 * - Routing runs on the RAW path; each variable is decoded on its own afterwards:
 *   single-segment variables fully (%2F becomes '/'), multi-segment (`**`) variables
 *   everything except %2F, which stays encoded so it cannot fake a segment boundary.
 * - Precedence, fixed at build time: the match with more literal segments wins, then the one
 *   with fewer `**`. So `GET /iam/v2beta1/groups` is ListGroups (not GetGroup with an empty
 *   uid), and `/repos/{uid=**}/readme` beats `/repos/{uid=**}`.
 * - `**` may match zero segments: `POST /iam/v2beta1/groups` reaches `{parent=**}` with
 *   parent "" (creates an organization).
 * - A ':verb' suffix splits off only when some rule registers that verb, so values that
 *   contain ':' still route.
 * - One trailing '/' is ignored; an empty segment ('//') or a '.'/'..' segment inside a
 *   captured value is INVALID_ARGUMENT; a malformed escape too.
 * - Two rules with the same HTTP method, template shape and verb fail start-up.
 */
import { type DescField, type DescMessage, type DescMethodUnary, type DescService, getOption, hasOption } from "@bufbuild/protobuf";
import { http } from "../../gen/google/api/annotations_pb.js";
import type { HttpRule } from "../../gen/google/api/http_pb.js";
import { invalidField } from "../errors/api-error.js";
import { type PathTemplate, parsePathTemplate } from "./path-template.js";

export interface Route {
  readonly method: DescMethodUnary;
  readonly httpMethod: string;
  readonly template: PathTemplate;
  /** "" (no body), "*" (whole message) or a top-level field name. */
  readonly body: string;
  readonly bodyField: DescField | undefined;
  readonly responseField: DescField | undefined;
  /** For each template variable, the chain of fields from the request message to the leaf. */
  readonly variableFields: readonly (readonly DescField[])[];
}

export type RouteMatch =
  | { readonly kind: "match"; readonly route: Route; readonly vars: readonly string[] }
  | { readonly kind: "notFound" }
  | { readonly kind: "methodNotAllowed"; readonly allow: readonly string[] };

export interface RouteTable {
  readonly routes: readonly Route[];
  /** True when the path's first segment belongs to some REST template. */
  handles(rawPath: string): boolean;
  /** @throws ApiError INVALID_ARGUMENT for malformed paths. */
  match(httpMethod: string, rawPath: string): RouteMatch;
}

/** Builds the table. @throws Error on a bad template, unknown field or conflicting rules. */
export function createRouteTable(services: readonly DescService[]): RouteTable {
  const routes: Route[] = [];
  const seen = new Map<string, string>();
  for (const service of services) {
    for (const method of service.methods) {
      if (method.methodKind !== "unary" || !hasOption(method, http)) continue;
      const rule = getOption(method, http);
      for (const r of [rule, ...rule.additionalBindings]) {
        const route = compileRule(method as DescMethodUnary, r);
        if (!route) continue;
        const key = `${route.httpMethod} ${route.template.parts.map((p) => (p.kind === "literal" ? p.value : p.kind === "star" ? "*" : "**")).join("/")}:${route.template.verb ?? ""}`;
        const name = `${service.typeName}.${method.name}`;
        const other = seen.get(key);
        if (other) throw new Error(`conflicting HTTP rules: ${other} and ${name} both bind ${route.httpMethod} ${route.template.source}`);
        seen.set(key, name);
        routes.push(route);
      }
    }
  }
  const verbs = new Set(routes.map((r) => r.template.verb).filter((v): v is string => v !== undefined));
  const firstLiterals = new Set(routes.map((r) => r.template.parts[0]?.value).filter((v): v is string => v !== undefined));
  const byFirst = new Map<string, Route[]>();
  for (const r of routes) {
    const k = r.template.parts[0]?.value ?? "";
    byFirst.set(k, [...(byFirst.get(k) ?? []), r]);
  }

  return {
    routes,
    handles(rawPath) {
      const first = rawPath.split("/")[1]?.split(":")[0] ?? "";
      return firstLiterals.has(first);
    },
    match(httpMethod, rawPath) {
      let path = rawPath;
      if (path.length > 1 && path.endsWith("/")) path = path.slice(0, -1);
      const segs = path.slice(1).split("/");
      if (segs.some((s) => s === "")) throw invalidField("path", "must not contain empty segments");
      for (const s of segs) if (!isWellEscaped(s)) throw invalidField("path", "contains a malformed percent-escape");
      let verb: string | undefined;
      const last = segs[segs.length - 1] as string;
      const colon = last.lastIndexOf(":");
      if (colon > 0 && verbs.has(last.slice(colon + 1))) {
        verb = last.slice(colon + 1);
        segs[segs.length - 1] = last.slice(0, colon);
      }
      const decoded = segs.map(safeDecode);
      let best: { route: Route; vars: string[]; score: number } | undefined;
      const allow = new Set<string>();
      for (const route of byFirst.get(decoded[0] ?? "") ?? []) {
        if (route.template.verb !== verb) continue;
        const ranges = matchParts(route.template, decoded);
        if (!ranges) continue;
        if (route.httpMethod !== httpMethod) {
          allow.add(route.httpMethod);
          continue;
        }
        const score = specificity(route.template);
        if (!best || score > best.score) best = { route, vars: captureVars(route.template, segs, ranges), score };
      }
      if (best) return { kind: "match", route: best.route, vars: best.vars };
      if (allow.size > 0) return { kind: "methodNotAllowed", allow: [...allow].sort() };
      return { kind: "notFound" };
    },
  };
}

function compileRule(method: DescMethodUnary, rule: HttpRule): Route | undefined {
  const p = rule.pattern;
  if (!p.case) return undefined;
  const httpMethod = p.case === "custom" ? p.value.kind.toUpperCase() : p.case.toUpperCase();
  const source = p.case === "custom" ? p.value.path : p.value;
  const template = parsePathTemplate(source);
  const where = `${method.parent.typeName}.${method.name} (${httpMethod} ${source})`;
  const variableFields = template.variables.map((v) => resolveLeafPath(method.input, v.fieldPath, where));
  let bodyField: DescField | undefined;
  if (rule.body !== "" && rule.body !== "*") {
    bodyField = method.input.fields.find((f) => f.name === rule.body);
    if (!bodyField || bodyField.fieldKind !== "message") throw new Error(`${where}: body ${rule.body} is not a message field`);
  }
  let responseField: DescField | undefined;
  if (rule.responseBody !== "") {
    responseField = method.output.fields.find((f) => f.name === rule.responseBody);
    if (!responseField) throw new Error(`${where}: unknown response_body ${rule.responseBody}`);
  }
  return { method, httpMethod, template, body: rule.body, bodyField, responseField, variableFields };
}

/** Resolves `a.b.c` to its field chain; the leaf must be a singular scalar or enum. */
export function resolveLeafPath(message: DescMessage, path: readonly string[], where: string): DescField[] {
  const chain: DescField[] = [];
  let current: DescMessage | undefined = message;
  path.forEach((name, i) => {
    const field: DescField | undefined = current?.fields.find((f) => f.name === name);
    if (!field) throw new Error(`${where}: unknown field ${path.join(".")}`);
    chain.push(field);
    if (i < path.length - 1) {
      if (field.fieldKind !== "message") throw new Error(`${where}: ${path.join(".")} does not lead through messages`);
      current = field.message;
    } else if (field.fieldKind !== "scalar" && field.fieldKind !== "enum") {
      throw new Error(`${where}: ${path.join(".")} must be a singular scalar field`);
    }
  });
  return chain;
}

/** Matches parts against decoded segments; returns [start, end) per part, or undefined. */
function matchParts(t: PathTemplate, segs: readonly string[]): [number, number][] | undefined {
  const ranges: [number, number][] = [];
  const go = (pi: number, si: number): boolean => {
    if (pi === t.parts.length) return si === segs.length;
    const part = t.parts[pi] as (typeof t.parts)[number];
    if (part.kind === "literal") {
      if (si < segs.length && segs[si] === part.value) {
        ranges[pi] = [si, si + 1];
        return go(pi + 1, si + 1);
      }
      return false;
    }
    if (part.kind === "star") {
      if (si < segs.length) {
        ranges[pi] = [si, si + 1];
        return go(pi + 1, si + 1);
      }
      return false;
    }
    for (let end = segs.length; end >= si; end--) {
      ranges[pi] = [si, end];
      if (go(pi + 1, end)) return true;
    }
    return false;
  };
  return go(0, 0) ? ranges : undefined;
}

function specificity(t: PathTemplate): number {
  let literals = 0;
  let dstars = 0;
  for (const p of t.parts) {
    if (p.kind === "literal") literals++;
    if (p.kind === "dstar") dstars++;
  }
  return literals * 100 - dstars;
}

function captureVars(t: PathTemplate, rawSegs: readonly string[], ranges: readonly [number, number][]): string[] {
  return t.variables.map((v, index) => {
    let start = Number.POSITIVE_INFINITY;
    let end = -1;
    t.parts.forEach((p, pi) => {
      if (p.variable === index) {
        const r = ranges[pi] as [number, number];
        start = Math.min(start, r[0]);
        end = Math.max(end, r[1]);
      }
    });
    const raw = end < start ? [] : rawSegs.slice(start, end);
    for (const s of raw) {
      const d = safeDecode(s);
      if (d === "." || d === "..") throw invalidField(v.fieldPath.join("."), "must not contain '.' or '..' path segments");
    }
    if (!v.multiSegment) return safeDecode(raw.join("/"));
    // Keep %2F encoded inside multi-segment values; decode everything else.
    return raw.map((s) => s.split(/%2F/i).map(safeDecode).join("%2F")).join("/");
  });
}

function isWellEscaped(s: string): boolean {
  return !/%(?![0-9A-Fa-f]{2})/.test(s);
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    throw invalidField("path", "contains an invalid percent-escape");
  }
}
