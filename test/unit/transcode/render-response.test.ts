/**
 * renderResponse: proto3 JSON with defaults written out, int64 as strings, enum names,
 * zero enums left out, response_body, and every Timestamp with exactly three fractional digits.
 */
import { create, type Message } from "@bufbuild/protobuf";
import { EmptySchema, type Timestamp, TimestampSchema } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { formatTimestampMillis, renderResponse } from "../../../src/transcode/render-response.js";
import { createRouteTable, type Route } from "../../../src/transcode/route-table.js";
import {
  CountItemsResponseSchema,
  ExchangeResponseSchema,
  ItemSchema,
  ItemService,
  Kind,
  ListItemsResponseSchema,
} from "../../gen/trellis/testing/v1/items_pb.js";
import { syntheticService } from "./synthetic-service.js";

const table = createRouteTable([ItemService]);
const route = (name: string): Route => table.routes.find((r) => r.method.name === name) as Route;
const ts = (iso: string, nanos: number): Timestamp => create(TimestampSchema, { seconds: BigInt(Date.parse(iso) / 1000), nanos });
const render = (name: string, message: Message) => JSON.parse(renderResponse(route(name), message));

describe("renderResponse", () => {
  it("writes implicit defaults (empty list, empty string, zero) and omits unset optional/messages", () => {
    expect(render("ListItems", create(ListItemsResponseSchema))).toEqual({ items: [], nextPageToken: "", skipped: 0 });
  });

  it("writes int64 as a decimal string, also when it is 0", () => {
    expect(render("ListItems", create(ListItemsResponseSchema, { totalCount: 12n, skipped: 2 }))).toEqual({
      items: [],
      nextPageToken: "",
      totalCount: "12",
      skipped: 2,
    });
    expect(render("CountItems", create(CountItemsResponseSchema))).toEqual({ count: "0" });
  });

  it("renders a resource: lowerCamelCase, enum names, zero enum left out, maps and lists", () => {
    const item = create(ItemSchema, {
      uid: "u1",
      kind: Kind.A,
      revision: 9007199254740993n,
      annotations: { a: "b" },
      labels: ["x"],
      nickname: "nick",
      metadata: { k: [1, "two"] },
    });
    expect(render("GetItem", item)).toEqual({
      uid: "u1",
      name: "",
      description: "",
      labels: ["x"],
      annotations: { a: "b" },
      parts: [],
      kind: "KIND_A",
      revision: "9007199254740993",
      metadata: { k: [1, "two"] },
      nickname: "nick",
      partsById: {},
    });
    expect(render("GetItem", create(ItemSchema))).not.toHaveProperty("kind");
  });

  it("writes every Timestamp with exactly three fractional digits, truncated, at any depth", () => {
    const item = create(ItemSchema, {
      createTime: ts("2026-11-22T10:00:00Z", 0),
      updateTime: ts("2026-11-22T10:00:00Z", 999_999_999),
      parts: [{ id: "p", createTime: ts("2001-02-03T04:05:06Z", 1_000_000) }],
      partsById: { k: { id: "k", createTime: ts("2001-02-03T04:05:06Z", 123_456_789) } },
      spec: { color: "red" },
    });
    const json = render("GetItem", item);
    expect(json.createTime).toBe("2026-11-22T10:00:00.000Z");
    expect(json.updateTime).toBe("2026-11-22T10:00:00.999Z");
    expect(json.parts[0].createTime).toBe("2001-02-03T04:05:06.001Z");
    expect(json.partsById.k.createTime).toBe("2001-02-03T04:05:06.123Z");
    expect(json.spec).toEqual({ color: "red", size: 0, tags: [] });
    expect(render("Exchange", create(ExchangeResponseSchema, { expireTime: ts("2030-01-01T00:00:00Z", 5) }))).toEqual({
      token: "",
      expireTime: "2030-01-01T00:00:00.000Z",
    });
  });

  it("formats the ends of the Timestamp range", () => {
    expect(formatTimestampMillis(create(TimestampSchema, { seconds: -62135596800n, nanos: 0 }))).toBe("0001-01-01T00:00:00.000Z");
    expect(formatTimestampMillis(create(TimestampSchema, { seconds: 253402300799n, nanos: 999_999_999 }))).toBe("9999-12-31T23:59:59.999Z");
  });

  it("honours response_body", () => {
    expect(renderResponse(route("GetLabels"), create(ItemSchema, { labels: ["x", "y"], name: "n" }))).toBe('["x","y"]');
    expect(renderResponse(route("GetLabels"), create(ItemSchema))).toBe("[]");
  });

  it("renders an unset response_body message as {} and an unset Timestamp as null", () => {
    const service = syntheticService([
      { name: "GetSpec", rule: { pattern: { case: "get", value: "/v1/spec/{uid}" }, responseBody: "spec" } },
      { name: "GetCreated", rule: { pattern: { case: "get", value: "/v1/created/{uid}" }, responseBody: "create_time" } },
    ]);
    const [spec, created] = createRouteTable([service]).routes as [Route, Route];
    expect(renderResponse(spec, create(ItemSchema))).toBe("{}");
    expect(renderResponse(spec, create(ItemSchema, { spec: { color: "c" } }))).toBe('{"color":"c","size":0,"tags":[]}');
    expect(renderResponse(created, create(ItemSchema))).toBe("null");
    expect(renderResponse(created, create(ItemSchema, { createTime: ts("2026-11-22T10:00:00Z", 0) }))).toBe('"2026-11-22T10:00:00.000Z"');
  });

  it("renders google.protobuf.Empty as {}", () => {
    expect(renderResponse(route("DeleteItem"), create(EmptySchema))).toBe("{}");
  });
});
