/**
 * The one table of gRPC codes (src/errors/codes.ts) against the two sources it must agree with:
 * google/rpc/code.proto (the names, through gen/) and the Connect protocol's code → HTTP status
 * table (connect's own, which connect-node answers Connect errors with), so the REST door, the
 * fast Connect door and connect-node give one error one status; then docs/rest.md's copy for
 * readers, and the answers made apart from the code alone.
 */
import fs from "node:fs";
import { Code as ConnectCode } from "@connectrpc/connect";
import { codeToHttpStatus } from "@connectrpc/connect/protocol-connect";
import { describe, expect, it } from "vitest";
import { Code as ProtoCode } from "../../../gen/google/rpc/code_pb.js";
import { CODE_NAMES, GrpcCode, httpStatusOf } from "../../../src/errors/codes.js";

const codes = Object.values(GrpcCode);

describe("gRPC codes", () => {
  it("are the sixteen of code.proto, named as code.proto names them, and as connect's Code names them in code", () => {
    expect(codes).toEqual(Array.from({ length: 16 }, (_, i) => i + 1));
    for (const code of codes) {
      expect(CODE_NAMES[code]).toBe(ProtoCode[code]);
      expect(ConnectCode[code]).toBe(Object.entries(GrpcCode).find(([, n]) => n === code)?.[0]);
    }
  });

  for (const code of codes) {
    it(`${code} ${CODE_NAMES[code]} → HTTP ${httpStatusOf(code)}, the Connect protocol's status`, () => {
      expect(httpStatusOf(code)).toBe(codeToHttpStatus(code as number as ConnectCode));
    });
  }

  it("docs/rest.md's status table is this one", () => {
    const doc = fs.readFileSync("docs/rest.md", "utf8");
    const row = (head: string) => (doc.match(new RegExp(`^\\s*\\| ${head} \\|(.*)\\|$`, "m"))?.[1] ?? "").split("|").map((c) => Number(c.trim()));
    const documented = row("code").map((code, i) => [code, row("HTTP")[i]]);
    expect(documented).toEqual(codes.map((code) => [code, httpStatusOf(code)]));
  });

  it("FAILED_PRECONDITION is 400, not 412; CANCELLED is 499", () => {
    expect(httpStatusOf(GrpcCode.FailedPrecondition)).toBe(400);
    expect(httpStatusOf(GrpcCode.Canceled)).toBe(499);
  });

  it("METHOD_NOT_ALLOWED is 405; OK is 200; a number that is no code is 500", () => {
    expect(httpStatusOf(GrpcCode.Unimplemented, "METHOD_NOT_ALLOWED")).toBe(405);
    expect(httpStatusOf(GrpcCode.Unimplemented, "UNKNOWN_METHOD")).toBe(501);
    expect(httpStatusOf(0)).toBe(200);
    for (const n of [17, -1, 99]) expect(httpStatusOf(n)).toBe(500);
  });
});
