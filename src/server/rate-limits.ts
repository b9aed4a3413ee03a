/**
 * Rate limits (docs/rest.md "Rate limits"): buckets of calls per caller, per class of method,
 * kept in this process's memory by rate-limiter-flexible (RateLimiterMemory).
 *
 * - Classes: `reads` (methods whose HTTP rule is a GET), `writes` (every other method),
 *   `exchange` (the token exchange, SecurityTokenService). Each class is a bucket of `points`
 *   calls that refills whole `seconds` after its first call (the library's fixed window: a
 *   caller may spend a bucket at once, then waits for the refill).
 * - Who: the caller's identity (the token's subject) after authentication; the peer address
 *   for a call without one. The exchange is counted per peer address always.
 * - Where: reads and writes on the versions in `versions` only (by default the generally
 *   available v2; the spec: not enforced during the beta, so v2beta1 and v1 only when the
 *   operator adds them); the exchange and failed authentications on every version.
 * - Failed authentications (UNAUTHENTICATED from the authentication hook) are counted per
 *   peer address: a peer past `failed_authentications` is refused before its token is even
 *   read, until the window ends (a brute-force guard). Behind a reverse proxy every peer is the
 *   proxy: set that quota with it in mind.
 * - Over a limit: RESOURCE_EXHAUSTED, reason RATE_LIMIT_EXCEEDED, then QuotaFailure (whose
 *   quota: `identity:<uid>` or `peer:<address>`, and which) and RetryInfo; the answer's headers
 *   carry `Retry-After` and the IETF `RateLimit-Policy` / `RateLimit` fields (REST and Connect
 *   as HTTP headers, gRPC and gRPC-web as response metadata). A call within its limit gets
 *   the two RateLimit fields too, so a client can pace itself.
 * - Across PostgreSQL replicas each replica counts alone: a caller spread over N replicas by a
 *   load balancer gets up to N times the quota (docs/scale-out.md). Sharing the count through
 *   the database (the library's PostgreSQL store) would cost every limited call a round trip
 *   to it; docs/performance.md has both measured.
 *
 * The limits are before-call hooks (call-pipeline.ts): `forMethod` picks each method's bucket
 * at start-up (a method with none pays nothing), `guardAuthentication` wraps the
 * authentication hook. The library reads `Date.now()`; tests move it with fake timers.
 */
import type { DescMethod, DescService } from "@bufbuild/protobuf";
import { getOption, hasOption } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import { RateLimiterMemory, RateLimiterRes } from "rate-limiter-flexible";
import { http } from "../../gen/google/api/annotations_pb.js";
import { callerOf } from "../auth/caller.js";
import { ApiError, GrpcCode, rateLimited } from "../errors/api-error.js";
import { CALL_META } from "../observe/call-meta.js";
import type { BeforeCallHook, MethodHook } from "./call-pipeline.js";

/** `points` calls per window of `seconds`; `off`: no limit. */
export type Quota = { readonly points: number; readonly seconds: number } | "off";

/** The API versions reads and writes may be limited on. */
export const API_VERSIONS = ["v2", "v2beta1", "v1"] as const;
export type ApiVersion = (typeof API_VERSIONS)[number];

export interface RateLimitSettings {
  /** Per caller, methods with a GET rule. */
  readonly reads: Quota;
  /** Per caller, every other method. */
  readonly writes: Quota;
  /** Per peer address, the token exchange, on every version. */
  readonly exchange: Quota;
  /** Per peer address, failed authentications, on every version. */
  readonly failedAuthentications: Quota;
  /** Where reads and writes are limited. */
  readonly versions: readonly ApiVersion[];
}

/**
 * The defaults: generous for any client that paces itself (a page of 200 a second stays far
 * inside `reads`), small enough that one caller cannot keep a replica busy alone.
 */
export const DEFAULT_RATE_LIMITS: RateLimitSettings = {
  reads: { points: 1200, seconds: 60 },
  writes: { points: 300, seconds: 60 },
  exchange: { points: 60, seconds: 60 },
  failedAuthentications: { points: 20, seconds: 300 },
  versions: ["v2"],
};

/** The names clients see (QuotaFailure, RateLimit-Policy) and the settings use. */
const POLICY = { reads: "reads", writes: "writes", exchange: "exchange", failedAuthentications: "failed_authentications" } as const;
type Policy = keyof typeof POLICY;

/** The version of a service, from its package: `….v2`, `….v2beta1`, anything else is v1. */
export function apiVersionOf(service: DescService): ApiVersion {
  const last = service.typeName.split(".").at(-2);
  return last === "v2" ? "v2" : last === "v2beta1" ? "v2beta1" : "v1";
}

export interface RateLimits {
  /** The per-caller limits, for the place after authentication. */
  readonly limits: MethodHook;
  /** `authenticate`, refusing a peer past its failed authentications and counting new ones. */
  guardAuthentication(authenticate: BeforeCallHook): BeforeCallHook;
}

/** @param exchange the token exchange's services */
export function createRateLimits(settings: RateLimitSettings, exchange: ReadonlySet<DescService>): RateLimits {
  const buckets = new Map<Policy, Bucket>();
  for (const policy of Object.keys(POLICY) as Policy[]) {
    const quota = settings[policy];
    if (quota !== "off") buckets.set(policy, new Bucket(policy, quota));
  }
  const versions = new Set(settings.versions);
  const failures = buckets.get("failedAuthentications");
  /** Peer → when its block ends (ms, Date.now's clock): read synchronously on every call. */
  const blocked = new Map<string, number>();

  return {
    limits: {
      forMethod(method) {
        const policy: Policy | undefined = exchange.has(method.parent)
          ? "exchange"
          : versions.has(apiVersionOf(method.parent))
            ? isRead(method)
              ? "reads"
              : "writes"
            : undefined;
        const bucket = policy && buckets.get(policy);
        if (!bucket) return undefined;
        const perPeer = policy === "exchange";
        return async function rateLimit(_method, context) {
          const subject = perPeer ? undefined : callerOf(context)?.subject;
          await bucket.take(context, subject === undefined ? `peer:${peerOf(context)}` : `identity:${subject}`);
        };
      },
    },

    guardAuthentication(inner) {
      if (!failures) return inner;
      const failed = (peer: string, err: unknown) => {
        if (!(err instanceof ApiError) || err.code !== GrpcCode.Unauthenticated) return;
        // The failure that spends the last point blocks the peer for the rest of the window.
        const block = (res: unknown) => {
          if (!(res instanceof RateLimiterRes) || res.remainingPoints > 0) return;
          if (blocked.size >= MAX_BLOCKED) sweep(blocked);
          blocked.set(peer, Date.now() + res.msBeforeNext);
        };
        failures.spend(`peer:${peer}`).then(block, block);
      };
      // Named like the hook it wraps: its span keeps the name (src/observe/tracing-sdk.ts).
      return function authenticate(method, context, request) {
        const peer = peerOf(context);
        const until = blocked.get(peer);
        if (until !== undefined) {
          const left = until - Date.now();
          if (left > 0) failures.refuse(context, `peer:${peer}`, left);
          blocked.delete(peer);
        }
        let out: void | Promise<void>;
        try {
          out = inner(method, context, request);
        } catch (err) {
          failed(peer, err);
          throw err;
        }
        return out?.then(undefined, (err: unknown) => {
          failed(peer, err);
          throw err;
        });
      };
    },
  };
}

/** A peer may cross the failure limit at most this many at a time before old entries are swept. */
const MAX_BLOCKED = 10_000;

function sweep(blocked: Map<string, number>): void {
  const now = Date.now();
  for (const [peer, until] of blocked) if (until <= now) blocked.delete(peer);
}

/** One class's bucket: the library's limiter and how its state reads in headers and errors. */
class Bucket {
  readonly #limiter: RateLimiterMemory;
  readonly #name: string;
  readonly #quota: { readonly points: number; readonly seconds: number };
  readonly #policy: string;

  constructor(policy: Policy, quota: { readonly points: number; readonly seconds: number }) {
    this.#name = POLICY[policy];
    this.#quota = quota;
    this.#limiter = new RateLimiterMemory({ points: quota.points, duration: quota.seconds, keyPrefix: this.#name });
    this.#policy = `"${this.#name}";q=${quota.points};w=${quota.seconds}`;
  }

  /** Spends one call of `key`'s bucket, or refuses the call (RESOURCE_EXHAUSTED). */
  async take(context: HandlerContext, key: string): Promise<void> {
    let res: RateLimiterRes;
    try {
      res = await this.#limiter.consume(key);
    } catch (over) {
      if (!(over instanceof RateLimiterRes)) throw over;
      this.refuse(context, key, over.msBeforeNext);
    }
    this.#state(context, res.remainingPoints, res.msBeforeNext);
  }

  /** Spends one call of `key`'s bucket; rejects with the library's answer when it is over. */
  spend(key: string): Promise<RateLimiterRes> {
    return this.#limiter.consume(key);
  }

  refuse(context: HandlerContext, key: string, msLeft: number): never {
    this.#state(context, 0, msLeft);
    context.responseHeader.set("retry-after", String(Math.max(1, Math.ceil(msLeft / 1000))));
    const { points, seconds } = this.#quota;
    throw rateLimited(
      { subject: key, description: `${points} ${this.#name.replaceAll("_", " ")} per ${seconds} s per ${key.startsWith("peer:") ? "peer address" : "caller"}` },
      msLeft,
      { limit: this.#name, subject: key },
    );
  }

  #state(context: HandlerContext, remaining: number, msLeft: number): void {
    const header = context.responseHeader;
    header.set("ratelimit-policy", this.#policy);
    header.set("ratelimit", `"${this.#name}";r=${remaining};t=${Math.max(0, Math.ceil(msLeft / 1000))}`);
  }
}

function isRead(method: DescMethod): boolean {
  return hasOption(method, http) && getOption(method, http).pattern.case === "get";
}

function peerOf(context: HandlerContext): string {
  return context.values.get(CALL_META)?.peer ?? "unknown";
}

/** The setting names of the flag (`--rate-limit reads=600/60`) and the config file (`rate_limits:`). */
const SETTING_NAMES: Readonly<Record<string, keyof RateLimitSettings>> = {
  reads: "reads",
  writes: "writes",
  exchange: "exchange",
  failed_authentications: "failedAuthentications",
  versions: "versions",
};

/**
 * `settings` with one setting changed, as the operator wrote it: a quota `POINTS/SECONDS` or
 * `off`; `versions` as a comma-separated list of v2, v2beta1, v1 (or a YAML list), or `none`.
 * @param where names the source in the error (`--rate-limit`, the config file)
 * @throws Error saying what is wrong
 */
export function withRateLimitSetting(settings: RateLimitSettings, name: string, value: unknown, where: string): RateLimitSettings {
  const key = SETTING_NAMES[name];
  if (key === undefined) throw new Error(`${where}: unknown rate limit "${name}" (one of ${Object.keys(SETTING_NAMES).join(", ")})`);
  if (key === "versions") {
    const list = Array.isArray(value) ? value : typeof value === "string" ? (value === "none" ? [] : value.split(",").map((v) => v.trim())) : undefined;
    const bad = list?.find((v) => !(API_VERSIONS as readonly unknown[]).includes(v));
    if (!list || bad !== undefined) throw new Error(`${where}: versions must list ${API_VERSIONS.join(", ")} (or be none), got ${JSON.stringify(value)}`);
    return { ...settings, versions: [...new Set(list as ApiVersion[])] };
  }
  if (value === "off") return { ...settings, [key]: "off" };
  const m = typeof value === "string" ? /^(\d{1,9})\/(\d{1,6})$/.exec(value) : null;
  const points = Number(m?.[1]);
  const seconds = Number(m?.[2]);
  if (!m || points < 1 || seconds < 1 || seconds > 86_400) {
    throw new Error(
      `${where}: ${name} must be POINTS/SECONDS (calls per window, e.g. 1200/60; a window of at most a day) or off, got ${JSON.stringify(value)}`,
    );
  }
  return { ...settings, [key]: { points, seconds } };
}
