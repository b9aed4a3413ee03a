/**
 * The per-call pipeline: what every RPC passes through, on every door.
 *
 * Each unary method implementation is wrapped ONCE at start-up (`wrapService`). connect-node
 * calls the wrapped implementation for gRPC, gRPC-web and Connect; the REST door calls the
 * very same wrapped function with a HandlerContext it creates (createHandlerContext), without
 * a protocol round trip. So authentication, error mapping and the call log run identically
 * for all four protocols and there is no second code path to drift. (Connect interceptors
 * would not do this: they live inside connect-node's protocol handling, which the REST door
 * and any later fast path deliberately skip.)
 *
 * Order inside a call: before-call hooks (authentication, then authorization: src/auth/) → the
 * implementation → on failure, toConnectError (ErrorInfo first; unexpected causes logged,
 * never sent) → one log line {protocol, method, code, ms}. Request headers are never logged.
 * Methods with no implementation answer UNIMPLEMENTED with ErrorInfo.
 */
import type { DescMethod, DescService } from "@bufbuild/protobuf";
import { Code, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import { CODE_NAMES, unimplemented } from "../errors/api-error.js";
import { toConnectError } from "../errors/to-connect-error.js";
import type { Logger } from "./logger.js";

/**
 * Runs before the implementation with the decoded request; may throw an ApiError to stop
 * the call. Hooks run in order (authentication, then authorization).
 */
export type BeforeCallHook = (method: DescMethod, context: HandlerContext, request: unknown) => void | Promise<void>;

export interface CallPipeline {
  /**
   * Wraps every unary method of `service`. Missing methods answer UNIMPLEMENTED.
   * Streaming methods are passed through untouched (the API surface is unary).
   */
  wrapService<S extends DescService>(service: S, impl: Partial<ServiceImpl<S>>): ServiceImpl<S>;
}

export interface CallPipelineOptions {
  readonly log: Logger;
  readonly errorDomain: string;
  readonly beforeCall?: readonly BeforeCallHook[];
}

type AnyUnary = (request: unknown, context: HandlerContext) => unknown;

export function createCallPipeline(options: CallPipelineOptions): CallPipeline {
  const { log, errorDomain } = options;
  const hooks = options.beforeCall ?? [];

  function wrapUnary(method: DescMethod, impl: AnyUnary | undefined): AnyUnary {
    const name = `${method.parent.typeName}/${method.name}`;
    return async (request, context) => {
      const start = performance.now();
      try {
        for (const hook of hooks) await hook(method, context, request);
        if (!impl) throw unimplemented(name);
        const response = await impl(request, context);
        log.info({ protocol: context.protocolName, method: name, code: "OK", ms: elapsed(start) }, "call");
        return response;
      } catch (err) {
        const { error, unexpected } = toConnectError(err, errorDomain);
        if (unexpected !== undefined) log.error({ method: name, err: unexpected }, "unexpected error");
        log.info(
          { protocol: context.protocolName, method: name, code: CODE_NAMES[error.code] ?? Code[error.code], ms: elapsed(start) },
          "call",
        );
        throw error;
      }
    };
  }

  return {
    wrapService(service, impl) {
      const wrapped: Record<string, unknown> = {};
      const given = impl as Record<string, unknown>;
      for (const method of service.methods) {
        const own = given[method.localName];
        wrapped[method.localName] =
          method.methodKind === "unary" ? wrapUnary(method, own as AnyUnary | undefined) : (own ?? unimplementedStream(method));
      }
      return wrapped as ServiceImpl<typeof service>;
    },
  };
}

function unimplementedStream(method: DescMethod) {
  // biome-ignore lint/correctness/useYield: a stream that fails before its first message
  return async function* () {
    throw unimplemented(`${method.parent.typeName}/${method.name}`);
  };
}

function elapsed(start: number): number {
  return Math.round((performance.now() - start) * 1000) / 1000;
}
