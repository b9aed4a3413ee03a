/**
 * One definition per resource of the orders its List takes: each order's key (the proto
 * spelling, `create_time`), the record field that holds its value (the keyset cursor), and
 * the `order_by` spellings a request may use for it. The service's allow-list, the cursor
 * value and the engine's order column all come from it, so adding an order is one line.
 *
 * Spellings: every key as itself; `created_at` / `updated_at` (the storage spellings) for
 * `create_time` / `update_time` where the resource has them; and any alias a resource adds
 * (listed before the key it means, as the error message names them in this order).
 */
export interface OrderDefinition<K extends string, R, F extends Readonly<Record<K, keyof R & string>> = Readonly<Record<K, keyof R & string>>> {
  /** The orders, in the order they were defined. */
  readonly keys: readonly K[];
  /** The record field that holds each order's value (an engine's order column is named alike). */
  readonly fields: F;
  /** Accepted `order_by` field spellings → the order they mean. */
  readonly spellings: Readonly<Record<string, K>>;
  /** The cursor value of a row for an order. */
  value(row: R, order: K): string | number;
}

const STORAGE_SPELLINGS: Readonly<Record<string, string>> = { create_time: "created_at", update_time: "updated_at" };

/**
 * `defineOrders<Record>()({ uid: "uid", name: "name", create_time: "createTime" })`: the
 * record type first (so its fields are checked), then the orders.
 */
export function defineOrders<R>() {
  return <const F extends Readonly<Record<string, keyof R & string>>>(
    fields: F,
    aliases: Readonly<Record<string, keyof F & string>> = {},
  ): OrderDefinition<keyof F & string, R, F> => {
    type K = keyof F & string;
    const keys = Object.keys(fields) as K[];
    const spellings: Record<string, K> = {};
    for (const key of keys) {
      for (const [alias, target] of Object.entries(aliases)) if (target === key) spellings[alias] = key;
      spellings[key] = key;
      const storage = STORAGE_SPELLINGS[key];
      if (storage !== undefined) spellings[storage] = key;
    }
    return {
      keys,
      fields,
      spellings,
      value: (row, order) => row[fields[order]] as string | number,
    };
  };
}
