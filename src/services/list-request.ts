/**
 * Helpers every List RPC shares: validating the UIDP filter and fingerprinting the filters
 * for page-token binding. Paging itself is src/pagination/page.ts.
 */
import { clone, type DescMessage, type MessageShape, toBinary } from "@bufbuild/protobuf";
import type { UIDPFilter } from "../../gen/chainguard/platform/common/uidp_pb.js";
import { type FieldViolation, invalidArgument } from "../errors/api-error.js";
import type { UidpFilter } from "../store/lists.js";
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
 * Canonical bytes of a List request without its paging fields, plus the caller's visible
 * scopes (authorization's restriction): what a page token binds to. Binding the scopes means
 * a token replayed by a caller who sees other groups is refused instead of carrying the
 * first caller's total_count over (AIP-158: tokens never grant access).
 */
export function filterKey<Desc extends DescMessage>(schema: Desc, request: MessageShape<Desc>, within?: readonly string[]): Uint8Array {
  const copy = clone(schema, request) as Record<string, unknown>;
  for (const field of schema.fields) {
    if (PAGING_FIELDS.has(field.name)) {
      copy[field.localName] = field.fieldKind === "scalar" && field.scalar === 9 ? "" : 0;
    }
  }
  const bytes = toBinary(schema, copy as MessageShape<Desc>);
  if (within === undefined) return bytes;
  const scopes = new TextEncoder().encode(`\u0000within:${[...within].sort().join(",")}`);
  const out = new Uint8Array(bytes.length + scopes.length);
  out.set(bytes);
  out.set(scopes, bytes.length);
  return out;
}
