/**
 * OpenAPI 3.1 document for the REST door, generated at start-up from the same compiled route
 * table and descriptors (served at GET /openapi.json). Nothing here is written per method.
 *
 * Mapping: proto3 JSON (lowerCamelCase properties, int64 as strings, enums as names,
 * Timestamp as date-time strings); OUTPUT_ONLY fields are readOnly, REQUIRED fields required.
 * `{x=**}` variables become `{x}` path parameters that may contain '/' (a UIDP), named once per
 * path for all the templates that share it; a POST whose
 * path ends in such a variable is also listed without it (zero segments: e.g. creating an
 * organization with POST /iam/v2beta1/groups). Every operation's error response is the
 * google.rpc.Status body. Summaries and descriptions are the protos' own comments
 * (gen/proto_comments.ts, written by `npm run generate`).
 */
import { type DescEnum, type DescField, type DescMessage, type DescMethod, getOption, hasOption, ScalarType } from "@bufbuild/protobuf";
import { FieldBehavior, field_behavior } from "../../gen/google/api/field_behavior_pb.js";
import { protoComments } from "../../gen/proto_comments.js";
import type { Route, RouteTable } from "./route-table.js";

type Schema = Record<string, unknown>;

const WKT: Readonly<Record<string, Schema>> = {
  "google.protobuf.Timestamp": { type: "string", format: "date-time" },
  "google.protobuf.Duration": { type: "string", pattern: "^-?[0-9]+(\\.[0-9]+)?s$" },
  "google.protobuf.FieldMask": { type: "string", description: "comma-separated field paths" },
  "google.protobuf.Empty": { type: "object" },
  "google.protobuf.Struct": { type: "object" },
  "google.protobuf.Value": {},
  "google.protobuf.Any": { type: "object", properties: { "@type": { type: "string" } }, additionalProperties: true },
  "google.protobuf.StringValue": { type: "string" },
  "google.protobuf.BoolValue": { type: "boolean" },
  "google.protobuf.Int32Value": { type: "integer", format: "int32" },
  "google.protobuf.UInt32Value": { type: "integer", format: "int64" },
  "google.protobuf.Int64Value": { type: "string", format: "int64" },
  "google.protobuf.UInt64Value": { type: "string", format: "uint64" },
  "google.protobuf.DoubleValue": { type: "number" },
  "google.protobuf.FloatValue": { type: "number" },
  "google.protobuf.BytesValue": { type: "string", format: "byte" },
};

const STATUS_SCHEMA: Schema = {
  type: "object",
  description: "google.rpc.Status (AIP-193): code is the gRPC code; details[0] is a google.rpc.ErrorInfo",
  properties: {
    code: { type: "integer", format: "int32" },
    message: { type: "string" },
    details: { type: "array", items: { type: "object", properties: { "@type": { type: "string" } }, additionalProperties: true } },
  },
  required: ["code", "message", "details"],
};

export function buildOpenApi(table: RouteTable, info: { title: string; version: string }): Schema {
  const schemas: Record<string, Schema> = { "google.rpc.Status": STATUS_SCHEMA };
  const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

  const messageRef = (m: DescMessage): Schema => {
    if (WKT[m.typeName]) return WKT[m.typeName] as Schema;
    if (!schemas[m.typeName]) {
      schemas[m.typeName] = {}; // placeholder for recursion
      const properties: Record<string, Schema> = {};
      const required: string[] = [];
      for (const f of m.fields) {
        const s = fieldSchema(f);
        const behaviors = hasOption(f, field_behavior) ? getOption(f, field_behavior) : [];
        const about = comment(f);
        properties[f.jsonName] = {
          ...s,
          ...(about ? { description: about } : {}),
          ...(behaviors.includes(FieldBehavior.OUTPUT_ONLY) ? { readOnly: true } : {}),
        };
        if (behaviors.includes(FieldBehavior.REQUIRED)) required.push(f.jsonName);
      }
      const about = protoComments[m.typeName];
      schemas[m.typeName] = { type: "object", ...(about ? { description: about } : {}), properties, ...(required.length ? { required } : {}) };
    }
    return ref(m.typeName);
  };
  const enumRef = (e: DescEnum): Schema => {
    schemas[e.typeName] ??= { type: "string", enum: e.values.map((v) => v.name) };
    return ref(e.typeName);
  };
  const single = (f: DescField): Schema => {
    if ("message" in f && f.message && (f.fieldKind === "message" || f.fieldKind === "list" || f.fieldKind === "map")) {
      const m = (f as { message?: DescMessage }).message;
      if (m) return messageRef(m);
    }
    if ("enum" in f && f.enum) return enumRef(f.enum as DescEnum);
    return scalarSchema((f as { scalar: ScalarType }).scalar);
  };
  const fieldSchema = (f: DescField): Schema => {
    if (f.fieldKind === "list") return { type: "array", items: single(f) };
    if (f.fieldKind === "map") {
      const value = f.mapKind === "message" ? messageRef(f.message) : f.mapKind === "enum" ? enumRef(f.enum) : scalarSchema(f.scalar);
      return { type: "object", additionalProperties: value };
    }
    return single(f);
  };

  // Every route's OpenAPI path, first with the template's own variable names. Templates that
  // differ only in those names (GetGroup's `{uid}`, CreateGroup's `{parent}`, UpdateGroup's
  // `{group.uid}`) are one path to OpenAPI, which allows one parameter name per position:
  // linters reject the rest, and generated clients would see two paths where there is one.
  const variants = table.routes.flatMap((route) => {
    const out = [{ route, ...openApiPath(route, false) }];
    const last = route.template.parts[route.template.parts.length - 1];
    if (route.httpMethod === "POST" && last?.kind === "dstar" && last.variable !== undefined && route.template.verb === undefined) {
      const short = openApiPath(route, true);
      if (!table.routes.some((r) => r !== route && r.httpMethod === "POST" && openApiPath(r, false).shape === short.shape)) out.push({ route, ...short });
    }
    return out;
  });
  const namesByShape = new Map<string, string[][]>();
  for (const v of variants) {
    const names = namesByShape.get(v.shape) ?? v.pathVars.map(() => []);
    for (const [i, p] of v.pathVars.entries()) (names[i] as string[]).push(p.name);
    namesByShape.set(v.shape, names);
  }
  const chosenNames = new Map([...namesByShape].map(([shape, names]) => [shape, chooseParameterNames(names)]));

  const paths: Record<string, Record<string, Schema>> = {};
  const operationIds = new Map<string, DescMethod>();
  const usedTags = new Set<string>();
  for (const { route, shape, pathVars } of variants) {
    const names = chosenNames.get(shape) as string[];
    let n = 0;
    const path = shape.replace(/\{\}/g, () => `{${names[n++]}}`);
    const id = operationId(route.method, operationIds);
    const parameters: Schema[] = pathVars.map(({ name, multi }, i) => ({
      name: names[i],
      in: "path",
      required: true,
      description: `The request's \`${name}\`${multi ? "; may contain '/' (a uid's), sent as is or percent-encoded as %2F" : ""}.`,
      schema: { type: "string" },
    }));
    if (route.body !== "*") {
      const boundNames = route.variableFields.map((c) => c.map((f) => f.name).join("."));
      for (const q of queryLeaves(route.method.input, "")) {
        if (boundNames.includes(q.name) || (route.bodyField && q.name.split(".")[0] === route.bodyField.name)) continue;
        const about = comment(q.field);
        parameters.push({
          name: q.name,
          in: "query",
          required: false,
          ...(about ? { description: about } : {}),
          schema: q.repeated ? { type: "array", items: single(q.field) } : single(q.field),
          ...(q.repeated ? { style: "form", explode: true } : {}),
        });
      }
    }
    const methodComment = protoComments[`${route.method.parent.typeName}.${route.method.name}`];
    const tag = route.method.parent.typeName;
    usedTags.add(tag);
    const op: Schema = {
      operationId: id,
      summary: methodComment ? summaryOf(methodComment) : `${route.method.parent.name} ${route.method.name}`,
      ...(methodComment ? { description: methodComment } : {}),
      tags: [tag],
      parameters,
      responses: {
        "200": {
          description: "OK",
          content: { "application/json": { schema: route.responseField ? fieldSchema(route.responseField) : messageRef(route.method.output) } },
        },
        "4XX": { $ref: "#/components/responses/Error" },
        default: { $ref: "#/components/responses/Error" },
      },
    };
    if (route.body !== "") {
      op.requestBody = {
        required: true,
        content: {
          "application/json": { schema: route.bodyField ? messageRef((route.bodyField as { message: DescMessage }).message) : messageRef(route.method.input) },
        },
      };
    }
    paths[path] ??= {};
    (paths[path] as Record<string, Schema>)[route.httpMethod.toLowerCase()] = op;
  }
  return {
    openapi: "3.1.0",
    info: {
      ...info,
      description:
        "REST/JSON transcoding of the gRPC API, generated from the google.api.http rules of its protos. " +
        "Every call needs `Authorization: Bearer <token>`. Errors are google.rpc.Status bodies (AIP-193).",
      license: { name: "Apache-2.0", identifier: "Apache-2.0" },
    },
    // The server's public URL (its issuer URL), filled in by the REST door when it is known.
    servers: [{ url: "/", description: "this server" }],
    tags: [...usedTags].sort().map((name) => ({ name, ...(protoComments[name] ? { description: protoComments[name] } : {}) })),
    paths,
    components: {
      schemas,
      responses: {
        Error: { description: "Error: a google.rpc.Status (AIP-193)", content: { "application/json": { schema: ref("google.rpc.Status") } } },
      },
      securitySchemes: { bearer: { type: "http", scheme: "bearer", bearerFormat: "JWT" } },
    },
    security: [{ bearer: [] }],
  };
}

/**
 * One name per variable position of a path shared by several routes: the uid-ish name when a
 * route uses it (`uid`, then `id`), else the alphabetically first, so the choice does not
 * depend on declaration order. Two positions never share a name. A name that is a reserved
 * word in strict-mode JavaScript (v1 GetPackageVersionMetadata's `{package}`) gets `_name`
 * appended: generators turn path parameters into function parameters (camel-cased, so a
 * trailing `_` would be dropped), and `package` there is a syntax error in every ES module.
 */
function chooseParameterNames(namesPerPosition: readonly (readonly string[])[]): string[] {
  const chosen: string[] = [];
  for (const names of namesPerPosition) {
    const sorted = [...new Set(names)].sort();
    const pick = ["uid", "id", ...sorted].find((n) => sorted.includes(n) && !chosen.includes(n)) ?? `${sorted[0]}_${chosen.length + 1}`;
    chosen.push(RESERVED_WORDS.has(pick) ? `${pick}_name` : pick);
  }
  return chosen;
}

const RESERVED_WORDS = new Set(
  (
    "break case catch class const continue debugger default delete do else enum export extends false finally for function " +
    "if implements import in instanceof interface let new null package private protected public return static super switch " +
    "this throw true try typeof var void while with yield await arguments eval"
  ).split(" "),
);

/** An operation's summary: the first sentence of its proto comment, on one line. */
function summaryOf(text: string): string {
  const flat = text.replace(/\s+/g, " ").trim();
  const end = flat.search(/\.(\s|$)/);
  return end < 0 ? flat : flat.slice(0, end + 1);
}

function comment(f: DescField): string | undefined {
  return protoComments[`${f.parent.typeName}.${f.name}`];
}

/**
 * A route's path with `{}` for each variable (its shape, shared by templates that differ only
 * in variable names), and the variables in order. A `{x=**}` variable is one `{}`: OpenAPI has
 * no multi-segment parameter, so its value's '/' stand inside one parameter.
 */
function openApiPath(route: Route, dropLastVariable: boolean): { shape: string; pathVars: { name: string; multi: boolean }[] } {
  const t = route.template;
  const segs: string[] = [];
  const pathVars: { name: string; multi: boolean }[] = [];
  const parts = dropLastVariable ? t.parts.slice(0, -1) : t.parts;
  let lastVar: number | undefined;
  for (const p of parts) {
    if (p.variable !== undefined) {
      if (p.variable === lastVar) continue;
      lastVar = p.variable;
      const v = t.variables[p.variable] as (typeof t.variables)[number];
      segs.push("{}");
      pathVars.push({ name: v.fieldPath.join("."), multi: v.multiSegment });
    } else {
      lastVar = undefined;
      segs.push(p.kind === "literal" ? (p.value as string) : p.kind === "star" ? "*" : "**");
    }
  }
  return { shape: `/${segs.join("/")}${t.verb ? `:${t.verb}` : ""}`, pathVars };
}

function queryLeaves(m: DescMessage, prefix: string, depth = 0): { name: string; field: DescField; repeated: boolean }[] {
  const out: { name: string; field: DescField; repeated: boolean }[] = [];
  for (const f of m.fields) {
    const name = `${prefix}${f.name}`;
    if (f.fieldKind === "message") {
      if (WKT[f.message.typeName]) out.push({ name, field: f, repeated: false });
      else if (depth < 3) out.push(...queryLeaves(f.message, `${name}.`, depth + 1));
    } else if (f.fieldKind === "scalar" || f.fieldKind === "enum") {
      out.push({ name, field: f, repeated: false });
    } else if (f.fieldKind === "list" && f.listKind !== "message") {
      out.push({ name, field: f, repeated: true });
    }
  }
  return out;
}

function scalarSchema(t: ScalarType): Schema {
  switch (t) {
    case ScalarType.BOOL:
      return { type: "boolean" };
    case ScalarType.STRING:
      return { type: "string" };
    case ScalarType.BYTES:
      return { type: "string", format: "byte" };
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return { type: "number" };
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return { type: "integer", format: "int32" };
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return { type: "integer", format: "int64", minimum: 0 };
    default:
      return { type: "string", format: t === ScalarType.UINT64 || t === ScalarType.FIXED64 ? "uint64" : "int64" };
  }
}

/**
 * `<Service>_<Method>`, unique in the document. A method of another package with the same
 * service name (the GA `chainguard.platform.iam.v2.GroupsService` beside the v2beta1 one, which
 * is listed first) adds its package's version (`GroupsService_GetGroup_v2`), so the earlier
 * ids stay as they were; a second path of the same method (the zero-segment create) adds `_2`.
 */
function operationId(method: DescMethod, taken: Map<string, DescMethod>): string {
  const base = `${method.parent.name}_${method.name}`;
  const owner = taken.get(base);
  const first = owner !== undefined && owner.parent !== method.parent ? `${base}_${method.parent.typeName.split(".").at(-2)}` : base;
  let id = first;
  for (let k = 2; taken.has(id); k++) id = `${first}_${k}`;
  taken.set(id, method);
  return id;
}
