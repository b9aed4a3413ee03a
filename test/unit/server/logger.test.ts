import { describe, expect, it } from "vitest";
import { createLogger } from "../../../src/server/logger.js";

/** A logger writing into an array of parsed lines. */
function capture() {
  const lines: Record<string, unknown>[] = [];
  const log = createLogger("info", { write: (s: string) => void lines.push(JSON.parse(s)) });
  return { log, lines };
}

describe("createLogger redaction", () => {
  it("censors credentials at the top of a line", () => {
    const { log, lines } = capture();
    log.info({ authorization: "Bearer secret-a", token: "secret-b", headers: { authorization: "Bearer secret-c", accept: "x" } }, "m");
    expect(lines[0]).toMatchObject({ authorization: "[redacted]", token: "[redacted]", headers: { authorization: "[redacted]", accept: "x" } });
    expect(JSON.stringify(lines)).not.toMatch(/secret/);
  });

  it("censors credentials carried by a logged error", () => {
    const { log, lines } = capture();
    const err = Object.assign(new Error("upstream refused"), { token: "secret-d", authorization: "Bearer secret-e", headers: { authorization: "Bearer secret-f" } });
    log.error({ err, method: "m" }, "unexpected error");
    expect(lines[0]?.err).toMatchObject({ message: "upstream refused", token: "[redacted]", authorization: "[redacted]", headers: { authorization: "[redacted]" } });
    expect(JSON.stringify(lines)).not.toMatch(/secret/);
  });

  it("leaves a call line as it was given", () => {
    const { log, lines } = capture();
    const call = { protocol: "grpc", method: "chainguard.platform.iam.Groups/Get", code: "OK", ms: 0.25 };
    log.info(call, "call");
    expect(lines[0]).toEqual({ level: 30, time: expect.any(Number), ...call, msg: "call" });
  });
});
