/**
 * The seam between authorization and the Lists.
 *
 * Unscoped methods (every List*, per the `chainguard.annotations.iam` option with
 * `unscoped: true`) carry no scope in the request; the caller may see only the groups where
 * it holds the method's capabilities. The authorization hook in the call pipeline works that
 * set out once per call and stores it in the handler context; a List handler reads it here and
 * passes it to its repository as `within`, which turns it into SQL (withinConditions), so
 * paging and totalCount only ever see visible rows.
 *
 * `undefined` means the call is unrestricted (nothing set the value: no authorization layer
 * is installed, or the caller is an operator who sees everything).
 */
import { createContextKey, type HandlerContext } from "@connectrpc/connect";

/** Group uids (each covering its descendants) the caller may list from, or undefined. */
export const VISIBLE_SCOPES = createContextKey<readonly string[] | undefined>(undefined, {
  description: "group uids the caller may list from",
});

/** The caller's visible scopes for this call's List; undefined when unrestricted. */
export function visibleScopes(context: HandlerContext): readonly string[] | undefined {
  return context.values.get(VISIBLE_SCOPES);
}
