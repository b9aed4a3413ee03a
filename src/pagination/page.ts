/**
 * listPage: the one implementation of List paging used by every List RPC.
 *
 * Contract (docs/published-api.md "Lists"):
 * - page_size: 0 → 50, above 200 → 200, negative → INVALID_ARGUMENT.
 * - order_by: parsed against the resource's allow-list (order-by.ts).
 * - Keyset pagination on (order column, uid), never OFFSET over the whole result, so the
 *   order holds across pages and deep pages cost the same as the first.
 * - page_token: bound to the method, the caller and its visible scopes, the request's filters
 *   and order (a fingerprint of them is inside the encrypted token). Tampered, truncated, from
 *   another List, another caller or another query → INVALID_ARGUMENT;
 *   older than 3 days → the list silently restarts from the first page.
 * - skip: skips that many results from the cursor position; negative → INVALID_ARGUMENT.
 *   `skipped` reports the results skipped in the whole chain of pages. Clients that re-send
 *   the same `skip` on every page (the published Go SDK's iterator does) would otherwise lose
 *   results, so a `skip` equal to the one that produced the token is treated as already
 *   applied; a different value skips forward again from the cursor.
 * - total_count: counted once on the first page of a chain and carried in the token, so
 *   following pages never re-count (it is the count as of the first page). The store also
 *   remembers each count until the database next changes (src/store/sqlite/count-cache.ts), so a
 *   first page repeated over unchanged data does not count again either; PostgreSQL reads the
 *   count of "the children of P" from counters kept with the rows (src/store/postgres/child-counts.ts).
 */
import { createHash } from "node:crypto";
import { invalidField } from "../errors/api-error.js";
import { type Ordering, parseOrderBy } from "./order-by.js";
import type { PageState, PageTokenCodec } from "./page-token.js";

export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 200;

/** The paging fields every List request carries. */
export interface PageRequest {
  readonly pageSize: number;
  readonly pageToken: string;
  readonly orderBy: string;
  readonly skip: number;
}

/** What the store is asked for. */
export interface PageFetch<K extends string> {
  readonly order: K;
  readonly desc: boolean;
  readonly after?: { readonly value: string | number; readonly uid: string };
  readonly offset: number;
  readonly limit: number;
}

export interface ListSpec<Row, K extends string> {
  /** Accepted order_by field spellings → order key. */
  readonly orders: Readonly<Record<string, K>>;
  readonly defaultOrder: Ordering<K>;
  /**
   * What this List's page tokens are bound to: canonical bytes of the method, the caller, its
   * visible scopes and the request's filters (everything but the paging fields;
   * src/services/list-request.ts `pageBinding`). A token whose binding differs is refused.
   */
  readonly binding: Uint8Array | string;
  fetch(q: PageFetch<K>): Promise<Row[]>;
  count(): Promise<number>;
  cursor(row: Row, order: K): { value: string | number; uid: string };
}

export interface Page<Row> {
  readonly items: Row[];
  readonly nextPageToken: string;
  readonly totalCount: bigint;
  readonly skipped: number;
}

/** Validates the paging fields and returns one page. @throws ApiError INVALID_ARGUMENT. */
export async function listPage<Row, K extends string>(req: PageRequest, spec: ListSpec<Row, K>, codec: PageTokenCodec, now: number): Promise<Page<Row>> {
  if (req.pageSize < 0) throw invalidField("page_size", "must not be negative");
  if (req.skip < 0) throw invalidField("skip", "must not be negative");
  const pageSize = req.pageSize === 0 ? DEFAULT_PAGE_SIZE : Math.min(req.pageSize, MAX_PAGE_SIZE);
  const ordering = parseOrderBy(req.orderBy, spec.orders, spec.defaultOrder);
  const fingerprint = createHash("sha256")
    .update(`${ordering.key} ${ordering.desc ? "desc" : "asc"}\n`)
    .update(spec.binding)
    .digest("hex")
    .slice(0, 32);

  let state: PageState | undefined;
  if (req.pageToken !== "") {
    const decoded = codec.decode(req.pageToken, now);
    if (decoded.kind === "invalid") throw invalidField("page_token", "is not a valid page token");
    if (decoded.kind === "ok") {
      if (decoded.state.fingerprint !== fingerprint) {
        throw invalidField("page_token", "was issued for a different query (another method or caller, or the filters or order_by changed)");
      }
      state = decoded.state;
    }
    // expired: restart from the first page, as if no token had been sent (docs/published-api.md "Lists").
  }

  const offset = state && req.skip === state.lastSkip ? 0 : req.skip;
  const skipped = (state?.skipped ?? 0) + offset;
  const rows = await spec.fetch({
    order: ordering.key,
    desc: ordering.desc,
    after: state?.after,
    offset,
    limit: pageSize + 1,
  });
  const total = state ? state.total : await spec.count();
  const items = rows.slice(0, pageSize);
  const last = items[items.length - 1];
  const nextPageToken =
    rows.length > pageSize && last !== undefined
      ? codec.encode({
          fingerprint,
          after: spec.cursor(last, ordering.key),
          skipped,
          lastSkip: req.skip,
          total,
          issuedAt: now,
        })
      : "";
  return { items, nextPageToken, totalCount: BigInt(total), skipped };
}
