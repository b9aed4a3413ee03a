/**
 * What a List asks of any engine: the hierarchy filter and the keyset page. Keyset paging
 * orders by (order column, uid) and continues after the last row of the previous page, so a
 * page costs the same at row 100 000 as at row 1 (never OFFSET over the whole result).
 */

/** The hierarchy filter (chainguard.platform.common.UIDPFilter) in store terms. */
export interface UidpFilter {
  readonly ancestorsOf?: string;
  readonly descendantsOf?: string;
  readonly childrenOf?: string;
  readonly inRoot?: boolean;
  readonly ids?: readonly string[];
}

/** Where the next page starts and how long it is. */
export interface KeysetQuery<K extends string> {
  readonly order: K;
  readonly desc: boolean;
  /** The last row of the previous page, or undefined for the first page. */
  readonly after?: { readonly value: string | number; readonly uid: string };
  /** Rows to skip after the cursor (the request's `skip`). */
  readonly offset: number;
  readonly limit: number;
}
