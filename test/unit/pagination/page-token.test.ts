/**
 * The page-token codec on its own: tokens round-trip, no two share an IV (also across a refill
 * of the IV pool), any changed byte makes a token invalid, and a key ring (rotation) opens
 * tokens of every key it holds while sealing with the newest.
 */
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createPageTokenCodec, type PageState } from "../../../src/pagination/page-token.js";

const NOW = 1_800_000_000_000;
const state = (n: number): PageState => ({
  fingerprint: "f".repeat(32),
  after: { value: n, uid: `a1b2c3d4e5f6a7b8/${n}` },
  skipped: n,
  lastSkip: 0,
  total: 1_000_050,
  issuedAt: NOW,
});

describe("page-token codec", () => {
  const codec = createPageTokenCodec(randomBytes(32));

  it("round-trips thousands of tokens, each with its own IV", () => {
    const ivs = new Set<string>();
    for (let n = 0; n < 3000; n++) {
      const token = codec.encode(state(n));
      ivs.add(Buffer.from(token, "base64url").subarray(1, 13).toString("hex"));
      expect(codec.decode(token, NOW)).toEqual({ kind: "ok", state: state(n) });
    }
    expect(ivs.size).toBe(3000);
  });

  it("refuses a token with any byte changed, and one from another key", () => {
    const raw = Buffer.from(codec.encode(state(7)), "base64url");
    for (let i = 0; i < raw.length; i++) {
      const bad = Buffer.from(raw);
      bad[i] = (bad[i] as number) ^ 0x01;
      expect(codec.decode(bad.toString("base64url"), NOW).kind, `byte ${i}`).toBe("invalid");
    }
    expect(createPageTokenCodec(randomBytes(32)).decode(raw.toString("base64url"), NOW).kind).toBe("invalid");
  });

  it("with a key ring: the newest key seals, every key in the ring opens, a dropped key's tokens are invalid", () => {
    const oldKey = randomBytes(32);
    const newKey = randomBytes(32);
    const sealedOld = createPageTokenCodec(oldKey).encode(state(1));
    let ring = { active: newKey, all: [newKey, oldKey] };
    const rotating = createPageTokenCodec(() => ring);
    expect(rotating.decode(sealedOld, NOW)).toEqual({ kind: "ok", state: state(1) });
    const sealedNew = rotating.encode(state(2));
    expect(createPageTokenCodec(newKey).decode(sealedNew, NOW).kind).toBe("ok");
    expect(createPageTokenCodec(oldKey).decode(sealedNew, NOW).kind).toBe("invalid");
    ring = { active: newKey, all: [newKey] };
    expect(rotating.decode(sealedOld, NOW).kind).toBe("invalid");
    expect(rotating.decode(sealedNew, NOW).kind).toBe("ok");
  });
});
