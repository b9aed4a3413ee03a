/**
 * v1's deprecation window (`--v1-sunset DATE`, docs/migrating.md "v1 → v2").
 *
 * With a sunset date, every answer of a v1 method (chainguard.platform.iam.Groups,
 * chainguard.platform.registry.Registry), success or error, on every door, carries
 *
 *   Deprecation: @<unix seconds>          RFC 9745: deprecated since then (V1_DEPRECATED_AT)
 *   Sunset: <IMF-fixdate>                 RFC 8594: when it stops being served
 *   Link: <…/docs/migrating.md#v1--v2>; rel="deprecation sunset"; type="text/markdown"
 *
 * as response headers (gRPC: response metadata). From the date on, a v1 call is answered
 * UNIMPLEMENTED (HTTP 501) with ErrorInfo reason API_VERSION_GONE and metadata `method`,
 * `sunset`, `replacement` (the v2 service to call instead) and `migration_guide`, before
 * authentication (a retired API says so to anyone, and reveals nothing). UNIMPLEMENTED is the
 * code gRPC gives an operation "not supported/enabled in this service", the one a method this
 * server no longer has would get, and clients do not retry it. Without a date, v1 is served as
 * before and its answers carry none of these headers.
 *
 * A before-call hook of the v1 methods only (call-pipeline.ts MethodHook), first in the list:
 * no other method pays for it.
 */
import type { DescService } from "@bufbuild/protobuf";
import { ApiError, GrpcCode } from "../errors/api-error.js";
import type { MethodHook } from "./call-pipeline.js";

/**
 * When v1 became deprecated: the day Trellis began serving the generally available v2 beside
 * it. The Deprecation header says the earlier of this and the sunset date (RFC 9745: a
 * resource is not deprecated after its sunset).
 */
export const V1_DEPRECATED_AT = Date.UTC(2026, 10, 28);

/** Where the migration guide's "v1 → v2" section is served (create-app.ts serves the guide). */
export const MIGRATION_GUIDE_PATH = "/docs/migrating.md";
const V1_SECTION = "#v1--v2";

export interface V1SunsetOptions {
  /** The sunset, ms since the epoch. */
  readonly sunsetAt: number;
  /** The v1 services, each with the v2 service that replaces it. */
  readonly services: ReadonlyMap<DescService, string>;
  /** The public URL clients use (the issuer URL), known once the server listens. */
  readonly serverUrl: () => string;
  readonly now: () => number;
}

export function v1SunsetHook(options: V1SunsetOptions): MethodHook {
  const { sunsetAt, services, now } = options;
  const deprecation = `@${Math.floor(Math.min(V1_DEPRECATED_AT, sunsetAt) / 1000)}`;
  const sunset = new Date(sunsetAt).toUTCString();
  const sunsetIso = new Date(sunsetAt).toISOString();
  let guide: string | undefined;
  const guideUrl = () => (guide ??= `${options.serverUrl().replace(/\/$/, "")}${MIGRATION_GUIDE_PATH}${V1_SECTION}`);
  return {
    forMethod(method) {
      const replacement = services.get(method.parent);
      if (replacement === undefined) return undefined;
      const name = `${method.parent.typeName}/${method.name}`;
      return function v1Sunset(_method, context) {
        const url = guideUrl();
        const header = context.responseHeader;
        header.set("deprecation", deprecation);
        header.set("sunset", sunset);
        header.set("link", `<${url}>; rel="deprecation sunset"; type="text/markdown"`);
        if (now() < sunsetAt) return;
        throw new ApiError(GrpcCode.Unimplemented, `Unimplemented: ${name} is gone since ${sunsetIso} (v1's sunset); call ${replacement} instead (${url})`, {
          reason: "API_VERSION_GONE",
          metadata: { method: name, sunset: sunsetIso, replacement, migration_guide: url },
        });
      };
    },
  };
}

/**
 * `--v1-sunset` / `v1_sunset:` as given: a day (`2027-06-30`, its first instant in UTC) or an
 * RFC 3339 instant with its offset (`2027-06-30T12:00:00Z`). @throws Error for anything else
 */
export function parseSunset(value: string): number {
  const day = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  const instant = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i.test(value);
  const ms = day ? Date.UTC(Number(day[1]), Number(day[2]) - 1, Number(day[3])) : instant ? Date.parse(value) : Number.NaN;
  // Date.UTC rolls 2027-02-30 over to March: refuse what does not come back as written.
  if (Number.isNaN(ms) || (day && new Date(ms).toISOString().slice(0, 10) !== value)) {
    throw new Error(`--v1-sunset must be a date (2027-06-30) or an RFC 3339 time (2027-06-30T12:00:00Z) (got ${JSON.stringify(value)})`);
  }
  return ms;
}
