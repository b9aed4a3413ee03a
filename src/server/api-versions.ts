/**
 * The generally available (v2) services as an adapter at the edge of their v2beta1 twins.
 *
 * The published v2 packages (chainguard.platform.iam.v2, .registry.v2, .vulnerabilities.v2)
 * declare the very messages, fields and methods of v2beta1 under another package and other
 * paths (test/proto/ga-twins.test.ts holds our files to that). So a v2 method is not a second
 * implementation: `gaTwin` gives each v2 method a function that hands the call to the v2beta1
 * implementation's own function and translates at the edge only:
 *
 * - the request: the decoded v2 message becomes the v2beta1 message (the same field values,
 *   only `$typeName` differs, nested messages of the versioned package included);
 * - the context: the implementation sees its own (v2beta1) method and service, so whatever it
 *   keys by method (a page token's binding) is one for both versions: a page token of one
 *   version continues the same query on the other, and is refused for any other query, as on
 *   one version (docs/migrating.md);
 * - the answer: back to the v2 message types;
 * - an error that names the v2beta1 service (UNIMPLEMENTED's `method`) names the v2 one.
 *
 * Everything else is the v2 method's own, because the call pipeline wraps this function with
 * the v2 descriptor like any method (create-app.ts): its authorization (the same annotations),
 * its REST paths (`/iam/v2/…`), its gRPC/Connect path and reflection entry, its log line and
 * metrics, the errors made before the implementation (which name the called method). The
 * v2beta1 methods are wrapped from the implementation directly, so their calls pay nothing for
 * this.
 */
import type { DescField, DescMessage, DescMethod, DescService } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { ApiError } from "../errors/api-error.js";

type Unary = (request: unknown, context: HandlerContext) => unknown;
type Convert = (value: unknown) => unknown;
type Impl = Partial<ServiceImpl<DescService>>;

/**
 * The v2 service's implementation, made of `twinImpl` (the v2beta1 service's). Checks at
 * start-up that the two services are twins (same methods, and messages alike field for field).
 * @throws Error naming the first difference
 */
export function gaTwin<T extends DescService>(service: DescService, twin: T, twinImpl: Partial<ServiceImpl<T>>): Impl {
  const converters = new Map<string, Convert>();
  const impl: Record<string, Unary> = {};
  if (service.methods.length !== twin.methods.length) throw notTwins(service, twin, "they declare different methods");
  service.methods.forEach((method, i) => {
    const twinMethod = twin.methods[i] as DescMethod;
    if (method.name !== twinMethod.name || method.methodKind !== twinMethod.methodKind)
      throw notTwins(service, twin, `${method.name} is not ${twinMethod.name}`);
    const own = (twinImpl as Record<string, Unary | undefined>)[twinMethod.localName];
    // A method its twin leaves out stays out: the pipeline answers it UNIMPLEMENTED.
    if (own === undefined || method.methodKind !== "unary") return;
    const toTwin = converter(method.input, twinMethod.input, converters);
    const fromTwin = converter(twinMethod.output, method.output, converters);
    const rename = (text: string) => text.replaceAll(`${twin.typeName}/`, `${service.typeName}/`);
    impl[method.localName] = async (request, context) => {
      try {
        return fromTwin(await own(toTwin(request), new TwinContext(context, twinMethod)));
      } catch (err) {
        throw err instanceof ApiError ? renamed(err, rename) : err;
      }
    };
  });
  return impl as unknown as Impl;
}

function notTwins(service: DescService, twin: DescService, why: string): Error {
  return new Error(`${service.typeName} cannot be served as ${twin.typeName}: ${why}`);
}

/**
 * A function that turns a message of `from` into one of `to`, its twin. A message with no
 * `$typeName` (an implementation may answer with an init object) stays one, for the door to
 * complete as it does any answer. Compiled once per pair; pairs of the same type (a
 * Timestamp, an Empty, a shared UIDPFilter) pass through untouched.
 */
function converter(from: DescMessage, to: DescMessage, made: Map<string, Convert>): Convert {
  if (from === to) return identity;
  const key = `${from.typeName}>${to.typeName}`;
  const known = made.get(key);
  if (known) return known;
  // Recursive types: the entry exists before the fields are compiled.
  const nested: [string, Convert][] = [];
  const convert: Convert = (value) => {
    const m = value as Record<string, unknown>;
    const out: Record<string, unknown> = { ...m };
    if (m.$typeName !== undefined) out.$typeName = to.typeName;
    for (const [key, c] of nested) {
      const v = m[key];
      if (v !== undefined && v !== null) out[key] = c(v);
    }
    return out;
  };
  made.set(key, convert);
  if (from.fields.length !== to.fields.length) throw new Error(`${from.typeName} and ${to.typeName} are not twins: their fields differ`);
  const oneofs = new Map<string, Map<string, Convert>>();
  for (const [i, f] of from.fields.entries()) {
    const t = to.fields[i] as DescField;
    if (!sameField(f, t)) throw new Error(`${from.typeName}.${f.name} and ${to.typeName}.${t.name} are not twins`);
    const inner = fieldConverter(f, t, made);
    if (!inner) continue;
    if (f.oneof) {
      const cases = oneofs.get(f.oneof.localName) ?? new Map<string, Convert>();
      cases.set(f.localName, inner);
      oneofs.set(f.oneof.localName, cases);
    } else nested.push([f.localName, inner]);
  }
  for (const [key, cases] of oneofs) {
    nested.push([
      key,
      (v) => {
        const { case: which, value } = v as { case?: string; value?: unknown };
        const c = which === undefined ? undefined : cases.get(which);
        return c ? { case: which, value: c(value) } : v;
      },
    ]);
  }
  return convert;
}

/** The converter of one field's value, or undefined when the value passes through as it is. */
function fieldConverter(f: DescField, t: DescField, made: Map<string, Convert>): Convert | undefined {
  if (f.fieldKind === "message" && t.fieldKind === "message") {
    return f.message === t.message ? undefined : converter(f.message, t.message, made);
  }
  if (f.fieldKind === "list" && t.fieldKind === "list" && f.listKind === "message" && t.listKind === "message") {
    if (f.message === t.message) return undefined;
    const c = converter(f.message, t.message, made);
    return (v) => (v as unknown[]).map(c);
  }
  if (f.fieldKind === "map" && t.fieldKind === "map" && f.mapKind === "message" && t.mapKind === "message") {
    if (f.message === t.message) return undefined;
    const c = converter(f.message, t.message, made);
    return (v) => Object.fromEntries(Object.entries(v as Record<string, unknown>).map(([k, x]) => [k, c(x)]));
  }
  return undefined;
}

/** Same number, name, kind and (for enums and messages) the same or a twin type. */
function sameField(f: DescField, t: DescField): boolean {
  if (f.number !== t.number || f.localName !== t.localName || f.fieldKind !== t.fieldKind || f.oneof?.localName !== t.oneof?.localName) return false;
  const shape = (x: DescField) => {
    switch (x.fieldKind) {
      case "scalar":
        return `${x.scalar}`;
      case "enum":
        return `enum ${x.enum.name}`;
      case "message":
        return `message ${x.message.name}`;
      case "list":
        return `list ${x.listKind} ${x.scalar ?? x.enum?.name ?? x.message?.name}`;
      case "map":
        return `map ${x.mapKey} ${x.mapKind} ${x.scalar ?? x.enum?.name ?? x.message?.name}`;
    }
  };
  return shape(f) === shape(t);
}

const identity: Convert = (v) => v;

/** The error with `rename` applied to its message and its ErrorInfo metadata. */
function renamed(err: ApiError, rename: (text: string) => string): ApiError {
  const message = rename(err.message);
  const metadata = Object.fromEntries(Object.entries(err.metadata).map(([k, v]) => [k, rename(v)]));
  if (message === err.message && Object.entries(metadata).every(([k, v]) => err.metadata[k] === v)) return err;
  return new ApiError(err.code, message, {
    reason: err.reason,
    metadata,
    fieldViolations: err.fieldViolations,
    preconditionViolations: err.preconditionViolations,
    resourceInfo: err.resourceInfo,
    quotaViolations: err.quotaViolations,
    retryDelayMs: err.retryDelayMs,
    cause: err.cause,
  });
}

/**
 * The door's context as the v2beta1 implementation sees it: its own method and service; every
 * other member is the door's (read through, so lazily made members stay lazy and a header set
 * here is set on the answer).
 */
class TwinContext implements HandlerContext {
  readonly method: DescMethod;
  readonly service: DescService;
  readonly #door: HandlerContext;
  constructor(door: HandlerContext, method: DescMethod) {
    this.#door = door;
    this.method = method;
    this.service = method.parent;
  }
  get signal() {
    return this.#door.signal;
  }
  readonly timeoutMs = (): number | undefined => this.#door.timeoutMs();
  get requestMethod() {
    return this.#door.requestMethod;
  }
  get requestHeader() {
    return this.#door.requestHeader;
  }
  get responseHeader() {
    return this.#door.responseHeader;
  }
  get responseTrailer() {
    return this.#door.responseTrailer;
  }
  get protocolName() {
    return this.#door.protocolName;
  }
  get values() {
    return this.#door.values;
  }
  get url() {
    return this.#door.url;
  }
}
