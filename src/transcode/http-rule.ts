/**
 * Reads the `google.api.http` rules (google/api/http.proto) of every method from the
 * generated descriptors, and flattens each rule and its `additional_bindings` into one
 * RouteSpec per HTTP binding. Nothing else in the transcoder looks at HttpRule.
 *
 * Decided here (http.proto is silent or leaves it to implementations):
 * - Only unary methods are served over REST. A streaming method with a rule is skipped (its
 *   path answers 404): REST has no agreed framing for a stream of messages, and
 *   none of the published methods stream.
 * - `custom` patterns are upper-cased (`kind: "search"` serves `SEARCH`); `kind: "*"` ("any
 *   method") and an empty kind are refused, because they would make 405/Allow meaningless.
 * - A rule without a pattern, or an additional binding that has its own
 *   `additional_bindings` (the spec allows one level only), fails start-up.
 * - `selector` is ignored: it only means something in a service-config file.
 */
import { type DescMethodUnary, type DescService, getOption, hasOption } from "@bufbuild/protobuf";
import { http } from "../../gen/google/api/annotations_pb.js";
import type { HttpRule } from "../../gen/google/api/http_pb.js";

/** One HTTP binding of one method: the main rule or one of its additional_bindings. */
export interface RouteSpec {
  readonly method: DescMethodUnary;
  /** The HTTP method, upper case: GET, PUT, POST, DELETE, PATCH, or a custom kind. */
  readonly verb: string;
  /** The path template as written in the rule, e.g. `/v1/items/{uid=**}`. */
  readonly template: string;
  /** `""` (no body), `"*"` (the whole request) or the name of one top-level request field. */
  readonly body: string;
  /** `""` (the whole response) or the name of one top-level response field. */
  readonly responseBody: string;
  /** Where the binding was written, for start-up errors: `pkg.Service.Method (GET /v1/x)`. */
  readonly where: string;
}

const HTTP_TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * Every HTTP binding of every unary method of `services`, in declaration order (method order,
 * then the main rule before its additional bindings).
 * @throws Error naming the method when a rule is malformed (see the module comment).
 */
export function readHttpRules(services: readonly DescService[]): RouteSpec[] {
  const specs: RouteSpec[] = [];
  for (const service of services) {
    for (const method of service.methods) {
      if (method.methodKind !== "unary" || !hasOption(method, http)) continue;
      const rule = getOption(method, http);
      specs.push(toSpec(method as DescMethodUnary, rule));
      for (const binding of rule.additionalBindings) {
        const spec = toSpec(method as DescMethodUnary, binding);
        if (binding.additionalBindings.length > 0) {
          throw new Error(`${spec.where}: an additional binding may not have additional_bindings of its own`);
        }
        specs.push(spec);
      }
    }
  }
  return specs;
}

function toSpec(method: DescMethodUnary, rule: HttpRule): RouteSpec {
  const name = `${method.parent.typeName}.${method.name}`;
  const p = rule.pattern;
  if (p.case === undefined) throw new Error(`${name}: a google.api.http rule has no pattern (get, put, post, delete, patch or custom)`);
  let verb: string;
  let template: string;
  if (p.case === "custom") {
    verb = p.value.kind.toUpperCase();
    template = p.value.path;
    if (!HTTP_TOKEN.test(verb) || verb === "*") {
      throw new Error(`${name}: custom HTTP method ${JSON.stringify(p.value.kind)} is not supported (name one method)`);
    }
  } else {
    verb = p.case.toUpperCase();
    template = p.value;
  }
  return { method, verb, template, body: rule.body, responseBody: rule.responseBody, where: `${name} (${verb} ${template})` };
}
