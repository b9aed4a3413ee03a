import { describe, expect, it, vi } from "vitest";
import { type ChunkWriter, createLogger, logStats, NonBlockingLogSink } from "../../../src/observe/logger.js";

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
    const err = Object.assign(new Error("upstream refused"), {
      token: "secret-d",
      authorization: "Bearer secret-e",
      headers: { authorization: "Bearer secret-f" },
    });
    log.error({ err, method: "m" }, "unexpected error");
    expect(lines[0]?.err).toMatchObject({
      message: "upstream refused",
      token: "[redacted]",
      authorization: "[redacted]",
      headers: { authorization: "[redacted]" },
    });
    expect(JSON.stringify(lines)).not.toMatch(/secret/);
  });

  it("leaves a call line as it was given", () => {
    const { log, lines } = capture();
    const call = { protocol: "grpc", method: "chainguard.platform.iam.Groups/Get", code: "OK", ms: 0.25 };
    log.info(call, "call");
    expect(lines[0]).toEqual({ level: 30, time: expect.any(Number), ...call, msg: "call" });
  });
});

/** A destination under the test's control: each write waits until the test answers it. */
function scriptedWriter() {
  const pending: { data: string; done: (error: NodeJS.ErrnoException | null) => void }[] = [];
  const written: string[] = [];
  const writer: ChunkWriter = (data, done) => void pending.push({ data, done });
  const answer = (code?: string) => {
    const next = pending.shift();
    if (!next) throw new Error("no write is waiting");
    if (code) next.done(Object.assign(new Error(code), { code }));
    else {
      written.push(next.data);
      next.done(null);
    }
  };
  return { writer, pending, written, answer };
}

describe("NonBlockingLogSink: logging never blocks or stops the server", () => {
  it("drops and counts the lines of failed writes (ENOSPC), then says once how many were lost", () => {
    const out = scriptedWriter();
    const sink = new NonBlockingLogSink(out.writer);
    const log = createLogger("info", sink);
    const before = logStats.droppedLines;
    log.info("one"); // written at once: the first write is in flight
    log.info("two");
    log.info("three"); // queued behind it
    out.answer("ENOSPC"); // "one" lost
    out.answer("ENOSPC"); // "two" and "three", written as one chunk, lost
    expect(logStats.droppedLines - before).toBe(3);
    log.info("four");
    out.answer(); // space is back
    expect(out.written.join("")).toContain('"msg":"four"');
    out.answer(); // then the one line about the drops
    const notice = JSON.parse(out.written[1] as string);
    expect(notice).toMatchObject({ level: 40, dropped: 3 });
    expect(out.pending).toHaveLength(0);
    log.info("five");
    out.answer();
    expect(out.written).toHaveLength(3); // no second notice
  });

  it("never queues more than its bound while the destination does not answer", () => {
    const out = scriptedWriter();
    const sink = new NonBlockingLogSink(out.writer, 1000);
    const before = logStats.droppedLines;
    for (let i = 0; i < 100; i++) sink.write(`${"x".repeat(99)}\n`); // 10 000 bytes against a bound of 1 000
    expect(out.pending).toHaveLength(1); // one write in flight, nothing else started
    expect(logStats.droppedLines - before).toBe(100 - 1 - 10);
  });

  it("retries lines a slow pipe refused with EAGAIN instead of dropping them", () => {
    vi.useFakeTimers();
    try {
      const out = scriptedWriter();
      const sink = new NonBlockingLogSink(out.writer);
      const before = logStats.droppedLines;
      sink.write("a\n");
      out.answer("EAGAIN");
      expect(out.pending).toHaveLength(0); // waits a little rather than spinning
      vi.advanceTimersByTime(20);
      out.answer();
      expect(out.written).toEqual(["a\n"]);
      expect(logStats.droppedLines).toBe(before);
      let flushed = false;
      sink.flush(() => {
        flushed = true;
      });
      expect(flushed).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });
});
