/**
 * Fields only the operator writes. `Group.verified` marks an organization whose name (its
 * email domain) was checked by whoever runs the server: LookupGroup and CheckEligibility send
 * every signed-in user of that domain to it (src/services/iam/caller-organization.ts). Were
 * it writable by customers, anyone could found "example.com", mark it verified and collect
 * example.com's users. So a customer write that would change it is PERMISSION_DENIED with
 * reason OPERATOR_ONLY_FIELD, on every door and version; writing back the value it already
 * has (a client's read-modify-write) is not a change and passes.
 */
import type { HandlerContext } from "@connectrpc/connect";
import { permissionDenied } from "../errors/api-error.js";
import { callerOf } from "./caller.js";

/** True when the call carries an operator token (`trellis auth token --local`). */
export function isOperator(context: HandlerContext): boolean {
  return callerOf(context)?.operator === true;
}

/** @throws PERMISSION_DENIED (OPERATOR_ONLY_FIELD) unless the caller is the operator. */
export function requireOperatorToChange(context: HandlerContext, field: string): void {
  if (isOperator(context)) return;
  throw permissionDenied(`only the server's operator may change ${field}`, { reason: "OPERATOR_ONLY_FIELD", metadata: { field } });
}
