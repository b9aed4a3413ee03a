/**
 * The token exchange's doors: the four RPC transports (call-method.ts) and the two REST forms
 * clients send, `GET /sts/exchange` with the fields in the query and the form-encoded POST the
 * published SDK sends (also the only REST form of ExchangeRefreshToken). The presented token
 * goes in the Authorization header, as on every door; null sends none.
 *
 * Outcomes are call-method.ts's CallOutcome, so the exchange tests read answers the way the
 * other door tests do.
 */
import { create, type DescMessage, type DescMethodUnary, type JsonObject, type MessageInitShape, toJson } from "@bufbuild/protobuf";
import { readHttpRules } from "../../src/transcode/http-rule.js";
import { type CallOutcome, restOutcome, rpcDoor } from "./call-method.js";
import { rest } from "./rest.js";
import { rpcTransports } from "./transports.js";

export interface ExchangeDoor {
  readonly name: string;
  call<M extends DescMessage>(
    baseUrl: string,
    presented: string | null,
    method: DescMethodUnary<M>,
    request: MessageInitShape<M>,
    options?: { readonly headers?: Readonly<Record<string, string>> },
  ): Promise<CallOutcome>;
}

/** The request's fields as form parameters: JSON names, repeated fields repeated. */
function formOf<M extends DescMessage>(method: DescMethodUnary<M>, request: MessageInitShape<M>): URLSearchParams {
  const json = toJson(method.input, create(method.input, request), { alwaysEmitImplicit: false }) as JsonObject;
  const form = new URLSearchParams();
  for (const [name, value] of Object.entries(json)) {
    for (const one of Array.isArray(value) ? value : [value]) form.append(name, String(one));
  }
  return form;
}

/** The method's own REST path (its google.api.http rule; the exchange's have no variables). */
function pathOf(method: DescMethodUnary): string {
  const spec = readHttpRules([method.parent]).find((s) => s.method === method);
  if (!spec) throw new Error(`${method.name} has no HTTP rule`);
  return spec.template;
}

function restForm(verb: "GET" | "POST"): ExchangeDoor {
  return {
    name: verb === "GET" ? "rest GET /sts/exchange" : "rest POST (form)",
    async call(baseUrl, presented, method, request, options) {
      const form = formOf(method, request);
      const headers: Record<string, string> = { ...options?.headers, authorization: presented === null ? "" : `Bearer ${presented}` };
      const path = pathOf(method as DescMethodUnary);
      const res =
        verb === "GET"
          ? await rest(baseUrl, "GET", `${path}?${form}`, undefined, headers)
          : await rest(baseUrl, "POST", path, form.toString(), { ...headers, "content-type": "application/x-www-form-urlencoded" });
      return restOutcome(res);
    },
  };
}

/** The RPC transports, then REST's GET and form POST. */
export const exchangeDoors: readonly ExchangeDoor[] = [
  ...rpcTransports.map((transport): ExchangeDoor => {
    const door = rpcDoor(transport);
    return { name: door.name, call: (baseUrl, presented, method, request, options) => door.call(baseUrl, presented, method, request, options) };
  }),
  restForm("GET"),
  restForm("POST"),
];
