/**
 * The boundary where every failure becomes a ConnectError with AIP-193 details.
 *
 * Order of details (spec §7): `google.rpc.ErrorInfo` first (reason + domain + metadata),
 * then `BadRequest`, `PreconditionFailure` or `ResourceInfo` as the error carries them.
 * Errors that connect-node or a library raised as ConnectError keep their code and message
 * and gain an ErrorInfo when they lack one. Anything else is INTERNAL with a generic
 * message; the caller logs the cause.
 */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  BadRequestSchema,
  ErrorInfoSchema,
  PreconditionFailureSchema,
  ResourceInfoSchema,
} from "../../gen/google/rpc/error_details_pb.js";
import { ApiError, CODE_NAMES, internal } from "./api-error.js";

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
  return { error: apiErrorToConnect(internal(err), domain), unexpected: err };
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
