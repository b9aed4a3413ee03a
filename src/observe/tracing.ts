/**
 * OpenTelemetry traces, on only when the operator configured an OTLP endpoint.
 *
 * This file is what every server loads: it reads the standard OTEL_* variables and, only when
 * an endpoint is set, imports the SDK (tracing-sdk.ts, the one file that names an
 * `@opentelemetry/*` package) with a dynamic import. A server without the variable therefore
 * never loads the SDK, and the call pipeline is built exactly as without tracing: the choice
 * is made once when the methods are wrapped at start-up, so a call pays nothing for it, not
 * even a test of a flag.
 *
 * Variables (the OpenTelemetry SDK's own names, so an operator's usual setup works):
 * - OTEL_EXPORTER_OTLP_ENDPOINT (base URL; `/v1/traces` is appended) or
 *   OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (the full URL): either one turns tracing on;
 * - OTEL_EXPORTER_OTLP_TRACES_PROTOCOL / OTEL_EXPORTER_OTLP_PROTOCOL: `http/protobuf`
 *   (the default, as the specification says) or `http/json`; `grpc` is refused at start-up
 *   (the binary carries no gRPC exporter) rather than silently exporting nothing;
 * - OTEL_SERVICE_NAME (default `trellis`), OTEL_RESOURCE_ATTRIBUTES;
 * - OTEL_TRACES_SAMPLER / OTEL_TRACES_SAMPLER_ARG (default `parentbased_always_on`: a
 *   caller's sampling decision in `traceparent` is followed);
 * - OTEL_BSP_SCHEDULE_DELAY, _EXPORT_TIMEOUT, _MAX_QUEUE_SIZE, _MAX_EXPORT_BATCH_SIZE;
 * - OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT, _COMPRESSION, _CERTIFICATE…: read by the exporter;
 * - OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none turn tracing off again.
 */
import type { DescMethod } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import type { Logger } from "./logger.js";

type Env = Readonly<Record<string, string | undefined>>;

/** A unary implementation as the call pipeline holds it. */
/**
 * The caller's subject for a call's `enduser.id` (undefined before authentication or without
 * a caller). Handed in by the composition root: who the caller is belongs to auth, a layer
 * above this one.
 */
export type SubjectOf = (context: HandlerContext) => string | undefined;

export type UnaryCall = (request: unknown, context: HandlerContext) => unknown;
/** A before-call hook as the call pipeline holds it (authentication, authorization). */
export type CallHook = (method: DescMethod, context: HandlerContext, request: unknown) => void | Promise<void>;

/** What the server wraps when tracing is on; built by tracing-sdk.ts. */
export interface CallTracing {
  /** Where spans go, for the start-up line: protocol and URL, without credentials. */
  readonly destination: string;
  /** The call as one server span, child of the caller's `traceparent` when it sent one. */
  traceCall(method: DescMethod, call: UnaryCall): UnaryCall;
  /** A before-call hook as a child span named after the hook (`authenticate`, `authorize`). */
  traceHook(hook: CallHook): CallHook;
  /**
   * Every repository method as a child span of the call that called it (`store groups.get`),
   * its `db.system.name` said by the engine's kind (`StoreEngine.kind`).
   */
  traceStore<S extends object>(store: S, engineKind: string): S;
  /** Exports what is still buffered and stops (graceful shutdown). */
  shutdown(): Promise<void>;
}

/** The settings tracing-sdk.ts needs, read from the environment once. */
export interface TracingSettings {
  readonly protocol: "http/protobuf" | "http/json";
  /** The full traces URL (the exporter would derive the same one). */
  readonly url: string;
  /** OTEL_SERVICE_NAME when set (it wins over OTEL_RESOURCE_ATTRIBUTES' service.name). */
  readonly serviceName: string | undefined;
  readonly sampler: string;
  readonly samplerArg: string | undefined;
  /** OTEL_BSP_* (the batch span processor), each undefined for the SDK's default. */
  readonly batch: {
    readonly scheduledDelayMillis?: number;
    readonly exportTimeoutMillis?: number;
    readonly maxQueueSize?: number;
    readonly maxExportBatchSize?: number;
  };
}

const PROTOCOLS = new Set(["http/protobuf", "http/json"]);

function nonEmpty(value: string | undefined): string | undefined {
  const v = value?.trim();
  return v ? v : undefined;
}

/**
 * The tracing settings the environment asks for, or undefined when tracing is off.
 * @throws Error naming the variable when it asks for something this server cannot do.
 */
export function tracingSettings(env: Env): TracingSettings | undefined {
  if (nonEmpty(env.OTEL_SDK_DISABLED)?.toLowerCase() === "true") return undefined;
  const exporter = nonEmpty(env.OTEL_TRACES_EXPORTER)?.toLowerCase() ?? "otlp";
  if (exporter === "none") return undefined;
  const tracesEndpoint = nonEmpty(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
  const endpoint = nonEmpty(env.OTEL_EXPORTER_OTLP_ENDPOINT);
  if (!tracesEndpoint && !endpoint) return undefined;
  if (exporter !== "otlp") throw new Error(`OTEL_TRACES_EXPORTER=${exporter} is not supported: only otlp (or none)`);
  const protocol = nonEmpty(env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL) ?? nonEmpty(env.OTEL_EXPORTER_OTLP_PROTOCOL) ?? "http/protobuf";
  if (!PROTOCOLS.has(protocol)) {
    throw new Error(`OTEL_EXPORTER_OTLP_PROTOCOL=${protocol} is not supported: use http/protobuf or http/json (an OpenTelemetry Collector accepts both)`);
  }
  const url = tracesEndpoint ?? `${(endpoint as string).replace(/\/+$/, "")}/v1/traces`;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error(`the OTLP traces endpoint ${JSON.stringify(url)} is not a URL`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") throw new Error(`the OTLP traces endpoint must be http or https, not ${parsed.protocol}`);
  return {
    protocol: protocol as TracingSettings["protocol"],
    url,
    serviceName: nonEmpty(env.OTEL_SERVICE_NAME),
    sampler: nonEmpty(env.OTEL_TRACES_SAMPLER)?.toLowerCase() ?? "parentbased_always_on",
    samplerArg: nonEmpty(env.OTEL_TRACES_SAMPLER_ARG),
    batch: {
      scheduledDelayMillis: count(env, "OTEL_BSP_SCHEDULE_DELAY"),
      exportTimeoutMillis: count(env, "OTEL_BSP_EXPORT_TIMEOUT"),
      maxQueueSize: count(env, "OTEL_BSP_MAX_QUEUE_SIZE"),
      maxExportBatchSize: count(env, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE"),
    },
  };
}

function count(env: Env, name: string): number | undefined {
  const raw = nonEmpty(env[name]);
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n <= 0) throw new Error(`${name}=${raw} is not a positive whole number`);
  return n;
}

let sdkLoaded = false;

/** Whether this process loaded the tracing SDK (tests prove a server without the variable does not). */
export function tracingSdkLoaded(): boolean {
  return sdkLoaded;
}

/**
 * Starts tracing when the environment configures it: loads the SDK and returns the wrappers
 * the server applies at start-up; undefined (and nothing loaded) otherwise.
 */
export async function startTracing(env: Env, log: Logger, subjectOf: SubjectOf): Promise<CallTracing | undefined> {
  const settings = tracingSettings(env);
  if (!settings) return undefined;
  const sdk = await import("./tracing-sdk.js");
  sdkLoaded = true;
  return sdk.createCallTracing(settings, log, subjectOf);
}
