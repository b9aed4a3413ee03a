/** httpStatusFromCode: the google/rpc/code.proto table, every code plus out-of-range ones. */
import { describe, expect, it } from "vitest";
import { httpStatusFromCode } from "../../../src/transcode/http-status.js";

describe("httpStatusFromCode", () => {
  const table: [number, string, number][] = [
    [0, "OK", 200],
    [1, "CANCELLED", 499],
    [2, "UNKNOWN", 500],
    [3, "INVALID_ARGUMENT", 400],
    [4, "DEADLINE_EXCEEDED", 504],
    [5, "NOT_FOUND", 404],
    [6, "ALREADY_EXISTS", 409],
    [7, "PERMISSION_DENIED", 403],
    [8, "RESOURCE_EXHAUSTED", 429],
    [9, "FAILED_PRECONDITION", 400],
    [10, "ABORTED", 409],
    [11, "OUT_OF_RANGE", 400],
    [12, "UNIMPLEMENTED", 501],
    [13, "INTERNAL", 500],
    [14, "UNAVAILABLE", 503],
    [15, "DATA_LOSS", 500],
    [16, "UNAUTHENTICATED", 401],
    [17, "(unknown)", 500],
    [-1, "(unknown)", 500],
    [99, "(unknown)", 500],
  ];
  for (const [code, name, status] of table) {
    it(`${code} ${name} → ${status}`, () => {
      expect(httpStatusFromCode(code)).toBe(status);
    });
  }
});
