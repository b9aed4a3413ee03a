/**
 * OpenAPI 3.1 document for the REST door, generated at start-up from the same compiled route
 * table and descriptors (served at GET /openapi.json). Nothing here is written per method.
 *
 * Mapping: proto3 JSON (lowerCamelCase properties, int64 as strings, enums as names,
 * Timestamp as date-time strings); OUTPUT_ONLY fields are readOnly, REQUIRED fields required.
 * `{x=**}` variables become `{x}` path parameters that may contain '/' (a UIDP); a POST whose
 * path ends in such a variable is also listed without it (zero segments: e.g. creating an
 * organization with POST /iam/v2beta1/groups). Every operation's error response is the
 * google.rpc.Status body.
 */
import { type DescEnum, type DescField, type DescMessage, getOption, hasOption, ScalarType } from "@bufbuild/protobuf";
import { FieldBehavior, field_behavior } from "../../gen/google/api/field_behavior_pb.js";
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
        properties[f.jsonName] = behaviors.includes(FieldBehavior.OUTPUT_ONLY) ? { ...s, readOnly: true } : s;
        if (behaviors.includes(FieldBehavior.REQUIRED)) required.push(f.jsonName);
      }
      schemas[m.typeName] = { type: "object", properties, ...(required.length ? { required } : {}) };
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

  const paths: Record<string, Record<string, Schema>> = {};
  const operationIds = new Set<string>();
  for (const route of table.routes) {
    const variants = [openApiPath(route, false)];
    const last = route.template.parts[route.template.parts.length - 1];
    if (route.httpMethod === "POST" && last?.kind === "dstar" && last.variable !== undefined && route.template.verb === undefined) {
      const short = openApiPath(route, true);
      if (!table.routes.some((r) => r !== route && r.httpMethod === "POST" && openApiPath(r, false).path === short.path)) variants.push(short);
    }
    for (const { path, pathVars } of variants) {
      let id = `${route.method.parent.name}_${route.method.name}`;
      for (let n = 2; operationIds.has(id); n++) id = `${route.method.parent.name}_${route.method.name}_${n}`;
      operationIds.add(id);
      const parameters: Schema[] = pathVars.map(({ name, multi }) => ({
        name,
        in: "path",
        required: true,
        schema: { type: "string" },
        ...(multi ? { description: "a UIDP; may contain '/'" } : {}),
      }));
      if (route.body !== "*") {
        const boundNames = route.variableFields.map((c) => c.map((f) => f.name).join("."));
        for (const q of queryLeaves(route.method.input, "")) {
          if (boundNames.includes(q.name) || (route.bodyField && q.name.split(".")[0] === route.bodyField.name)) continue;
          parameters.push({ name: q.name, in: "query", required: false, schema: q.repeated ? { type: "array", items: single(q.field) } : single(q.field), ...(q.repeated ? { style: "form", explode: true } : {}) });
        }
      }
      const op: Schema = {
        operationId: id,
        tags: [route.method.parent.typeName],
        parameters,
        responses: {
          "200": {
            description: "OK",
            content: { "application/json": { schema: route.responseField ? fieldSchema(route.responseField) : messageRef(route.method.output) } },
          },
          default: { description: "Error (google.rpc.Status)", content: { "application/json": { schema: ref("google.rpc.Status") } } },
        },
      };
      if (route.body !== "") {
        op.requestBody = {
          required: true,
          content: { "application/json": { schema: route.bodyField ? messageRef((route.bodyField as { message: DescMessage }).message) : messageRef(route.method.input) } },
        };
      }
      paths[path] ??= {};
      (paths[path] as Record<string, Schema>)[route.httpMethod.toLowerCase()] = op;
    }
  }
  return {
    openapi: "3.1.0",
    info,
    paths,
    components: {
      schemas,
      securitySchemes: { bearer: { type: "http", scheme: "bearer", bearerFormat: "JWT" } },
    },
    security: [{ bearer: [] }],
  };
}

function openApiPath(route: Route, dropLastVariable: boolean): { path: string; pathVars: { name: string; multi: boolean }[] } {
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
      const name = v.fieldPath.join(".");
      segs.push(`{${name}}`);
      pathVars.push({ name, multi: v.multiSegment });
    } else {
      lastVar = undefined;
      segs.push(p.kind === "literal" ? (p.value as string) : p.kind === "star" ? "*" : "**");
    }
  }
  return { path: `/${segs.join("/")}${t.verb ? `:${t.verb}` : ""}`, pathVars };
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
