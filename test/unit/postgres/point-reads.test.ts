/**
 * The per-turn point-read batcher (src/store/postgres/point-reads.ts) on its own, with a spy
 * for the query it sends: the reads asked for in one event-loop turn make one query of their
 * distinct keys, each caller gets its own key's rows (none for a key without rows), a key asked
 * for after a batch was sent goes in a query of its own, a batch stops at its cap, and a failed
 * query fails every caller of that batch and no other. The PostgreSQL side (the real prepared
 * queries, and the calls through every door) is test/postgres/point-reads.test.ts.
 */
import { expect, it, vi } from "vitest";
import { createPointReads } from "../../../src/store/postgres/point-reads.js";

interface Row {
  readonly key: string;
  readonly n: number;
}

/** What a table answers: rows by key (a key may have several, or none). */
const TABLE: readonly Row[] = [
  { key: "a", n: 1 },
  { key: "b", n: 2 },
  { key: "b", n: 3 },
  { key: "c", n: 4 },
];

function reader(options: { maxKeys?: number; fail?: (keys: string[]) => unknown } = {}) {
  const read = vi.fn(async (keys: string[]) => {
    const failure = options.fail?.(keys);
    if (failure !== undefined) throw failure;
    return TABLE.filter((r) => keys.includes(r.key));
  });
  const load = createPointReads<Row>({ read, keyOf: (r) => r.key, maxKeys: options.maxKeys });
  return { read, load };
}

/** The end of the current turn: what setImmediate queued before this has run. */
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

it("reads asked for in one turn make one query of their distinct keys; each caller gets its own key's rows", async () => {
  const { read, load } = reader();
  const answers = await Promise.all(["a", "b", "missing", "c", "b", "a"].map((k) => load(k)));
  expect(read).toHaveBeenCalledTimes(1);
  expect(read.mock.calls[0]?.[0]).toEqual(["a", "b", "missing", "c"]);
  expect(answers).toEqual([
    [{ key: "a", n: 1 }],
    [
      { key: "b", n: 2 },
      { key: "b", n: 3 },
    ],
    [],
    [{ key: "c", n: 4 }],
    [
      { key: "b", n: 2 },
      { key: "b", n: 3 },
    ],
    [{ key: "a", n: 1 }],
  ]);
});

it("a read asked for after its turn's batch was sent is not folded into it: it gets a query of its own", async () => {
  const { read, load } = reader();
  const first = load("a");
  await nextTurn(); // the batch of "a" is sent here
  const second = load("a");
  expect(await first).toEqual([{ key: "a", n: 1 }]);
  expect(await second).toEqual([{ key: "a", n: 1 }]);
  expect(read.mock.calls.map((c) => c[0])).toEqual([["a"], ["a"]]);
});

it("a read asked for while an earlier query of its key is still in flight is not answered by that query", async () => {
  // That query may have been sent before a commit the later read must see.
  let value = 1;
  const held: (() => void)[] = [];
  const read = vi.fn(async (keys: string[]) => {
    const answer = keys.map((key) => ({ key, n: value }));
    await new Promise<void>((resolve) => held.push(resolve));
    return answer;
  });
  const load = createPointReads<Row>({ read, keyOf: (r) => r.key });
  const before = load("a");
  await nextTurn(); // sent, and held in flight
  expect(read).toHaveBeenCalledTimes(1);
  value = 2; // a commit, after which the next read is asked for
  const after = load("a");
  await nextTurn();
  expect(read).toHaveBeenCalledTimes(2);
  for (const release of held) release();
  expect(await before).toEqual([{ key: "a", n: 1 }]);
  expect(await after).toEqual([{ key: "a", n: 2 }]);
});

it("a lone read waits for nothing but the end of its turn", async () => {
  const { read, load } = reader();
  const answer = load("c");
  expect(read).not.toHaveBeenCalled();
  await nextTurn();
  expect(read).toHaveBeenCalledTimes(1);
  expect(await answer).toEqual([{ key: "c", n: 4 }]);
});

it("a batch holds at most maxKeys distinct keys: the next key of the turn starts the next batch", async () => {
  const { read, load } = reader({ maxKeys: 2 });
  const answers = await Promise.all(["a", "a", "b", "c", "missing", "b"].map((k) => load(k)));
  // "b" fills the first batch (sent at once); "b" again later in the turn is in a later batch.
  expect(read.mock.calls.map((c) => c[0])).toEqual([["a", "b"], ["c", "missing"], ["b"]]);
  expect(answers.map((rows) => rows.map((r) => r.n))).toEqual([[1], [1], [2, 3], [4], [], [2, 3]]);
});

it("a failed query fails every caller of its batch with that error, and only them; the next read is served", async () => {
  const lost = new Error("Connection terminated unexpectedly");
  const { read, load } = reader({ maxKeys: 2, fail: (keys) => (keys.includes("b") ? lost : undefined) });
  const outcomes = await Promise.allSettled(["a", "a", "b", "c"].map((k) => load(k)));
  // Batch ["a","b"] (with two callers of "a") failed, batch ["c"] did not.
  expect(outcomes).toEqual([
    { status: "rejected", reason: lost },
    { status: "rejected", reason: lost },
    { status: "rejected", reason: lost },
    { status: "fulfilled", value: [{ key: "c", n: 4 }] },
  ]);
  expect(await load("a")).toEqual([{ key: "a", n: 1 }]);
  expect(read).toHaveBeenCalledTimes(3);
});

it("a read function that throws instead of rejecting fails its batch the same way", async () => {
  const broken = new Error("broken");
  const load = createPointReads<Row>({
    read: () => {
      throw broken;
    },
    keyOf: (r) => r.key,
  });
  const outcomes = await Promise.allSettled([load("a"), load("b")]);
  expect(outcomes).toEqual([
    { status: "rejected", reason: broken },
    { status: "rejected", reason: broken },
  ]);
});

it("rows it cannot sort by key fail their batch's callers, never as an unhandled rejection", async () => {
  const odd = new Error("no key");
  const load = createPointReads<Row>({
    read: async () => TABLE,
    keyOf: () => {
      throw odd;
    },
  });
  const outcomes = await Promise.allSettled([load("a"), load("b")]);
  expect(outcomes).toEqual([
    { status: "rejected", reason: odd },
    { status: "rejected", reason: odd },
  ]);
});

it("refuses a cap below one key", () => {
  expect(() => createPointReads<Row>({ read: async () => [], keyOf: (r) => r.key, maxKeys: 0 })).toThrow(/at least one key/);
});
