/**
 * The authenticated caller of the current call, put into the handler context by the
 * authentication hook (authenticate.ts) and read by authorization and by handlers that act
 * on behalf of the caller (creating a root group binds its creator as owner).
 */
import { createContextKey, type HandlerContext } from "@connectrpc/connect";
import type { Caller } from "./tokens.js";

export const CALLER = createContextKey<Caller | undefined>(undefined, { description: "the authenticated caller" });

/** The caller, or undefined on a method that needs no authentication. */
export function callerOf(context: HandlerContext): Caller | undefined {
  return context.values.get(CALLER);
}

/**
 * Who becomes owner of a group being created: the signed-in caller when it creates an
 * organization (no parent); nobody for folders, or for an operator (who owns everything).
 */
export function ownerOfNewOrganization(parent: string, context: HandlerContext): string | undefined {
  const caller = callerOf(context);
  return parent === "" && caller && !caller.operator ? caller.subject : undefined;
}
