/**
 * ApiError: the one error currency of Trellis.
 *
 * Store, auth and service code throw only ApiError (built by the helpers below). It carries
 * the canonical gRPC code and the structured details AIP-193 asks for, but no transport:
 * `toConnectError` (to-connect-error.ts) turns it into a ConnectError with
 * `google.rpc.ErrorInfo` first, which connect-node writes natively per protocol
 * (grpc-status-details-bin on gRPC, error details on Connect and gRPC-web) and the REST door
 * renders as a google.rpc.Status JSON body.
 *
 * This module has no dependency on connect or on generated code, so the store can use it. The
 * codes themselves, their names and HTTP statuses are codes.ts.
 */
import { CODE_NAMES, GrpcCode } from "./codes.js";
import type { Reason } from "./reasons.js";

// The code every ApiError carries; re-exported so a thrower needs one import.
export { GrpcCode } from "./codes.js";

/** One google.rpc.BadRequest.FieldViolation. `field` is a proto field path (snake_case). */
export interface FieldViolation {
  readonly field: string;
  readonly description: string;
}

/** One google.rpc.PreconditionFailure.Violation. */
export interface PreconditionViolation {
  readonly type: string;
  readonly subject?: string;
  readonly description: string;
}

/** google.rpc.ResourceInfo, attached to NOT_FOUND and ALREADY_EXISTS. */
export interface ResourceInfo {
  readonly resourceType: string;
  readonly resourceName: string;
  readonly description?: string;
}

/** One google.rpc.QuotaFailure.Violation: whose quota ran out, and which. */
export interface QuotaViolation {
  readonly subject: string;
  readonly description: string;
}

export interface ApiErrorInit {
  /** ErrorInfo.reason (one of the closed set in reasons.ts); defaults to the code's canonical name. */
  readonly reason?: Reason;
  /** ErrorInfo.metadata: every dynamic part of the message, as AIP-193 asks. */
  readonly metadata?: Readonly<Record<string, string>>;
  readonly fieldViolations?: readonly FieldViolation[];
  readonly preconditionViolations?: readonly PreconditionViolation[];
  readonly resourceInfo?: ResourceInfo;
  readonly quotaViolations?: readonly QuotaViolation[];
  /** google.rpc.RetryInfo: how long to wait before trying again (ms). */
  readonly retryDelayMs?: number;
  /** The original exception, logged by the boundary, never sent to the client. */
  readonly cause?: unknown;
}

/** An error with a gRPC code, a client-safe message and AIP-193 details. */
export class ApiError extends Error {
  override name = "ApiError";
  readonly code: GrpcCode;
  readonly reason: Reason;
  readonly metadata: Readonly<Record<string, string>>;
  readonly fieldViolations: readonly FieldViolation[];
  readonly preconditionViolations: readonly PreconditionViolation[];
  readonly resourceInfo: ResourceInfo | undefined;
  readonly quotaViolations: readonly QuotaViolation[];
  readonly retryDelayMs: number | undefined;

  constructor(code: GrpcCode, message: string, init: ApiErrorInit = {}) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.code = code;
    this.reason = init.reason ?? CODE_NAMES[code] ?? "UNKNOWN";
    this.metadata = init.metadata ?? {};
    this.fieldViolations = init.fieldViolations ?? [];
    this.preconditionViolations = init.preconditionViolations ?? [];
    this.resourceInfo = init.resourceInfo;
    this.quotaViolations = init.quotaViolations ?? [];
    this.retryDelayMs = init.retryDelayMs;
  }
}

/**
 * INVALID_ARGUMENT with a BadRequest detail. The message follows docs/published-api.md "Errors":
 * `Invalid argument: <field>: <violation>` (several violations are joined with "; ").
 */
export function invalidArgument(violations: readonly FieldViolation[], init: ApiErrorInit = {}): ApiError {
  const text = violations.map((v) => `${v.field}: ${v.description}`).join("; ");
  return new ApiError(GrpcCode.InvalidArgument, `Invalid argument: ${text}`, {
    ...init,
    fieldViolations: violations,
  });
}

/** Shorthand for one field violation. */
export function invalidField(field: string, description: string): ApiError {
  return invalidArgument([{ field, description }]);
}

/**
 * FAILED_PRECONDITION with a PreconditionFailure detail. Message: `Precondition failed: <why>`
 * (docs/published-api.md "Errors", e.g. `Precondition failed: cannot delete group with child repos`).
 */
export function failedPrecondition(violation: PreconditionViolation, init: ApiErrorInit = {}): ApiError {
  return new ApiError(GrpcCode.FailedPrecondition, `Precondition failed: ${violation.description}`, {
    ...init,
    preconditionViolations: [violation],
  });
}

/** NOT_FOUND for one resource, with ResourceInfo. */
export function notFound(resourceType: string, resourceName: string): ApiError {
  return new ApiError(GrpcCode.NotFound, `Not found: ${resourceType} ${JSON.stringify(resourceName)}`, {
    metadata: { resource_type: resourceType, resource_name: resourceName },
    resourceInfo: { resourceType, resourceName },
  });
}

/** ALREADY_EXISTS for one resource, with ResourceInfo. */
export function alreadyExists(resourceType: string, resourceName: string, description: string): ApiError {
  return new ApiError(GrpcCode.AlreadyExists, `Already exists: ${description}`, {
    metadata: { resource_type: resourceType, resource_name: resourceName },
    resourceInfo: { resourceType, resourceName, description },
  });
}

/** PERMISSION_DENIED. The message never says whether the resource exists. */
export function permissionDenied(description: string, init: ApiErrorInit = {}): ApiError {
  return new ApiError(GrpcCode.PermissionDenied, `Permission denied: ${description}`, init);
}

/** UNAUTHENTICATED with a specific reason (e.g. TOKEN_EXPIRED). */
export function unauthenticated(reason: Reason, description: string): ApiError {
  return new ApiError(GrpcCode.Unauthenticated, `Unauthenticated: ${description}`, { reason });
}

/**
 * UNIMPLEMENTED for `method` ("package.Service/Method"). Without `needs`: a method a later
 * release implements. With `needs`: one this server can never answer because the answer is
 * made of something it does not hold; `needs` says what (a noun phrase, e.g. "the image's
 * SBOM"), so the caller learns why and where to look instead, and it is also put in the
 * ErrorInfo metadata for programs.
 */
export function unimplemented(method: string, needs?: string): ApiError {
  if (needs === undefined) {
    return new ApiError(GrpcCode.Unimplemented, `Unimplemented: ${method} is not implemented by this server yet`, {
      metadata: { method },
    });
  }
  return new ApiError(GrpcCode.Unimplemented, `Unimplemented: ${method} needs ${needs}, which this server does not hold`, {
    metadata: { method, needs },
  });
}

/**
 * RESOURCE_EXHAUSTED for a caller over a rate limit: reason RATE_LIMIT_EXCEEDED, then a
 * QuotaFailure naming whose quota (`subject`) and which, then RetryInfo with when to try again.
 */
export function rateLimited(violation: QuotaViolation, retryDelayMs: number, metadata: Readonly<Record<string, string>>): ApiError {
  return new ApiError(GrpcCode.ResourceExhausted, `Resource exhausted: ${violation.description}; retry in ${Math.ceil(retryDelayMs / 1000)} s`, {
    reason: "RATE_LIMIT_EXCEEDED",
    metadata,
    quotaViolations: [violation],
    retryDelayMs,
  });
}

/** RESOURCE_EXHAUSTED, e.g. a request body over the size limit. */
export function resourceExhausted(description: string, init: ApiErrorInit = {}): ApiError {
  return new ApiError(GrpcCode.ResourceExhausted, `Resource exhausted: ${description}`, init);
}

/** ABORTED: a concurrency conflict; the write did not commit and the client may send it again. */
export function aborted(description: string, init: ApiErrorInit = {}): ApiError {
  return new ApiError(GrpcCode.Aborted, `Aborted: ${description}`, init);
}

/** UNAVAILABLE: retryable; the write certainly did not commit. */
export function unavailable(description: string, init: ApiErrorInit = {}): ApiError {
  return new ApiError(GrpcCode.Unavailable, `Unavailable: ${description}`, init);
}

/** INTERNAL with a generic message; the cause is logged by the boundary, not sent. */
export function internal(cause?: unknown): ApiError {
  return new ApiError(GrpcCode.Internal, "Internal error", { cause });
}
