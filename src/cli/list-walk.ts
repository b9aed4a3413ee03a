/**
 * Walks a List RPC page by page (the server's cursor pagination) until the last page or
 * `--limit` items. On a terminal a progress line on stderr shows how far a long walk is; it
 * is erased when the walk ends, so stdout carries only the result.
 */
import { type Command, InvalidArgumentError } from "commander";
import type { Io } from "./io.js";

/** The server's largest page (docs/published-api.md "Lists"): the fewest round trips for a full walk. */
export const MAX_PAGE_SIZE = 200;

export interface Page<T> {
  readonly items: readonly T[];
  readonly nextPageToken: string;
  readonly totalCount?: bigint;
}

/** Adds `--limit N` to a list command. */
export function withLimit(cmd: Command): Command {
  return cmd.option("--limit <n>", "stop after N results (default: all)", positiveInt);
}

export function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 1) throw new InvalidArgumentError("must be a positive integer");
  return n;
}

/** Every item (up to `limit`) across pages, fetched with `fetchPage(pageSize, pageToken)`. */
export async function walk<T>(
  fetchPage: (pageSize: number, pageToken: string) => Promise<Page<T>>,
  options: { limit?: number; io: Io; noun: string },
): Promise<T[]> {
  const { limit, io, noun } = options;
  const items: T[] = [];
  let token = "";
  let shown = false;
  try {
    for (;;) {
      const want = limit === undefined ? MAX_PAGE_SIZE : Math.min(MAX_PAGE_SIZE, limit - items.length);
      const page = await fetchPage(want, token);
      items.push(...page.items.slice(0, want));
      token = page.nextPageToken;
      const done = !token || page.items.length === 0 || (limit !== undefined && items.length >= limit);
      if (done) return items;
      if (io.stderrIsTty) {
        const total = page.totalCount !== undefined ? ` of ${limit !== undefined ? Math.min(limit, Number(page.totalCount)) : page.totalCount}` : "";
        io.err(`\rfetched ${items.length}${total} ${noun}…`);
        shown = true;
      }
    }
  } finally {
    if (shown) io.err("\r\x1b[K");
  }
}
