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
 * method's request check, if it has one (chosen per method at start-up: the NUL rule on
 * writes, src/services/nul-text.ts; after the hooks, so a caller who may not call the method
 * is refused as for any other request) → the implementation → on failure, toConnectError
 * (ErrorInfo first; unexpected causes logged, never sent) → one log line {protocol, method, code, ms, caller, peer, requestId, traceId}
 * and the call's metrics (src/observe/metrics.ts). Request headers are never logged: the
 * caller is the token's subject (an identity uid or `operator:<name>`), never the token; the
 * request id and trace id were checked in the dispatcher (src/observe/call-meta.ts).
 * With an OTLP endpoint configured, the call, each hook and each repository call are also
 * OpenTelemetry spans (src/observe/tracing.ts); the wrappers are chosen here at start-up.
 * Methods with no implementation answer UNIMPLEMENTED with ErrorInfo.
 */
import type { DescMethod, DescService } from "@bufbuild/protobuf";
import { Code, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import { unimplemented } from "../errors/api-error.js";
import { CODE_NAMES } from "../errors/codes.js";
import { toConnectError } from "../errors/to-connect-error.js";
import { callerOf } from "../auth/caller.js";
import { CALL_META } from "../observe/call-meta.js";
import type { Metrics } from "../observe/metrics.js";
import type { CallTracing } from "../observe/tracing.js";
import type { Logger } from "../observe/logger.js";

/**
 * Runs before the implementation with the decoded request; may throw an ApiError to stop
 * the call. Hooks run in order (authentication, then authorization).
 */
export type BeforeCallHook = (method: DescMethod, context: HandlerContext, request: unknown) => void | Promise<void>;

/**
 * A before-call hook only some methods have (the v1 sunset, the rate limits), chosen once per
 * method at start-up, in its place among the others: a method it returns nothing for pays
 * nothing per call.
 */
export interface MethodHook {
  readonly forMethod: (method: DescMethod) => BeforeCallHook | undefined;
}

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
  readonly beforeCall?: readonly (BeforeCallHook | MethodHook)[];
  /** Where calls are counted and timed; none in unit tests of the pipeline alone. */
  readonly metrics?: Metrics;
  /**
   * OpenTelemetry spans (src/observe/tracing.ts), only when an OTLP endpoint is configured.
   * Applied here, once per method and hook at start-up: without it the wrapped functions are
   * exactly the untraced ones, so a server without tracing pays nothing per call.
   */
  readonly tracing?: CallTracing;
  /**
   * The check a method's decoded requests pass before its implementation (throws an ApiError),
   * asked once per method at start-up; undefined means the method's calls pay nothing.
   */
  readonly requestCheck?: (method: DescMethod) => ((request: unknown) => void) | undefined;
}

type AnyUnary = (request: unknown, context: HandlerContext) => unknown;

export function createCallPipeline(options: CallPipelineOptions): CallPipeline {
  const { log, errorDomain, metrics, tracing } = options;
  const hooksOf = (method: DescMethod): BeforeCallHook[] =>
    (options.beforeCall ?? []).flatMap((h) => {
      const hook = typeof h === "function" ? h : h.forMethod(method);
      if (!hook) return [];
      return [tracing ? tracing.traceHook(hook) : hook];
    });

  function wrapUnary(method: DescMethod, impl: AnyUnary | undefined): AnyUnary {
    const name = `${method.parent.typeName}/${method.name}`;
    const hooks = hooksOf(method);
    const recorder = metrics?.forMethod(method);
    const checkRequest = options.requestCheck?.(method);
    // The end of every call, whatever its outcome: one log line, its metrics. Plain reads of
    // what the doors and the hooks already put in the context; no per-call closures.
    const finish = (context: HandlerContext, code: string, start: number): void => {
      const ms = elapsed(start);
      const caller = callerOf(context);
      if (metrics && recorder) {
        metrics.callEnded();
        recorder.record(context.protocolName, code, ms / 1000);
        if (caller) metrics.tokenVerified("valid");
        else if (code === "UNAUTHENTICATED") metrics.tokenVerified(context.requestHeader.has("authorization") ? "rejected" : "missing");
      }
      if (!log.isLevelEnabled("info")) return;
      const meta = context.values.get(CALL_META);
      log.info(
        {
          protocol: context.protocolName,
          method: name,
          code,
          ms,
          caller: caller?.subject,
          peer: meta?.peer,
          requestId: meta?.requestId,
          traceId: meta?.traceId,
        },
        "call",
      );
    };
    const call: AnyUnary = async (request, context) => {
      const start = performance.now();
      metrics?.callStarted();
      try {
        for (const hook of hooks) await hook(method, context, request);
        if (checkRequest) checkRequest(request);
        if (!impl) throw unimplemented(name);
        const response = await impl(request, context);
        finish(context, "OK", start);
        return response;
      } catch (err) {
        const { error, unexpected } = toConnectError(err, errorDomain);
        if (unexpected !== undefined) log.error({ method: name, err: unexpected, requestId: context.values.get(CALL_META)?.requestId }, "unexpected error");
        finish(context, CODE_NAMES[error.code] ?? Code[error.code], start);
        throw error;
      }
    };
    return tracing ? tracing.traceCall(method, call) : call;
  }

  return {
    wrapService(service, impl) {
      const wrapped: Record<string, unknown> = {};
      const given = impl as Record<string, unknown>;
      for (const method of service.methods) {
        const own = given[method.localName];
        wrapped[method.localName] = method.methodKind === "unary" ? wrapUnary(method, own as AnyUnary | undefined) : (own ?? unimplementedStream(method));
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
