/**
 * `order_by` parsing against a per-resource allow-list.
 *
 * Syntax: `<field> [asc|desc]` (docs/published-api.md "Lists"; `%20desc` in URLs). Field names are matched exactly
 * (lowercase; the storage spellings `created_at`/`updated_at` and the proto spellings
 * `create_time`/`update_time` are both accepted where a resource allows them); the direction
 * is case-insensitive; surrounding and repeated spaces are tolerated. Anything else is
 * INVALID_ARGUMENT, so no request text ever reaches SQL.
 */
import { invalidField } from "../errors/api-error.js";

export interface Ordering<K extends string> {
  readonly key: K;
  readonly desc: boolean;
}

/**
 * @param allowed accepted field spellings → the order key they mean
 * @param fallback the ordering when `orderBy` is empty
 * @throws ApiError INVALID_ARGUMENT on `order_by`
 */
export function parseOrderBy<K extends string>(orderBy: string, allowed: Readonly<Record<string, K>>, fallback: Ordering<K>): Ordering<K> {
  const words = orderBy.trim().split(/\s+/).filter(Boolean);
  if (words.length === 0) return fallback;
  const fields = Object.keys(allowed).join(", ");
  const describe = `must be "<field> [asc|desc]" with field one of ${fields}`;
  if (words.length > 2) throw invalidField("order_by", describe);
  const key = Object.hasOwn(allowed, words[0] as string) ? allowed[words[0] as string] : undefined;
  if (key === undefined) throw invalidField("order_by", describe);
  const dir = words[1]?.toLowerCase() ?? "asc";
  if (dir !== "asc" && dir !== "desc") throw invalidField("order_by", describe);
  return { key, desc: dir === "desc" };
}
