/**
 * Helpers every List RPC shares: validating the UIDP filter and what a page token is bound
 * to. Paging itself is src/pagination/page.ts.
 */
import { clone, type DescMessage, type MessageShape, toBinary } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import type { UIDPFilter } from "../../gen/chainguard/platform/common/uidp_pb.js";
import { type FieldViolation, invalidArgument } from "../errors/api-error.js";
import type { UidpFilter } from "../store/lists.js";
import { callerOf } from "../auth/caller.js";
import { visibleScopes } from "../auth/visible-scopes.js";
import { checkUidp, checkValueCount } from "./validate.js";

/** Paging field names, excluded from the filter fingerprint. */
const PAGING_FIELDS = new Set(["page_size", "page_token", "order_by", "skip"]);

/**
 * Validates a request's UIDPFilter (every uid must be a valid UIDP; at most
 * FILTER_VALUES_MAX `ids`) and converts it.
 * @throws ApiError INVALID_ARGUMENT naming `uidp.<field>`.
 */
export function toUidpFilter(uidp: UIDPFilter | undefined): UidpFilter {
  if (!uidp) return {};
  const violations: FieldViolation[] = [];
  for (const [field, value] of [
    ["ancestors_of", uidp.ancestorsOf],
    ["descendants_of", uidp.descendantsOf],
    ["children_of", uidp.childrenOf],
  ] as const) {
    if (value !== "") {
      const v = checkUidp(`uidp.${field}`, value);
      if (v) violations.push(v);
    }
  }
  // Checked before the values themselves, so an oversized request is not walked id by id.
  const tooMany = checkValueCount("uidp.ids", uidp.ids);
  if (tooMany) throw invalidArgument([tooMany]);
  uidp.ids.forEach((id, i) => {
    const v = checkUidp(`uidp.ids[${i}]`, id);
    if (v) violations.push(v);
  });
  if (violations.length > 0) throw invalidArgument(violations);
  return {
    ancestorsOf: uidp.ancestorsOf || undefined,
    descendantsOf: uidp.descendantsOf || undefined,
    childrenOf: uidp.childrenOf || undefined,
    inRoot: uidp.inRoot || undefined,
    ids: uidp.ids.length > 0 ? uidp.ids : undefined,
  };
}

/**
 * What a page token of this call is bound to (page.ts seals a fingerprint of it into the
 * token): the method, the caller, the caller's visible scopes (authorization's restriction)
 * and the request's canonical bytes without its paging fields. A token presented anywhere else
 * — to another List whose request happens to encode the same (an empty ListGroups and an empty
 * ListRoles are both zero bytes), by another caller, or with other filters — is
 * INVALID_ARGUMENT instead of carrying its cursor and first page's total_count over (AIP-158:
 * a token never grants access). The method is the descriptor's, the same on every door.
 */
export function pageBinding<Desc extends DescMessage>(context: HandlerContext, schema: Desc, request: MessageShape<Desc>): Uint8Array {
  const copy = clone(schema, request) as Record<string, unknown>;
  for (const field of schema.fields) {
    if (PAGING_FIELDS.has(field.name)) {
      copy[field.localName] = field.fieldKind === "scalar" && field.scalar === 9 ? "" : 0;
    }
  }
  const within = visibleScopes(context);
  // One JSON line first (JSON has no raw newline), then the bytes: nothing one part holds can
  // pass for another.
  const who = JSON.stringify({
    method: `${context.method.parent.typeName}/${context.method.name}`,
    caller: callerOf(context)?.subject ?? null,
    within: within === undefined ? null : [...within].sort(),
  });
  const head = new TextEncoder().encode(`${who}\n`);
  const bytes = toBinary(schema, copy as MessageShape<Desc>);
  const out = new Uint8Array(head.length + bytes.length);
  out.set(head);
  out.set(bytes, head.length);
  return out;
}
