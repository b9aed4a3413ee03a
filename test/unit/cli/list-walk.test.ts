/**
 * The list walker and output choice, in process: paging stops at the last page or --limit,
 * asks for no more than it needs, and shows progress on stderr only when stderr is a
 * terminal (erased at the end); tables are the default on a terminal, JSON in a pipe.
 */
import { describe, expect, it } from "vitest";
import type { Io } from "../../../src/cli/io.js";
import { MAX_PAGE_SIZE, walk } from "../../../src/cli/list-walk.js";
import { resolveFormat, table } from "../../../src/cli/output.js";

function fakeIo(stderrIsTty: boolean) {
  const err: string[] = [];
  const io: Io = { out: () => {}, err: (t) => err.push(t), stdoutIsTty: false, stderrIsTty, env: {} };
  return { io, err };
}

/** A server holding `total` numbered items, paged by offset tokens. */
function pages(total: number) {
  const asked: number[] = [];
  const fetchPage = async (pageSize: number, pageToken: string) => {
    asked.push(pageSize);
    const start = Number(pageToken || 0);
    const items = Array.from({ length: Math.max(0, Math.min(pageSize, total - start)) }, (_, i) => start + i);
    const next = start + items.length;
    return { items, nextPageToken: next < total ? String(next) : "", totalCount: BigInt(total) };
  };
  return { fetchPage, asked };
}

describe("walk", () => {
  it("collects every page, asking for the largest pages", async () => {
    const { fetchPage, asked } = pages(450);
    const { io, err } = fakeIo(false);
    const items = await walk(fetchPage, { io, noun: "groups" });
    expect(items).toEqual(Array.from({ length: 450 }, (_, i) => i));
    expect(asked).toEqual([MAX_PAGE_SIZE, MAX_PAGE_SIZE, MAX_PAGE_SIZE]);
    expect(err).toEqual([]); // not a terminal: no progress
  });

  it("stops at --limit and never asks for more than is left", async () => {
    const { fetchPage, asked } = pages(450);
    const { io } = fakeIo(false);
    expect(await walk(fetchPage, { io, noun: "groups", limit: 210 })).toHaveLength(210);
    expect(asked).toEqual([200, 10]);
    const small = pages(450);
    expect(await walk(small.fetchPage, { io, noun: "groups", limit: 5 })).toEqual([0, 1, 2, 3, 4]);
    expect(small.asked).toEqual([5]);
  });

  it("shows progress on a terminal's stderr during a multi-page walk and erases it", async () => {
    const { fetchPage } = pages(450);
    const { io, err } = fakeIo(true);
    await walk(fetchPage, { io, noun: "groups" });
    expect(err).toEqual(["\rfetched 200 of 450 groups…", "\rfetched 400 of 450 groups…", "\r\x1b[K"]);
    const one = fakeIo(true);
    await walk(pages(3).fetchPage, { io: one.io, noun: "groups" });
    expect(one.err).toEqual([]); // one page: nothing to show
  });
});

describe("output", () => {
  it("defaults to a table on a terminal and JSON in a pipe; rejects unknown formats", () => {
    expect(resolveFormat(undefined, true)).toBe("table");
    expect(resolveFormat(undefined, false)).toBe("json");
    expect(resolveFormat("yaml", true)).toBe("yaml");
    expect(() => resolveFormat("xml", true)).toThrow(/-o must be one of table, json, yaml, id/);
  });

  it("aligns table columns on the widest cell and keeps cells on one line", () => {
    const rows = [
      { a: "1", b: "short" },
      { a: "22222", b: "two\nlines" },
    ];
    const text = table(
      [
        { header: "ID", cell: (r: (typeof rows)[number]) => r.a },
        { header: "TEXT", cell: (r: (typeof rows)[number]) => r.b },
      ],
      rows,
    );
    expect(text).toBe("ID     TEXT\n1      short\n22222  two lines\n");
  });
});
