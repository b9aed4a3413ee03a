/**
 * What the repository suites compare between engines: an API error as a client sees it, and a
 * List read to its end the way the API pages it. Shared so that every suite holding the two
 * engines to the same answers compares the same things.
 */
import { expect } from "vitest";
import { ApiError } from "../../src/errors/api-error.js";
import type { KeysetQuery } from "../../src/store/lists.js";

/** An error as a client sees it: every field the API error carries. @throws when `err` is no ApiError. */
export function apiErrorShape(err: unknown): unknown {
  if (!(err instanceof ApiError)) throw new Error(`expected an ApiError, got ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`);
  return {
    code: err.code,
    message: err.message,
    reason: err.reason,
    metadata: err.metadata,
    fieldViolations: err.fieldViolations,
    preconditionViolations: err.preconditionViolations,
    resourceInfo: err.resourceInfo,
  };
}

/** The shape (apiErrorShape) of the error `p` rejects with; fails when it resolves. */
export async function rejectionShape(p: Promise<unknown>): Promise<unknown> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  return apiErrorShape(err);
}

/** A repository's List. */
interface Lister<F, O extends string, R> {
  list(f: F, p: KeysetQuery<O>): Promise<R[]>;
}

/**
 * Every row of a List, page after page, each continuing after the last row of the one before
 * as the API's page tokens do. `firstOffset` skips rows on the first page only (a request's
 * `skip`).
 */
async function allPages<F, O extends string, R extends { uid: string }>(
  repo: Lister<F, O, R>,
  filter: F,
  order: O,
  desc: boolean,
  value: (row: R, order: O) => string | number,
  { limit, firstOffset = 0 }: { readonly limit: number; readonly firstOffset?: number },
): Promise<R[]> {
  const seen: R[] = [];
  let after: KeysetQuery<O>["after"];
  for (let guard = 0; guard < 200; guard++) {
    const page = await repo.list(filter, { order, desc, after, offset: guard === 0 ? firstOffset : 0, limit });
    seen.push(...page);
    if (page.length < limit) return seen;
    const last = page[page.length - 1]!;
    after = { value: value(last, order), uid: last.uid };
  }
  throw new Error("paging did not end");
}

/** In every order the List takes, both directions: `actual` pages through `filter` as `expected` does. */
export async function expectSamePages<F, O extends string, R extends { uid: string }>(
  expected: Lister<F, O, R>,
  actual: Lister<F, O, R>,
  filter: F,
  orders: { readonly keys: readonly O[]; value(row: R, order: O): string | number },
  paging: { readonly limit: number; readonly firstOffset?: number },
): Promise<void> {
  for (const order of orders.keys) {
    for (const desc of [false, true]) {
      const want = await allPages(expected, filter, order, desc, orders.value, paging);
      expect(await allPages(actual, filter, order, desc, orders.value, paging), `${JSON.stringify(filter)} ${order} ${desc ? "desc" : "asc"}`).toEqual(want);
    }
  }
}
