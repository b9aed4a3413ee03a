/**
 * The boundary where every failure becomes a ConnectError with AIP-193 details.
 *
 * Order of details (docs/published-api.md "Errors"): `google.rpc.ErrorInfo` first (reason + domain + metadata),
 * then `BadRequest`, `PreconditionFailure`, `QuotaFailure` and `RetryInfo`, or `ResourceInfo` as
 * the error carries them.
 * Errors that connect-node or a library raised as ConnectError keep their code and message
 * and gain an ErrorInfo when they lack one. Storage failures (busy, disk full, I/O) are
 * UNAVAILABLE. Anything else is INTERNAL with a generic message; the caller logs the cause.
 */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { DurationSchema } from "@bufbuild/protobuf/wkt";
import {
  BadRequestSchema,
  ErrorInfoSchema,
  PreconditionFailureSchema,
  QuotaFailureSchema,
  ResourceInfoSchema,
  RetryInfoSchema,
} from "../../gen/google/rpc/error_details_pb.js";
import { storageFailureOf } from "./storage-error.js";
import { ApiError, aborted, GrpcCode, internal, unavailable } from "./api-error.js";
import { CODE_NAMES } from "./codes.js";
import type { Reason } from "./reasons.js";

type OutgoingDetail = ConstructorParameters<typeof ConnectError>[3] extends (infer D)[] | undefined ? D : never;

/** Result of the conversion: the error to send, and whether it hides an unexpected cause. */
export interface ConvertedError {
  readonly error: ConnectError;
  /** Set when the original was not an API error: log it, never send it. */
  readonly unexpected?: unknown;
}

/**
 * Converts anything thrown by a handler into the ConnectError sent to the client.
 * @param domain the ErrorInfo domain (the IAM service domain by default, configurable).
 */
export function toConnectError(err: unknown, domain: string): ConvertedError {
  if (err instanceof ApiError) {
    return { error: apiErrorToConnect(err, domain), unexpected: err.code === 13 ? err.cause : undefined };
  }
  if (err instanceof ConnectError) {
    if (err.findDetails(ErrorInfoSchema).length > 0) return { error: err };
    const withInfo = new ConnectError(
      err.rawMessage,
      err.code,
      err.metadata,
      [errorInfo(CODE_NAMES[err.code] ?? "UNKNOWN", domain, {}), ...(err.details as OutgoingDetail[])],
      err.cause,
    );
    return { error: withInfo, unexpected: err.code === Code.Internal || err.code === Code.Unknown ? err : undefined };
  }
  const storage = storageFailure(err);
  if (storage) return { error: apiErrorToConnect(storage, domain), unexpected: err };
  return { error: apiErrorToConnect(internal(err), domain), unexpected: err };
}

/**
 * Storage failures that are about the machine, not the request: another writer holding the
 * lock past the bound, a full disk, an I/O error, a read-only file (the kinds come from the
 * store, src/errors/storage-error.ts, whatever the engine). The client may retry later, so
 * UNAVAILABLE (503) with a reason naming the condition; nothing was written (the transaction
 * rolled back). A write that lost to a concurrent one, even after the engine's retries, is
 * ABORTED (STORAGE_CONFLICT), the code the API uses for a concurrency conflict: the same
 * request may simply be sent again. Text the engine cannot take (a NUL on PostgreSQL) is the
 * client's, INVALID_ARGUMENT. Other storage failures stay INTERNAL.
 */
function storageFailure(err: unknown): ApiError | undefined {
  const kind = storageFailureOf(err);
  if (kind === "unstorable-text") {
    // Which field it was, the engine cannot tell; the NUL rule names it wherever it applies.
    return new ApiError(GrpcCode.InvalidArgument, "Invalid argument: the request holds a character that cannot be stored or searched for (NUL, U+0000)");
  }
  if (kind === "conflict") {
    return aborted("the write conflicted with a concurrent one; nothing was changed, send it again", { reason: "STORAGE_CONFLICT" });
  }
  const [reason, what]: [Reason, string] | [undefined, undefined] =
    kind === "busy"
      ? ["STORAGE_BUSY", "the database is busy"]
      : kind === "full"
        ? ["STORAGE_FULL", "the database disk is full"]
        : kind === "unavailable"
          ? ["STORAGE_UNAVAILABLE", "the database cannot be written"]
          : [undefined, undefined];
  if (reason === undefined) return undefined;
  return unavailable(`${what}; nothing was changed, try again later`, { reason });
}

function apiErrorToConnect(err: ApiError, domain: string): ConnectError {
  const details: OutgoingDetail[] = [errorInfo(err.reason, domain, err.metadata)];
  if (err.fieldViolations.length > 0) {
    details.push({
      desc: BadRequestSchema,
      value: create(BadRequestSchema, {
        fieldViolations: err.fieldViolations.map((v) => ({ field: v.field, description: v.description })),
      }),
    });
  }
  if (err.preconditionViolations.length > 0) {
    details.push({
      desc: PreconditionFailureSchema,
      value: create(PreconditionFailureSchema, {
        violations: err.preconditionViolations.map((v) => ({
          type: v.type,
          subject: v.subject ?? "",
          description: v.description,
        })),
      }),
    });
  }
  if (err.quotaViolations.length > 0) {
    details.push({ desc: QuotaFailureSchema, value: create(QuotaFailureSchema, { violations: err.quotaViolations.map((v) => ({ ...v })) }) });
  }
  if (err.retryDelayMs !== undefined) {
    const ms = Math.max(0, Math.ceil(err.retryDelayMs));
    const retryDelay = create(DurationSchema, { seconds: BigInt(Math.floor(ms / 1000)), nanos: (ms % 1000) * 1_000_000 });
    details.push({ desc: RetryInfoSchema, value: create(RetryInfoSchema, { retryDelay }) });
  }
  if (err.resourceInfo) {
    details.push({
      desc: ResourceInfoSchema,
      value: create(ResourceInfoSchema, {
        resourceType: err.resourceInfo.resourceType,
        resourceName: err.resourceInfo.resourceName,
        description: err.resourceInfo.description ?? "",
      }),
    });
  }
  return new ConnectError(err.message, err.code as number as Code, undefined, details);
}

function errorInfo(reason: string, domain: string, metadata: Readonly<Record<string, string>>): OutgoingDetail {
  return { desc: ErrorInfoSchema, value: create(ErrorInfoSchema, { reason, domain, metadata: { ...metadata } }) };
}
