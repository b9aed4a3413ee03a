/** Which client-sent request ids and traceparents the server takes (the rest is replaced or ignored). */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MAX_REQUEST_ID_LENGTH, saneRequestId, traceIdOf } from "../../../src/observe/call-meta.js";

describe("saneRequestId", () => {
  it("takes short ids of safe characters as they are", () => {
    for (const id of ["abc", "0f8fad5b-d9cb-469f-a165-70867728950e", "01HZX:svc/1+2=3@x.y_z", "x".repeat(MAX_REQUEST_ID_LENGTH)]) {
      expect(saneRequestId(id)).toBe(id);
    }
  });

  it("refuses empty, too long, repeated, or anything with a character outside the safe set", () => {
    for (const id of ["", "x".repeat(MAX_REQUEST_ID_LENGTH + 1), "a b", 'a"b', "a\tb", "a;b", "a,b", "<x>", "a\\b", "é"]) {
      expect(saneRequestId(id), JSON.stringify(id)).toBeUndefined();
    }
    expect(saneRequestId(["a", "b"])).toBeUndefined();
    expect(saneRequestId(undefined)).toBeUndefined();
  });

  it("whatever it takes could not forge a log field or split a header", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 200 }), (s) => {
        const taken = saneRequestId(s);
        if (taken !== undefined) expect(taken).toMatch(/^[A-Za-z0-9\-._:+=/@]{1,128}$/);
      }),
      { seed: 22, numRuns: 2000 },
    );
  });
});

describe("traceIdOf", () => {
  const id = "4bf92f3577b34da6a3ce929d0e0e4736";
  it("reads the trace id of a valid version-00 traceparent", () => {
    expect(traceIdOf(`00-${id}-00f067aa0ba902b7-01`)).toBe(id);
    expect(traceIdOf(`00-${id}-00f067aa0ba902b7-00`)).toBe(id);
    // A later version may append fields; its first four keep their meaning.
    expect(traceIdOf(`01-${id}-00f067aa0ba902b7-01-extra`)).toBe(id);
  });

  it("ignores invalid ones", () => {
    for (const bad of [
      undefined,
      "",
      `ff-${id}-00f067aa0ba902b7-01`,
      `00-${"0".repeat(32)}-00f067aa0ba902b7-01`,
      `00-${id}-${"0".repeat(16)}-01`,
      `00-${id.toUpperCase()}-00f067aa0ba902b7-01`,
      `00-${id}-00f067aa0ba902b7-01-extra`,
      `00-${id.slice(1)}-00f067aa0ba902b7-01`,
      `00-${id}-00f067aa0ba902b7-01`.repeat(20),
    ]) {
      expect(traceIdOf(bad), String(bad)).toBeUndefined();
    }
  });
});
