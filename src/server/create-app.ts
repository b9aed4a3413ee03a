/**
 * The composition root: opens the store, builds the service context, wraps every service in
 * the call pipeline, mounts connect-node (gRPC, gRPC-web, Connect) plus reflection and health,
 * and listens on one port. Tests call `startApp` with port 0 and a fresh data directory.
 */
import http2 from "node:http2";
import path from "node:path";
import { create, type DescMethod, isMessage, type Message } from "@bufbuild/protobuf";
import { type HandlerContext } from "@connectrpc/connect";
import { file_google_rpc_error_details } from "../../gen/google/rpc/error_details_pb.js";
import { Health, HealthCheckResponse_ServingStatus } from "../../gen/grpc/health/v1/health_pb.js";
import { credentialInQuery, foldRepeatedAuthorization, tokenInUrlError } from "../auth/authenticate.js";
import { createExchangeService } from "../auth/exchange.js";
import { createIdpVerifier } from "../auth/idp-keys.js";
import { createAuth } from "../auth/setup.js";
import { EMPTY_TRUST } from "../auth/trust-config.js";
import type { TokenIssuer } from "../auth/tokens.js";
import { type ApiError, CODE_NAMES, internal } from "../errors/api-error.js";
import { toConnectError } from "../errors/to-connect-error.js";
import { createServiceContext } from "../services/context.js";
import { openStore, type StoreEngine } from "../store/open.js";
import { RestHandlerContext } from "../transcode/handler-context.js";
import { createRestHandler } from "../transcode/rest-handler.js";
import { authorityOf, isValidAuthority } from "./authority.js";
import { type BeforeCallHook, createCallPipeline } from "./call-pipeline.js";
import { LIMITS, type Limits, type ServerConfig } from "./config.js";
import { createConnectDoor } from "./connect-door.js";
import { createCors } from "./cors.js";
import { registerHealth } from "./health.js";
import { listen } from "./listener.js";
import { createFastConnectUnary } from "./fast-unary/connect.js";
import { createFastGrpcUnary } from "./fast-unary/grpc.js";
import { createFastGrpcWebUnary } from "./fast-unary/grpc-web.js";
import type { NodeRequest, NodeResponse } from "./fast-unary/shared.js";
import { createLogger, type Logger } from "./logger.js";
import { conformProtocolErrors, rpcProtocolOf } from "./protocol-errors.js";
import { registerReflection } from "./reflection.js";
import { strictUtf8Decoder } from "./strict-utf8.js";
import { abandonResponse, type ErrorDialect, errorDialectOf, invalidAuthority, writeError } from "./request-errors.js";
import { unknownPathAnswer } from "./unknown-method.js";
import { apiServices } from "./routes.js";
import { trellisVersion } from "../version.js";
import { attachCallMeta, CALL_META, callMetaOf } from "../observe/call-meta.js";
import { createMetrics } from "../observe/metrics.js";
import { createOpsEndpoints, listenMetrics } from "../observe/probes.js";

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
  /**
   * Tests only: one more before-call hook, run after authentication and authorization on every
   * door. It lets a test stand in for a slow handler (one still running when the client's
   * deadline passes) and look at the HandlerContext a door built, without a fake service.
   */
  readonly testHook?: BeforeCallHook;
  /**
   * Tests only: receives the server's store once it is open, to inject storage faults the way
   * they happen (e.g. a full disk, through the engine's own connection).
   */
  readonly onStore?: (store: StoreEngine) => void;
  /**
   * Tests only: runs in the dispatcher for every request whose authority passed, before any
   * door. A test throws from it to prove that a failure outside every door's own handling is
   * answered INTERNAL for that request alone, in that request's protocol.
   */
  readonly testDispatchHook?: (req: NodeRequest, res: NodeResponse) => void;
}

export async function startApp(config: ServerConfig, overrides: AppOverrides = {}): Promise<App> {
  const log = overrides.log ?? createLogger(config.logLevel);
  const store = openStore({ dataDir: config.dataDir, access: "serve" });
  try {
    overrides.onStore?.(store);
    const now = overrides.now ?? Date.now;
    await store.ensureBuiltInRoles(now());
    const ctx = await createServiceContext(store, now);
    const trust = config.trust ?? EMPTY_TRUST;
    let auth: Awaited<ReturnType<typeof createAuth>> | undefined;
    const services = apiServices(ctx, {
      securityTokenService: createExchangeService({
        issuer: () => (auth as Awaited<ReturnType<typeof createAuth>>).issuer(),
        idp: createIdpVerifier(now),
        trust,
        identities: ctx.store.identities,
        grantsOf: (identityUid) => ctx.store.roleBindings.grantsOf(identityUid),
        refreshTokens: ctx.store.refreshTokens,
        groupsNamed: async (name, within, max) => (await ctx.store.groups.listAll({ uidp: {}, name, within }, max)).map((g) => g.uid),
        now,
      }),
    });
    auth = await createAuth({
      serverValues: store.serverValues,
      now,
      services: services.map((s) => s.service),
      grantsOf: (identityUid) => ctx.store.roleBindings.grantsOf(identityUid),
      userIdps: () =>
        trust.identityProviders.flatMap((i) => (i.users && i.clientId ? [{ issuer: i.issuer, client_id: i.clientId }] : [])),
    });
    const beforeCall = overrides.testHook ? [...auth.hooks, overrides.testHook] : auth.hooks;
    const metrics = createMetrics(store.health);
    const pipeline = createCallPipeline({ log, errorDomain: config.errorDomain, beforeCall, metrics });
    // SERVING while the database can be written (the last write's or probe's outcome) and
    // the server is not shutting down.
    let stopping = false;
    const servingStatus = () =>
      !stopping && store.health.writable() ? HealthCheckResponse_ServingStatus.SERVING : HealthCheckResponse_ServingStatus.NOT_SERVING;
    // /readyz says the same as gRPC health, with the reason. Migrations need no check here:
    // opening the store applied them before anything listens, or start-up failed.
    const readiness = () => (stopping ? "draining" : store.health.writable() ? undefined : "database not writable");
    const onMetricsError = (err: unknown) => log.error({ err }, "metrics could not be collected");
    const ops = createOpsEndpoints({ readiness, metrics: config.metricsAddr ? undefined : metrics, onMetricsError });
    const shutdown = new AbortController();

    // Each implementation is wrapped once; the RPC doors and the REST door call the same
    // wrapped functions.
    const wrapped = services.map(({ service, impl }) => ({ service, impl: pipeline.wrapService(service, impl) }));
    const byMethod = new Map<DescMethod, (req: unknown, ctx: HandlerContext) => unknown>();
    for (const { service, impl } of wrapped) {
      for (const m of service.methods) byMethod.set(m, (impl as Record<string, never>)[m.localName]);
    }
    const rest = createRestHandler({
      services: services.map((s) => s.service),
      errorDomain: config.errorDomain,
      maxBodyBytes: LIMITS.maxMessageBytes,
      // The public URL clients use: the issuer URL (the listen URL unless --issuer-url says
      // otherwise, e.g. behind a proxy).
      serverUrl: () => (auth as Awaited<ReturnType<typeof createAuth>>).issuer().issuer,
      screen({ url }) {
        const param = credentialInQuery(url);
        if (param !== undefined) throw tokenInUrlError(param);
      },
      // Errors inside the pipeline are logged there; this catches the rest (binding, rendering).
      onUnexpectedError: (err) => log.error({ err, protocol: "rest" }, "unexpected error"),
      async invokeUnary(method, request, call) {
        const fn = byMethod.get(method) as (req: unknown, ctx: HandlerContext) => unknown;
        // A lean HandlerContext: its signal is linked only if read (handler-context.ts).
        const context = new RestHandlerContext({
          method,
          requestMethod: call.httpMethod,
          url: call.url,
          requestHeader: call.headers,
          requestSignal: () => call.signal,
          shutdownSignal: shutdown.signal,
        });
        context.values.set(CALL_META, callMetaOf(call.nodeRequest));
        try {
          const out = await fn(request, context);
          return (isMessage(out) ? out : create(method.output, out as never)) as Message;
        } finally {
          context.release();
        }
      },
    });

    // Bodies that are not UTF-8 are refused, not decoded with U+FFFD (strict-utf8.ts).
    const jsonOptions = { ignoreUnknownFields: false, alwaysEmitImplicit: true, textDecoder: strictUtf8Decoder };
    // The last line of defence for one request, used by every door: anything thrown by or
    // for a request outside the call pipeline (routing, building its context, reading its
    // body, writing its answer) is logged and answered INTERNAL in the request's own protocol,
    // or, once the answer has started, the request alone is cut off (request-errors.ts). The
    // log names the method and path, never the query (it may carry a credential) or headers.
    const failRequest = (req: NodeRequest, res: NodeResponse, err: unknown): void => {
      log.error({ err, method: req.method, path: pathOf(req.url) }, "request failed outside the call pipeline");
      answerError(req, res, internal(err));
    };
    const answerError = (req: NodeRequest, res: NodeResponse, err: ApiError, dialectOverride?: ErrorDialect): void => {
      if (res.writableEnded) return;
      if (res.headersSent) {
        abandonResponse(req, res);
        return;
      }
      try {
        const dialect = dialectOverride ?? errorDialectOf(req, (path) => !connectDoor.serves(path));
        writeError(res, dialect, toConnectError(err, config.errorDomain).error);
        if ("stream" in req && !req.complete) {
          // Answered before the body was read: tell the client to stop sending (RFC 9113 §8.1).
          res.once("finish", () => {
            if (!req.stream.closed) req.stream.close(http2.constants.NGHTTP2_NO_ERROR);
          });
        }
      } catch (writeErr) {
        log.error({ err: writeErr }, "could not answer a failed request");
        abandonResponse(req, res);
      }
    };

    // Plain unary gRPC, gRPC-web and Connect calls take a lean path to the same wrapped implementations
    // (src/server/fast-unary/); everything else, and everything when fastUnary is false,
    // goes to connect-node.
    const fastOptions = {
      methods: [...byMethod].map(([method, impl]) => ({ method, impl })),
      readMaxBytes: LIMITS.maxMessageBytes,
      jsonOptions,
      maxTimeoutMs: LIMITS.maxTimeoutMs,
      shutdownSignal: shutdown.signal,
      onFailure: failRequest,
    };
    const fastGrpc = overrides.fastUnary === false ? undefined : createFastGrpcUnary(fastOptions);
    const fastConnect = overrides.fastUnary === false ? undefined : createFastConnectUnary(fastOptions);
    const fastGrpcWeb = overrides.fastUnary === false ? undefined : createFastGrpcWebUnary(fastOptions);
    const connectDoor = createConnectDoor({
      routes(router) {
        for (const { service, impl } of wrapped) router.service(service, impl);
        registerHealth(router, servingStatus);
        registerReflection(
          router,
          [...services.map((s) => s.service), Health],
          [file_google_rpc_error_details],
        );
      },
      readMaxBytes: LIMITS.maxMessageBytes,
      maxTimeoutMs: LIMITS.maxTimeoutMs,
      shutdownSignal: shutdown.signal,
      // One JSON policy on every door: unknown fields are rejected, not silently dropped, and
      // fields with default values are written out (`"resourceLimits": {}`, `"verified": false`)
      // as the published service's JSON shows them.
      jsonOptions,
      onFailure: failRequest,
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
        answerError(req, res, error, dialect);
      },
    });

    const cors = createCors(config.corsOrigins ?? []);
    const versionBody = Buffer.from(JSON.stringify({ name: "trellis", version: trellisVersion() }));
    const testDispatchHook = overrides.testDispatchHook;
    const dispatch = (req: NodeRequest, res: NodeResponse): void => {
      // Before any door reads the headers: a second Authorization header must not vanish.
      foldRepeatedAuthorization(req);
      if (cors?.(req, res)) return;
      if (auth.wellKnown(req, res)) return;
      // Probes and metrics: no authentication, before any door (src/observe/probes.ts).
      if (ops(req, res)) return;
      if (req.url === "/version" && req.method === "GET") {
        // The server's version for `trellis version` and operators: public, like the
        // discovery documents (it names the build, nothing about the data).
        res.writeHead(200, { "content-type": "application/json", "content-length": String(versionBody.length), "cache-control": "no-store" });
        res.end(versionBody);
        return;
      }
      const toConnect = () => {
        conformProtocolErrors(req, res, config.errorDomain);
        connectDoor(req, res);
      };
      if (rpcProtocolOf(req) === "grpc") {
        if (fastGrpc && "stream" in req) {
          conformProtocolErrors(req, res, config.errorDomain);
          const fallback = () => connectDoor(req, res);
          if (!fastGrpc(req, res as http2.Http2ServerResponse, fallback)) fallback();
          return;
        }
        toConnect();
        return;
      }
      const protocol = rpcProtocolOf(req);
      const fast = protocol === "connect" ? fastConnect : protocol === "grpc-web" ? fastGrpcWeb : undefined;
      if (fast?.(req, res, () => connectDoor(req, res))) {
        // Taken: its answer (or connect-node's, on fallback) is written later, after this patch.
        conformProtocolErrors(req, res, config.errorDomain);
        return;
      }
      // The REST door answers its own errors; what escapes it (or connect-node after it) is
      // this request's failure, not an unhandled rejection.
      rest
        .handle(req, res)
        .then((handled) => {
          if (!handled) toConnect();
        })
        .catch((err: unknown) => failRequest(req, res, err));
    };

    const listener = await listen(
      (req, res) => {
        try {
          // First: every answer, even a refusal of the authority, carries the request id.
          attachCallMeta(req, res);
          // Before any door: every door builds a URL from the authority (authority.ts).
          const authority = authorityOf(req);
          if (!isValidAuthority(authority)) {
            answerError(req, res, invalidAuthority(authority !== undefined));
            return;
          }
          testDispatchHook?.(req, res);
          dispatch(req, res);
        } catch (err) {
          failRequest(req, res, err);
        }
      },
      {
        host: config.host,
        port: config.port,
        tls: config.tls,
        limits: overrides.limits,
      },
    );
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
        data: path.resolve(store.location),
        issuer: issuer.issuer,
        trustedIdps: trust.identityProviders.map((i) => i.issuer),
        tls: config.tls !== undefined,
        metrics: metricsListener ? `${metricsListener.url}/metrics` : `${url}/metrics`,
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
          store.close();
          log.info("trellis stopped");
          log.flush?.();
        })();
        return closing;
      },
    };
  } catch (err) {
    store.close();
    throw err;
  }
}

/** The path of a request target, without its query (which may carry a credential). */
function pathOf(url: string | undefined): string {
  const u = url ?? "";
  const q = u.indexOf("?");
  return q < 0 ? u : u.slice(0, q);
}
