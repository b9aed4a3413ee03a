/**
 * The OpenTelemetry SDK side of tracing: loaded by tracing.ts with a dynamic import, only when
 * an OTLP endpoint is configured. The only file that names an `@opentelemetry/*` package
 * (test/observe/tracing.test.ts holds it to that).
 *
 * Spans, per call:
 * - one SERVER span `<package.Service>/<Method>` for the whole call as the pipeline sees it
 *   (after the door decoded the request), child of the caller's W3C `traceparent` on every
 *   door; attributes rpc.system (grpc for gRPC and gRPC-web, connect_rpc, http for REST),
 *   rpc.service, rpc.method, trellis.protocol (the door: grpc, grpc-web, connect, rest),
 *   rpc.grpc.status_code (the number, on every door) and rpc.response.status_code (its
 *   name), enduser.id (the caller's subject: an identity uid or `operator:<name>`; never a
 *   token). An error adds an `exception` event (its code name and the message the client
 *   got); the span's status is ERROR only for the codes that mean the server failed
 *   (UNKNOWN, DEADLINE_EXCEEDED, UNIMPLEMENTED, INTERNAL, UNAVAILABLE, DATA_LOSS), as
 *   OpenTelemetry's RPC conventions say, so a NOT_FOUND does not page anyone.
 * - one child per before-call hook, named after it: `authenticate`, `authorize`;
 * - one child per repository call, `store <repository>.<method>` (e.g. `store
 *   groups.list`), also under `authorize` when authorization reads grants. Per repository
 *   call rather than per SQL statement or per transaction: it names what the call asked of
 *   the store, costs one span per call to it (one to three for most methods), and a write's
 *   span includes its wait in the group commit and the COMMIT's fsync, which is the storage
 *   time a caller actually waits for. A repository call made outside a traced call (start-up,
 *   probes) makes no span.
 *
 * Context travels with AsyncLocalStorage (the SDK's context manager), so a repository call
 * finds its call's span across awaits. Nothing is registered globally: each App has its own
 * provider and context manager, and an embedding program's own OpenTelemetry setup is left
 * alone.
 */
import type { DescMethod } from "@bufbuild/protobuf";
import {
  type Context,
  type DiagLogger,
  DiagLogLevel,
  diag,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type TextMapGetter,
  trace,
} from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter as OtlpJsonExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { OTLPTraceExporter as OtlpProtobufExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { defaultResource, envDetector, detectResources, resourceFromAttributes } from "@opentelemetry/resources";
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  type Sampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from "@opentelemetry/sdk-trace";
import { CODE_NAMES } from "../errors/codes.js";
import type { Logger } from "./logger.js";
import { trellisVersion } from "../version.js";
import type { CallHook, CallTracing, SubjectOf, TracingSettings, UnaryCall } from "./tracing.js";

/** rpc.system per door (OpenTelemetry's values; REST is plain HTTP to a client). */
const RPC_SYSTEM: Readonly<Record<string, string>> = { grpc: "grpc", "grpc-web": "grpc", connect: "connect_rpc", rest: "http" };

/** Codes that mean the server failed, not the request (OpenTelemetry RPC conventions). */
const SERVER_FAULTS = new Set([2, 4, 12, 13, 14, 15]);

const HEADERS: TextMapGetter<Headers> = {
  keys: (carrier) => [...carrier.keys()],
  get: (carrier, key) => carrier.get(key) ?? undefined,
};

function samplerOf(settings: TracingSettings): Sampler {
  const ratio = () => {
    const r = Number(settings.samplerArg ?? "1");
    if (!(r >= 0 && r <= 1)) throw new Error(`OTEL_TRACES_SAMPLER_ARG=${settings.samplerArg} is not a ratio between 0 and 1`);
    return new TraceIdRatioBasedSampler(r);
  };
  switch (settings.sampler) {
    case "always_on":
      return new AlwaysOnSampler();
    case "always_off":
      return new AlwaysOffSampler();
    case "traceidratio":
      return ratio();
    case "parentbased_always_on":
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case "parentbased_always_off":
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case "parentbased_traceidratio":
      return new ParentBasedSampler({ root: ratio() });
    default:
      throw new Error(`OTEL_TRACES_SAMPLER=${settings.sampler} is not supported`);
  }
}

/** The SDK's own complaints (an export that failed, a full queue) go to the server log. */
function diagToLog(log: Logger): DiagLogger {
  const warn = (message: string, ...args: unknown[]) => log.warn({ detail: args.map(String).join(" ") || undefined }, `tracing: ${message}`);
  const quiet = () => {};
  return { error: warn, warn, info: quiet, debug: quiet, verbose: quiet };
}

/** The error's code name and the message its client got; an unexpected cause is named only. */
function describeError(error: unknown): { type: string; message: string | undefined; code: number | undefined } {
  const e = error as { code?: unknown; rawMessage?: unknown; message?: unknown; name?: unknown } | null;
  if (typeof e?.code === "number") {
    const message = typeof e.rawMessage === "string" ? e.rawMessage : typeof e.message === "string" ? e.message : undefined;
    return { type: CODE_NAMES[e.code] ?? String(e.code), message, code: e.code };
  }
  // Anything else is a bug or a storage fault: its text may hold SQL or paths, which the
  // log (with the request id) keeps; the trace says only what kind of error it was.
  return { type: typeof e?.name === "string" ? e.name : "Error", message: undefined, code: undefined };
}

function recordError(span: Span, error: unknown, setStatus: boolean): void {
  const { type, message } = describeError(error);
  span.addEvent("exception", message === undefined ? { "exception.type": type } : { "exception.type": type, "exception.message": message });
  if (setStatus) span.setStatus(message === undefined ? { code: SpanStatusCode.ERROR } : { code: SpanStatusCode.ERROR, message: `${type}: ${message}` });
}

/** The options that were set (the SDK takes an explicit undefined as a value). */
function defined<T extends object>(options: T): Partial<T> {
  return Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) as Partial<T>;
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as { then?: unknown } | null)?.then === "function";
}

export function createCallTracing(settings: TracingSettings, log: Logger, subjectOf: SubjectOf): CallTracing {
  diag.setLogger(diagToLog(log), { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true });
  // service.name: OTEL_SERVICE_NAME, else one in OTEL_RESOURCE_ATTRIBUTES, else trellis.
  const resource = defaultResource()
    .merge(resourceFromAttributes({ "service.name": "trellis", "service.version": trellisVersion() }))
    .merge(detectResources({ detectors: [envDetector] }))
    .merge(settings.serviceName ? resourceFromAttributes({ "service.name": settings.serviceName }) : null);
  const exporter = settings.protocol === "http/json" ? new OtlpJsonExporter({ url: settings.url }) : new OtlpProtobufExporter({ url: settings.url });
  const provider = new TracerProvider({
    resource,
    sampler: samplerOf(settings),
    spanProcessors: [new BatchSpanProcessor({ exporter, ...defined(settings.batch) })],
  });
  const tracer = provider.getTracer("trellis", trellisVersion());
  const contexts = new AsyncLocalStorageContextManager().enable();
  const propagator = new W3CTraceContextPropagator();
  const safeUrl = new URL(settings.url);
  safeUrl.username = "";
  safeUrl.password = "";
  safeUrl.search = "";

  /** Runs `fn` as `span`'s child work and ends the span when it settles. */
  function within<T>(span: Span, parent: Context, fn: () => T, onError: (span: Span, error: unknown) => void): T {
    let result: T;
    try {
      result = contexts.with(trace.setSpan(parent, span), fn);
    } catch (error) {
      onError(span, error);
      span.end();
      throw error;
    }
    if (!isThenable(result)) {
      span.end();
      return result;
    }
    return result.then(
      (value) => {
        span.end();
        return value;
      },
      (error: unknown) => {
        onError(span, error);
        span.end();
        throw error;
      },
    ) as T;
  }

  const childFailed = (span: Span, error: unknown) => recordError(span, error, true);

  function traceRepository(name: string, repository: object, dbSystem: string): object {
    const traced: Record<string, unknown> = {};
    for (const key of Object.keys(repository)) {
      const member = (repository as Record<string, unknown>)[key];
      if (typeof member !== "function") {
        traced[key] = member;
        continue;
      }
      const spanName = `store ${name}.${key}`;
      const attributes = { "db.system.name": dbSystem, "db.operation.name": `${name}.${key}` };
      traced[key] = (...args: unknown[]) => {
        const parent = contexts.active();
        if (trace.getSpan(parent) === undefined) return member.apply(repository, args);
        const span = tracer.startSpan(spanName, { kind: SpanKind.INTERNAL, attributes }, parent);
        return within(span, parent, () => member.apply(repository, args), childFailed);
      };
    }
    return traced;
  }

  return {
    destination: `${settings.protocol} ${safeUrl.toString()}`,

    traceCall(method: DescMethod, call: UnaryCall): UnaryCall {
      const name = `${method.parent.typeName}/${method.name}`;
      const service = method.parent.typeName;
      const rpcMethod = method.name;
      return (request, context) => {
        const parent = propagator.extract(ROOT_CONTEXT, context.requestHeader, HEADERS);
        const protocol = context.protocolName;
        const span = tracer.startSpan(
          name,
          {
            kind: SpanKind.SERVER,
            attributes: { "rpc.system": RPC_SYSTEM[protocol] ?? protocol, "rpc.service": service, "rpc.method": rpcMethod, "trellis.protocol": protocol },
          },
          parent,
        );
        const ended = (code: number) => {
          span.setAttribute("rpc.grpc.status_code", code);
          span.setAttribute("rpc.response.status_code", code === 0 ? "OK" : (CODE_NAMES[code] ?? String(code)));
          const subject = subjectOf(context);
          if (subject !== undefined) span.setAttribute("enduser.id", subject);
        };
        return within(
          span,
          parent,
          () => {
            const result = call(request, context);
            if (!isThenable(result)) {
              ended(0);
              return result;
            }
            return result.then((value) => {
              ended(0);
              return value;
            });
          },
          (s, error) => {
            const { code } = describeError(error);
            ended(code ?? 2);
            recordError(s, error, SERVER_FAULTS.has(code ?? 2));
          },
        );
      };
    },

    traceHook(hook: CallHook): CallHook {
      const spanName = hook.name || "before-call";
      return (method, context, request) => {
        const parent = contexts.active();
        const span = tracer.startSpan(spanName, { kind: SpanKind.INTERNAL }, parent);
        return within(span, parent, () => hook(method, context, request), childFailed);
      };
    },

    traceStore<S extends object>(store: S, engineKind: string): S {
      // OpenTelemetry's names for the database systems ("postgresql", not our "postgres").
      const dbSystem = engineKind === "postgres" ? "postgresql" : engineKind;
      const traced: Record<string, unknown> = {};
      for (const [name, repository] of Object.entries(store)) {
        traced[name] = typeof repository === "object" && repository !== null ? traceRepository(name, repository, dbSystem) : repository;
      }
      return traced as S;
    },

    async shutdown() {
      try {
        await provider.shutdown(); // flushes the batch still queued
      } finally {
        contexts.disable();
      }
    },
  };
}
