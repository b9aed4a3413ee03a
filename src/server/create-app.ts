/**
 * The composition root: opens the store, builds authentication and the services, wraps every
 * service in the call pipeline once, builds the doors that call the wrapped functions, lists
 * them in order as the front door (front-door.ts; each door's place is explained where it is
 * listed), and listens on one port. Tests call `startApp` with port 0 and a fresh data
 * directory (test/support/app.ts), and add what they need through the factories named here
 * (test/support/seams.ts): the server carries no hook for tests.
 */
import type http2 from "node:http2";
import path from "node:path";
import type { DescMethod } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import { file_google_rpc_error_details } from "../../gen/google/rpc/error_details_pb.js";
import { MIGRATION_GUIDE } from "../../gen/migration_guide.js";
import { Health, HealthCheckResponse_ServingStatus } from "../../gen/grpc/health/v1/health_pb.js";
import { foldRepeatedAuthorization } from "../auth/authenticate.js";
import { callerOf } from "../auth/caller.js";
import { createIdpVerifier } from "../auth/idp-keys.js";
import { createAuth } from "../auth/setup.js";
import { EMPTY_TRUST } from "../auth/trust-config.js";
import type { TokenIssuer } from "../auth/tokens.js";
import { CODE_NAMES } from "../errors/codes.js";
import { createServiceContext } from "../services/context.js";
import { createExchangeService } from "../services/oidc/exchange.js";
import { writeRequestCheck } from "../services/nul-text.js";
import type { StoreEngine } from "../store/engine.js";
import { openStore } from "../store/open.js";
import { authorityOf, isValidAuthority } from "./authority.js";
import { type BeforeCallHook, createCallPipeline, type MethodHook } from "./call-pipeline.js";
import { LIMITS, type Limits, type ServerConfig } from "./config.js";
import { connectRoutes } from "./connect-door.js";
import { createCors } from "./cors.js";
import { registerHealth } from "./health.js";
import { listen } from "./listener.js";
import { createFastConnectUnary } from "./fast-unary/connect.js";
import { createFastGrpcUnary } from "./fast-unary/grpc.js";
import { createFastGrpcWebUnary } from "./fast-unary/grpc-web.js";
import { type Door, frontDoor, type NodeRequest, type NodeResponse, step } from "./front-door.js";
import { createLogger, type Logger } from "../observe/logger.js";
import { conformProtocolErrors, rpcProtocolOf } from "./protocol-errors.js";
import { registerReflection } from "./reflection.js";
import { strictUtf8Decoder } from "./strict-utf8.js";
import { createRequestFailures, invalidAuthority } from "./request-errors.js";
import { createRestDoor } from "./rest-door.js";
import { unknownPathAnswer } from "./unknown-method.js";
import { API_SERVICES, apiServices, TOKEN_EXCHANGE, V1_REPLACEMENTS } from "./routes.js";
import { createRateLimits } from "./rate-limits.js";
import { MIGRATION_GUIDE_PATH, v1SunsetHook } from "./v1-sunset.js";
import { trellisVersion } from "../version.js";
import { attachCallMeta } from "../observe/call-meta.js";
import { createMetrics } from "../observe/metrics.js";
import { createOpsEndpoints, listenMetrics } from "../observe/probes.js";
import { startTracing } from "../observe/tracing.js";

export interface App {
  /** Base URL with the real port, e.g. http://127.0.0.1:8080. */
  readonly url: string;
  readonly host: string;
  readonly port: number;
  readonly log: Logger;
  /** The token issuer: `iss` and `aud` of our API tokens, minting and verification. */
  readonly issuer: TokenIssuer;
  /** Where /metrics is served when `metricsAddr` moved it off the API port. */
  readonly metricsUrl?: string;
  /** The open store the app serves (it closes it): the same connections, for code in this process. */
  readonly store: StoreEngine;
  /** Graceful stop: refuse new work, finish in-flight calls, close the database. */
  close(): Promise<void>;
}

export interface AppOverrides {
  readonly now?: () => number;
  readonly log?: Logger;
  /** Overrides of the pinned transport limits (tests prove each one with short values). */
  readonly limits?: Partial<Limits>;
  /**
   * false: every gRPC, gRPC-web and Connect call goes through connect-node (the differential
   * tests compare both); default true: plain unary calls take the lean path
   * (src/server/fast-unary/).
   */
  readonly fastUnary?: boolean;
}

export async function startApp(config: ServerConfig, overrides: AppOverrides = {}): Promise<App> {
  const log = overrides.log ?? createLogger(config.logLevel);
  // Spans only when OTEL_EXPORTER_OTLP_ENDPOINT (or its traces variant) is set; the SDK is
  // loaded then and only then (src/observe/tracing.ts). A bad setting refuses to start.
  const tracing = await startTracing(process.env, log, (context) => callerOf(context)?.subject);
  let store: StoreEngine;
  try {
    store = await openStore({ dataDir: config.dataDir, databaseUrl: config.databaseUrl, poolSize: config.poolSize, access: "serve" });
  } catch (err) {
    await tracing?.shutdown();
    throw err;
  }
  try {
    const now = overrides.now ?? Date.now;
    await store.ensureBuiltInRoles(now());
    const untracedCtx = await createServiceContext(store, now);
    // With tracing on, every repository call becomes a child span of the call that made it.
    const ctx = tracing ? { ...untracedCtx, store: tracing.traceStore(untracedCtx.store, store.kind) } : untracedCtx;
    const trust = config.trust ?? EMPTY_TRUST;
    const grantsOf = (identityUid: string) => ctx.store.roleBindings.grantsOf(identityUid);
    // Authentication and authorization first: they plan from the descriptors alone, and the
    // token exchange (a service like any other) needs the issuer they make.
    const auth = await createAuth({
      serverValues: store.serverValues,
      now,
      services: API_SERVICES,
      grantsOf,
      userIdps: () => trust.identityProviders.flatMap((i) => (i.users && i.clientId ? [{ issuer: i.issuer, client_id: i.clientId }] : [])),
    });
    const services = apiServices(ctx, {
      securityTokenService: createExchangeService({
        issuer: auth.issuer,
        idp: createIdpVerifier(now),
        trust,
        identities: ctx.store.identities,
        grantsOf,
        refreshTokens: ctx.store.refreshTokens,
        groupsNamed: async (name, within, max) => (await ctx.store.groups.listAll({ uidp: {}, name, within }, max)).map((g) => g.uid),
        now,
      }),
    });
    // First, where the engine needs it (PostgreSQL): the shared values (keys, revocations) catch
    // up with every change committed before the call, so a revocation or rotation made on
    // another replica applies to this call (engine.ts `catchUp`). SQLite's watchers need no hook.
    // Named: its span (with tracing on) is called after it.
    const catchUp = store.serverValues.catchUp;
    // The rate limits (rate-limits.ts): failed authentications counted per peer around
    // authentication, each caller's bucket between who is calling and may they.
    const [authenticate, authorize] = auth.hooks;
    const limits = config.rateLimits ? createRateLimits(config.rateLimits, new Set([TOKEN_EXCHANGE])) : undefined;
    const authHooks: readonly (BeforeCallHook | MethodHook)[] = [
      ...(catchUp
        ? [
            function catchUpSharedValues() {
              return catchUp();
            },
          ]
        : []),
      limits ? limits.guardAuthentication(authenticate) : authenticate,
      ...(limits ? [limits.limits] : []),
      authorize,
    ];
    // First of all, on the v1 methods only: their deprecation headers, or their end (v1-sunset.ts).
    const sunset =
      config.v1SunsetAt === undefined
        ? []
        : [v1SunsetHook({ sunsetAt: config.v1SunsetAt, services: V1_REPLACEMENTS, serverUrl: () => auth.issuer().issuer, now })];
    const beforeCall = [...sunset, ...authHooks];
    const metrics = createMetrics(store.health);
    // Writes refuse a NUL in any string of their request, the same on every engine (nul-text.ts).
    const pipeline = createCallPipeline({ log, errorDomain: config.errorDomain, beforeCall, metrics, tracing, requestCheck: writeRequestCheck });
    // SERVING while the database can be written (the last write's or probe's outcome) and
    // the server is not shutting down.
    let stopping = false;
    const servingStatus = () =>
      !stopping && store.health.writable() ? HealthCheckResponse_ServingStatus.SERVING : HealthCheckResponse_ServingStatus.NOT_SERVING;
    // /readyz says the same as gRPC health, with the reason. Migrations need no check here:
    // opening the store applied them before anything listens, or start-up failed.
    const readiness = () => (stopping ? "draining" : store.health.writable() ? undefined : "database not writable");
    const onMetricsError = (err: unknown) => log.error({ err }, "metrics could not be collected");
    const shutdown = new AbortController();

    // Each implementation is wrapped once; every door calls the same wrapped functions.
    const wrapped = services.map(({ service, impl }) => ({ service, impl: pipeline.wrapService(service, impl) }));
    const byMethod = new Map<DescMethod, (req: unknown, ctx: HandlerContext) => unknown>();
    for (const { service, impl } of wrapped) {
      for (const m of service.methods) byMethod.set(m, (impl as Record<string, never>)[m.localName]);
    }
    // connect-node's router: gRPC, gRPC-web and Connect for every service, plus health and
    // reflection.
    const rpcRoutes = connectRoutes({
      routes(router) {
        for (const { service, impl } of wrapped) router.service(service, impl);
        registerHealth(router, servingStatus);
        registerReflection(router, [...API_SERVICES, Health], [file_google_rpc_error_details]);
      },
      readMaxBytes: LIMITS.maxMessageBytes,
      maxTimeoutMs: LIMITS.maxTimeoutMs,
      shutdownSignal: shutdown.signal,
      // One JSON policy on every door: unknown fields are rejected, not silently dropped, and
      // fields with default values are written out (`"resourceLimits": {}`, `"verified": false`)
      // as the published service's JSON shows them.
      jsonOptions,
    });
    // The last line of defence for one request, used by every door (request-errors.ts).
    const failures = createRequestFailures({ log, errorDomain: config.errorDomain, isRpcPath: rpcRoutes.serves });
    const connectDoor = rpcRoutes.door({
      onFailure: failures.fail,
      // Never a bare 404: gRPC, gRPC-web and Connect clients get UNIMPLEMENTED naming the
      // method, anything else REST's NOT_FOUND (unknown-method.ts).
      onUnknownPath(req, res, path, knownServices) {
        const { dialect, error } = unknownPathAnswer(
          path,
          rpcProtocolOf(req),
          req.headers["connect-protocol-version"] !== undefined,
          knownServices,
          (req.method ?? "GET").toUpperCase(),
        );
        // The dialect is one of four words, the code one of the gRPC names: bounded labels.
        metrics.recordUnknown(dialect, CODE_NAMES[error.code] ?? "UNKNOWN");
        failures.answer(req, res, error, dialect);
      },
    });
    // Plain unary gRPC, gRPC-web and Connect calls take a lean path to the same wrapped
    // implementations (src/server/fast-unary/); everything else, and everything when
    // fastUnary is false, goes to connect-node.
    const fastOptions = {
      methods: [...byMethod].map(([method, impl]) => ({ method, impl })),
      readMaxBytes: LIMITS.maxMessageBytes,
      jsonOptions,
      maxTimeoutMs: LIMITS.maxTimeoutMs,
      shutdownSignal: shutdown.signal,
      onFailure: failures.fail,
    };
    const fast = overrides.fastUnary !== false;
    const fastGrpc = fast ? createFastGrpcUnary(fastOptions) : undefined;
    const fastConnect = fast ? createFastConnectUnary(fastOptions) : undefined;
    const fastGrpcWeb = fast ? createFastGrpcWebUnary(fastOptions) : undefined;
    const corsDoor = createCors(config.corsOrigins ?? []);

    // The doors that need more than one line, named for the list below.
    const refuseBadAuthority: Door = (req, res) => {
      const authority = authorityOf(req);
      if (isValidAuthority(authority)) return false;
      failures.answer(req, res, invalidAuthority(authority !== undefined));
      return true;
    };
    const connectNode = (req: NodeRequest, res: NodeResponse): true => {
      conformProtocolErrors(req, res, config.errorDomain);
      connectDoor(req, res);
      return true;
    };
    const grpcDoor: Door = (req, res) => {
      if (rpcProtocolOf(req) !== "grpc") return false;
      if (!fastGrpc || !("stream" in req)) return connectNode(req, res);
      conformProtocolErrors(req, res, config.errorDomain);
      const fallback = () => connectDoor(req, res);
      if (!fastGrpc(req, res as http2.Http2ServerResponse, fallback)) fallback();
      return true;
    };
    const fastConnectAndGrpcWeb: Door = (req, res) => {
      const protocol = rpcProtocolOf(req);
      const tryFast = protocol === "connect" ? fastConnect : protocol === "grpc-web" ? fastGrpcWeb : undefined;
      if (!tryFast?.(req, res, () => connectDoor(req, res))) return false;
      // Taken: its answer (or connect-node's, on fallback) is written later, after this patch.
      conformProtocolErrors(req, res, config.errorDomain);
      return true;
    };
    const restDoor = createRestDoor({
      services: API_SERVICES,
      implOf: (method) => byMethod.get(method) as (req: unknown, ctx: HandlerContext) => unknown,
      errorDomain: config.errorDomain,
      maxBodyBytes: LIMITS.maxMessageBytes,
      // The public URL clients use: the issuer URL (the listen URL unless --issuer-url says
      // otherwise, e.g. behind a proxy).
      serverUrl: () => auth.issuer().issuer,
      shutdownSignal: shutdown.signal,
      log,
      onFailure: failures.fail,
    });

    // The front door (front-door.ts): the doors in order; the first that takes a request
    // answers it, inside the one guard every request gets (request-errors.ts).
    const handleRequest = frontDoor(
      [
        // First: every answer, even a refusal of the authority, carries the request id.
        step(attachCallMeta),
        // Before any door: every door builds a URL from the authority (authority.ts).
        refuseBadAuthority,
        // Before any door reads the headers: a second Authorization header must not vanish.
        step(foldRepeatedAuthorization),
        // A browser's preflight (and CORS headers on every answer to an allowed origin).
        ...(corsDoor ? [corsDoor] : []),
        // Public GETs before any API door, without a token: the issuer's JWKS and discovery
        // documents, probes and metrics (a kubelet or a scraper holds no token), the version,
        // the migration guide.
        auth.wellKnown,
        createOpsEndpoints({ readiness, metrics: config.metricsAddr ? undefined : metrics, onMetricsError }),
        versionDoor,
        guideDoor,
        // gRPC never reaches REST: over h2 the fast door may take a plain unary call (and
        // hands anything else to connect-node), otherwise connect-node takes it.
        grpcDoor,
        // Plain unary Connect and gRPC-web calls, before REST: a Connect unary POST to a
        // method's path is an RPC, not a REST route.
        ...(fast ? [fastConnectAndGrpcWeb] : []),
        // REST/JSON: the paths of a google.api.http template (and /openapi.json).
        restDoor,
        // Last, everything else: connect-node, which answers a path it does not hold itself
        // (unknown-method.ts).
        connectNode,
      ],
      failures.fail,
    );

    const listener = await listen(handleRequest, {
      host: config.host,
      port: config.port,
      tls: config.tls,
      limits: overrides.limits,
    });
    const scheme = config.tls ? "https" : "http";
    const hostForUrl = listener.host.includes(":") ? `[${listener.host}]` : listener.host;
    const url = `${scheme}://${hostForUrl}:${listener.port}`;
    const issuer = await auth.start(config.issuerUrl ?? url);
    // Start-up writes are done (they may wait on the loop: nothing is served yet); from now
    // on a write that finds the lock taken waits on a timer, never blocking reads.
    store.startServing(overrides.limits?.storageBusyMs ?? LIMITS.storageBusyMs);
    // Keeps the health status current when no write comes: a probe write only after a quiet
    // interval (a busy server's own writes say enough), at most one at a time.
    const probeEveryMs = overrides.limits?.storageProbeMs ?? LIMITS.storageProbeMs;
    let probing = false;
    const prober = setInterval(() => {
      if (probing || store.health.msSinceLastOutcome() < probeEveryMs) return;
      probing = true;
      store.health
        .probe()
        .catch((err: unknown) => log.warn({ err }, "storage probe failed: the database cannot be written"))
        .finally(() => {
          probing = false;
        });
    }, probeEveryMs);
    prober.unref();
    let metricsListener: Awaited<ReturnType<typeof listenMetrics>> | undefined;
    if (config.metricsAddr) {
      try {
        metricsListener = await listenMetrics(config.metricsAddr.host, config.metricsAddr.port, metrics, onMetricsError);
      } catch (err) {
        // The API port is open already: close it too, or a failed start would leave it bound.
        clearInterval(prober);
        await listener.close(0);
        throw err;
      }
    }
    log.info(
      {
        version: trellisVersion(),
        listen: url,
        storage: store.kind,
        data: store.kind === "sqlite" ? path.resolve(store.location) : store.location,
        issuer: issuer.issuer,
        trustedIdps: trust.identityProviders.map((i) => i.issuer),
        tls: config.tls !== undefined,
        metrics: metricsListener ? `${metricsListener.url}/metrics` : `${url}/metrics`,
        traces: tracing?.destination ?? false,
      },
      "trellis started",
    );

    let closing: Promise<void> | undefined;
    return {
      url,
      host: listener.host,
      port: listener.port,
      log,
      issuer,
      metricsUrl: metricsListener?.url,
      store,
      close() {
        closing ??= (async () => {
          // Readiness (and gRPC health) fail first, while everything is still answered: a
          // load balancer polling /readyz stops sending new work during the drain period,
          // and only then does the listener refuse connections and in-flight calls finish.
          stopping = true;
          const drainMs = config.drainMs ?? 0;
          log.info({ drainMs }, "trellis stopping: not ready, draining");
          if (drainMs > 0) await new Promise((resolve) => setTimeout(resolve, drainMs));
          clearInterval(prober);
          await listener.close(overrides.limits?.shutdownGraceMs ?? LIMITS.shutdownGraceMs);
          await metricsListener?.close();
          shutdown.abort();
          await store.close().catch((err: unknown) => log.warn({ err }, "the database did not close cleanly"));
          // The spans of the last calls are still in the batch: export them before exiting.
          await tracing?.shutdown().catch((err: unknown) => log.warn({ err }, "tracing: the last spans could not be exported"));
          log.info("trellis stopped");
          log.flush?.();
        })();
        return closing;
      },
    };
  } catch (err) {
    await store.close().catch(() => {});
    await tracing?.shutdown();
    throw err;
  }
}

// Bodies that are not UTF-8 are refused, not decoded with U+FFFD (strict-utf8.ts).
const jsonOptions = { ignoreUnknownFields: false, alwaysEmitImplicit: true, textDecoder: strictUtf8Decoder };

const versionBody = Buffer.from(JSON.stringify({ name: "trellis", version: trellisVersion() }));
const guideBody = Buffer.from(MIGRATION_GUIDE);

/**
 * `GET /docs/migrating.md`, public: the migration guide (docs/migrating.md), which v1's
 * deprecation headers link to (v1-sunset.ts).
 */
const guideDoor: Door = (req, res) => {
  if (req.method !== "GET" || req.url !== MIGRATION_GUIDE_PATH) return false;
  res.writeHead(200, { "content-type": "text/markdown; charset=utf-8", "content-length": String(guideBody.length), "cache-control": "public, max-age=3600" });
  res.end(guideBody);
  return true;
};

/**
 * `GET /version`, for `trellis version` and operators: public, like the discovery documents
 * (it names the build, nothing about the data).
 */
const versionDoor: Door = (req, res) => {
  if (req.url !== "/version" || req.method !== "GET") return false;
  res.writeHead(200, { "content-type": "application/json", "content-length": String(versionBody.length), "cache-control": "no-store" });
  res.end(versionBody);
  return true;
};
