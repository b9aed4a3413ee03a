/**
 * One unary call of any method, described by its descriptor and request, over any door: the
 * four RPC transports (transports.ts) or REST, where the request is laid out by the method's
 * own `google.api.http` rule (path variables, body, the rest as query parameters), exactly as
 * a REST client would. Authorization tests that are generated from the descriptors (and not
 * written per method) need this: they know a method and a request, not a URL.
 *
 * The outcome is the same shape on every door: the response as proto JSON, or the error's
 * code, ErrorInfo reason and metadata, BadRequest fields and PreconditionFailure types.
 *
 * These are the test doors: a test that runs a scenario on every door writes its operations
 * on `callDoors` (a line each: the method and the request) instead of a door of its own.
 */
import { create, type DescField, type DescMessage, type DescMethodUnary, type MessageInitShape, toJson, type JsonObject } from "@bufbuild/protobuf";
import { ConnectError, createClient, type Client } from "@connectrpc/connect";
import type { DescService } from "@bufbuild/protobuf";
import { BadRequestSchema, ErrorInfoSchema, PreconditionFailureSchema } from "../../gen/google/rpc/error_details_pb.js";
import { readHttpRules, type RouteSpec } from "../../src/transcode/http-rule.js";
import { parsePathTemplate } from "../../src/transcode/path-template.js";
import { rest, type RestResponse } from "./rest.js";
import { type NamedTransport, rpcTransports } from "./transports.js";

export type CallOutcome =
  | { readonly ok: true; readonly body: JsonObject; readonly status?: number }
  | {
      readonly ok: false;
      /** The HTTP status, on the REST doors. */
      readonly status?: number;
      readonly code: number;
      readonly reason: string | undefined;
      /** ErrorInfo.metadata ({} without ErrorInfo). */
      readonly metadata: Readonly<Record<string, string>>;
      readonly preconditionTypes: string[];
      /** BadRequest field violations, by field path. */
      readonly fields: string[];
      readonly message: string;
    };

/**
 * Whose token a call carries: a string sends that token, undefined the test server's
 * operator token (as every support client does by default), null no Authorization header.
 */
export type CallToken = string | undefined | null;

export interface CallDoor {
  readonly name: string;
  call<M extends DescMessage>(
    baseUrl: string,
    token: CallToken,
    method: DescMethodUnary<M>,
    request: MessageInitShape<M>,
    options?: CallOptions,
  ): Promise<CallOutcome>;
}

export interface CallOptions {
  readonly headers?: Readonly<Record<string, string>>;
  /**
   * Receives the answer's headers: HTTP response headers on REST and Connect, response
   * metadata on gRPC and gRPC-web (on an error, what the client reports with it: headers and
   * trailers together).
   */
  readonly onResponseHeaders?: (headers: Headers) => void;
}

export function rpcDoor(transport: NamedTransport): CallDoor {
  // One transport per server and caller: a transport per call would leave an HTTP/2 session
  // open for each, and the server caps the connections one peer may hold.
  const transports = new Map<string, ReturnType<NamedTransport["create"]>>();
  const transportFor = (baseUrl: string, token: CallToken) => {
    const key = `${baseUrl} ${token === undefined ? "operator" : token === null ? "none" : `token ${token}`}`;
    let tr = transports.get(key);
    if (!tr) {
      tr = transport.create(baseUrl, { token });
      transports.set(key, tr);
    }
    return tr;
  };
  return {
    name: transport.name,
    async call(baseUrl, token, method, request, options) {
      const client = createClient(method.parent as DescService, transportFor(baseUrl, token)) as Client<DescService>;
      const fn = (client as unknown as Record<string, (r: unknown, o?: CallOptionsOfClient) => Promise<unknown>>)[method.localName];
      if (!fn) throw new Error(`no client method ${method.localName}`);
      const callOptions: CallOptionsOfClient = {
        ...(options?.headers && { headers: { ...options.headers } }),
        ...(options?.onResponseHeaders && { onHeader: options.onResponseHeaders }),
      };
      try {
        const res = await fn(request, callOptions);
        return { ok: true, body: toJson(method.output, res as never, { alwaysEmitImplicit: false }) as JsonObject };
      } catch (err) {
        if (!(err instanceof ConnectError)) throw err;
        options?.onResponseHeaders?.(err.metadata);
        const info = err.findDetails(ErrorInfoSchema)[0];
        return {
          ok: false,
          code: err.code,
          reason: info?.reason,
          metadata: { ...info?.metadata },
          preconditionTypes: (err.findDetails(PreconditionFailureSchema)[0]?.violations ?? []).map((v) => v.type),
          fields: (err.findDetails(BadRequestSchema)[0]?.fieldViolations ?? []).map((v) => v.field),
          message: err.rawMessage,
        };
      }
    },
  };
}

type CallOptionsOfClient = { headers?: Record<string, string>; onHeader?: (headers: Headers) => void };

let routes: Map<DescMethodUnary, RouteSpec> | undefined;
function routeOf(method: DescMethodUnary): RouteSpec {
  routes ??= new Map();
  let spec = routes.get(method);
  if (!spec) {
    spec = readHttpRules([method.parent]).find((s) => s.method === method);
    if (!spec) throw new Error(`${method.name} has no HTTP rule`);
    routes.set(method, spec);
  }
  return spec;
}

/** The JSON name of a proto field path, e.g. ["role_binding","uid"] → ["roleBinding","uid"]. */
function jsonPath(message: DescMessage, names: readonly string[]): string[] {
  const out: string[] = [];
  let at: DescMessage | undefined = message;
  for (const name of names) {
    const field: DescField | undefined = at?.fields.find((f) => f.name === name);
    if (!field) throw new Error(`no field ${name}`);
    out.push(field.jsonName);
    at = field.fieldKind === "message" ? field.message : undefined;
  }
  return out;
}

function takeAt(json: JsonObject, path: readonly string[]): string {
  let at: JsonObject = json;
  for (const key of path.slice(0, -1)) at = (at[key] ?? {}) as JsonObject;
  const last = path[path.length - 1] as string;
  const value = at[last];
  delete at[last];
  return typeof value === "string" ? value : "";
}

const restDoor: CallDoor = {
  name: "rest",
  async call(baseUrl, token, method, request, options) {
    const spec = routeOf(method as DescMethodUnary);
    const json = toJson(method.input, create(method.input, request), { alwaysEmitImplicit: false }) as JsonObject;
    const template = parsePathTemplate(spec.template);
    let path = spec.template;
    for (const v of template.variables) {
      const value = takeAt(json, jsonPath(method.input, v.fieldPath));
      // {x=**} and {x} alike: the value, with its slashes, stands for the whole variable.
      path = path.replace(/\{[^}]*\}/, value.split("/").map(encodeURIComponent).join("/"));
    }
    let body: unknown;
    if (spec.body === "*") {
      body = json;
    } else if (spec.body !== "") {
      const key = jsonPath(method.input, [spec.body])[0] as string;
      body = json[key] ?? {};
      delete json[key];
    }
    // What the path and body did not take goes in the query string, nested fields dotted and
    // repeated fields repeated (`uidp.ids=a&uidp.ids=b`), as the transcoder reads them.
    const query = new URLSearchParams();
    const addQuery = (prefix: string, value: unknown): void => {
      if (Array.isArray(value)) for (const v of value) addQuery(prefix, v);
      else if (value !== null && typeof value === "object") for (const [k, v] of Object.entries(value)) addQuery(`${prefix}.${k}`, v);
      else query.append(prefix, String(value));
    };
    if (spec.body !== "*") for (const [k, v] of Object.entries(json)) addQuery(k, v);
    const qs = query.toString();
    // rest() sends the operator token unless told otherwise; "" sends no Authorization header.
    const authorization: Record<string, string> = token === undefined ? {} : { authorization: token === null ? "" : `Bearer ${token}` };
    const res = await rest(baseUrl, spec.verb, `${path}${qs ? `?${qs}` : ""}`, body, { ...options?.headers, ...authorization });
    options?.onResponseHeaders?.(res.headers);
    return restOutcome(res);
  },
};

/** A REST answer read as a CallOutcome: the body, or the error's code and AIP-193 details. */
export function restOutcome(res: RestResponse): CallOutcome {
  if (res.status === 200) return { ok: true, body: (res.body ?? {}) as JsonObject, status: 200 };
  const details = (res.body?.details ?? []) as {
    "@type": string;
    reason?: string;
    metadata?: Record<string, string>;
    violations?: { type?: string }[];
    fieldViolations?: { field?: string }[];
  }[];
  const info = details.find((d) => d["@type"].endsWith("google.rpc.ErrorInfo"));
  return {
    ok: false,
    status: res.status,
    code: res.body?.code,
    reason: info?.reason,
    metadata: { ...info?.metadata },
    preconditionTypes: (details.find((d) => d["@type"].endsWith("google.rpc.PreconditionFailure"))?.violations ?? []).map((v) => v.type ?? ""),
    fields: (details.find((d) => d["@type"].endsWith("google.rpc.BadRequest"))?.fieldViolations ?? []).map((v) => v.field ?? ""),
    message: String(res.body?.message ?? ""),
  };
}

/** The response body of a call that must succeed; a failure throws, naming the door's error. */
export function bodyOf(outcome: CallOutcome): JsonObject {
  if (!outcome.ok) throw new Error(`expected success, got code ${outcome.code} (${outcome.reason}): ${outcome.message}`);
  return outcome.body;
}

/** Every door: the four RPC transports, then REST. */
export const callDoors: readonly CallDoor[] = [...rpcTransports.map(rpcDoor), restDoor];
