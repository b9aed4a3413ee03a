/**
 * The compiled JSON writer (json-writer.ts) against the reference rendering it replaces
 * (protobuf-es `toJson` with `alwaysEmitImplicit` plus the post-pass in render-response.ts):
 * the same JSON text, byte for byte, or both throw, on random messages of every message type
 * of the API (gen/) and of the transcoder's test service.
 */
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { create, type DescMessage, type DescService, toJson } from "@bufbuild/protobuf";
import { TimestampSchema } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { formatMillis, type JsonMode, jsonWriterFor } from "../../../src/json/json-writer.js";
import { renderWithToJson } from "../../../src/transcode/render-response.js";
import { ItemSchema, ListItemsResponseSchema } from "../../gen/trellis/testing/v1/items_pb.js";
import { randomMessage, seededRandom } from "../../support/random-message.js";

const root = path.resolve(fileURLToPath(new URL("../../..", import.meta.url)));

/** Every generated module under `dir`, imported. */
async function generated(dir: string): Promise<Record<string, unknown>[]> {
  const files = fs.readdirSync(path.join(root, dir), { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith("_pb.ts"));
  return Promise.all(files.map((f) => import(path.join(root, dir, f)) as Promise<Record<string, unknown>>));
}

function kindOf(x: unknown): string | undefined {
  return typeof x === "object" && x !== null && "kind" in x ? String((x as { kind: unknown }).kind) : undefined;
}

const modules = [...(await generated("gen/chainguard")), ...(await generated("test/gen"))];
const messages = new Map<string, DescMessage>();
const services: DescService[] = [];
for (const mod of modules) {
  for (const value of Object.values(mod)) {
    if (kindOf(value) === "message") messages.set((value as DescMessage).typeName, value as DescMessage);
    if (kindOf(value) === "service") services.push(value as DescService);
  }
}

/**
 * Both renderings of `message`, as JSON text or the fact that they threw: the compiled writer
 * and its reference (`rest`: toJson and the post-pass; `proto3`: toJson alone).
 */
function both(schema: DescMessage, message: unknown, mode: JsonMode = "rest"): [string, string] {
  const writer = jsonWriterFor(schema, mode);
  if (!writer) throw new Error(`${schema.typeName} has no compiled writer`);
  const run = (f: () => unknown): string => {
    try {
      return JSON.stringify(f());
    } catch {
      return "(threw)";
    }
  };
  const reference = mode === "rest" ? () => renderWithToJson(schema, message as never) : () => toJson(schema, message as never, { alwaysEmitImplicit: true });
  return [run(() => writer(message)), run(reference)];
}

describe("compiled JSON writer", () => {
  it("covers the response of every method of the API", () => {
    const api = services.filter((s) => s.typeName.startsWith("chainguard."));
    expect(api.length).toBeGreaterThan(10);
    const missing = api.flatMap((s) => s.methods.map((m) => m.output)).filter((o) => jsonWriterFor(o) === undefined);
    expect(missing.map((m) => m.typeName)).toEqual([]);
  });

  it.each([
    ["rest", "toJson and the post-pass"],
    ["proto3", "toJson alone (the Connect door)"],
  ] as const)("in %s mode writes what %s write, for random messages of every type", (mode, _reference) => {
    const compiled = [...messages.values()].filter((d) => jsonWriterFor(d, mode) !== undefined);
    expect(compiled.length).toBeGreaterThan(100);
    const rnd = seededRandom(20261123);
    let threw = 0;
    const fractions = new Set<number>();
    for (const schema of compiled) {
      for (let i = 0; i < 40; i++) {
        const message = randomMessage(schema, rnd, { invalidTimestamp: 0.02 });
        const [fast, reference] = both(schema, message, mode);
        if (reference === "(threw)") threw++;
        for (const m of reference.matchAll(/T\d\d:\d\d:\d\d(?:\.(\d+))?Z/g)) fractions.add(m[1]?.length ?? 0);
        expect(fast, `${schema.typeName} #${i}`).toBe(reference);
      }
    }
    // The invalid Timestamps did reach both writers (the comparison above covers throwing too),
    // and every width of fraction the mode writes was compared.
    expect(threw).toBeGreaterThan(0);
    expect([...fractions].sort()).toEqual(mode === "rest" ? [3] : [0, 3, 6, 9]);
  });

  it("leaves types reaching Struct or wrappers to toJson", () => {
    expect(jsonWriterFor(ItemSchema)).toBeUndefined(); // Item.metadata is a Struct
    expect(jsonWriterFor(ListItemsResponseSchema)).toBeUndefined();
    for (const name of ["google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.StringValue"]) {
      const d = messages.get(name);
      if (d) expect(jsonWriterFor(d)).toBeUndefined();
    }
  });

  it("refuses a message of another type, as toJson does", () => {
    const [schema, other] = [...messages.values()].filter((d) => d.fields.length > 0 && jsonWriterFor(d));
    const [fast, reference] = both(schema as DescMessage, create(other as DescMessage));
    expect([fast, reference]).toEqual(["(threw)", "(threw)"]);
  });

  it("formats milliseconds as Date.toISOString does across the Timestamp range", () => {
    const rnd = seededRandom(7);
    const min = Date.parse("0001-01-01T00:00:00Z");
    const max = Date.parse("9999-12-31T23:59:59.999Z");
    const edges = [min, max, 0, -1, 86_399_999, 86_400_000, Date.parse("2000-02-29T23:59:59.999Z"), Date.parse("1900-03-01T00:00:00Z")];
    for (const ms of [...edges, ...Array.from({ length: 20_000 }, () => min + Math.floor(rnd() * (max - min)))]) {
      expect(formatMillis(ms)).toBe(new Date(ms).toISOString());
    }
    const ts = create(TimestampSchema, { seconds: 1n, nanos: 999_999_999 });
    expect(both(TimestampSchema, ts)).toEqual(['"1970-01-01T00:00:01.999Z"', '"1970-01-01T00:00:01.999Z"']);
  });
});
