/** CORS: off by default; with an allow-list, preflights and responses for allowed origins only. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseServeConfig } from "../../src/server/config.js";
import { startTestApp, type TestApp } from "../support/app.js";

const preflight = (url: string, origin: string) =>
  fetch(url, {
    method: "OPTIONS",
    headers: { origin, "access-control-request-method": "POST", "access-control-request-headers": "authorization,content-type" },
  });

describe("CORS off (the default)", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => t.close());

  it("does not answer preflights or add CORS headers", async () => {
    const res = await preflight(`${t.url}/iam/v2beta1/groups`, "https://app.example");
    expect(res.status).toBe(405);
    expect(res.headers.get("access-control-allow-origin")).toBeNull();
  });
});

describe("CORS with an allow-list", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ corsOrigins: ["https://app.example"] });
  });
  afterAll(async () => t.close());

  it("answers preflights from allowed origins on REST and Connect paths", async () => {
    for (const path of ["/iam/v2beta1/groups", "/chainguard.platform.iam.v2beta1.GroupsService/ListGroups"]) {
      const res = await preflight(t.url + path, "https://app.example");
      expect(res.status).toBe(204);
      expect(res.headers.get("access-control-allow-origin")).toBe("https://app.example");
      expect(res.headers.get("access-control-allow-headers")).toMatch(/Authorization/);
      // An allowed browser client may ask the exchange for a refresh token.
      expect(res.headers.get("access-control-allow-headers")).toMatch(/trellis-request-refresh-token/);
      expect(res.headers.get("access-control-allow-methods")).toMatch(/PATCH/);
    }
  });

  it("adds Allow-Origin to real responses for allowed origins only", async () => {
    const ok = await fetch(`${t.url}/iam/v2beta1/groups`, { headers: { origin: "https://app.example" } });
    expect(ok.headers.get("access-control-allow-origin")).toBe("https://app.example");
    expect(ok.headers.get("access-control-expose-headers")).toMatch(/Grpc-Status/i);
    // The request id every answer carries is readable by the browser client.
    expect(ok.headers.get("access-control-expose-headers")).toMatch(/X-Request-Id/i);
    expect(ok.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    const other = await fetch(`${t.url}/iam/v2beta1/groups`, { headers: { origin: "https://evil.example" } });
    expect(other.headers.get("access-control-allow-origin")).toBeNull();
    const otherPreflight = await preflight(`${t.url}/iam/v2beta1/groups`, "https://evil.example");
    expect(otherPreflight.status).toBe(405);
  });

  it("takes origins from --cors-origin (repeatable or comma-separated) and TRELLIS_CORS_ORIGINS", () => {
    expect(parseServeConfig(["--cors-origin", "https://a", "--cors-origin", "https://b,https://c"], {}).corsOrigins).toEqual([
      "https://a",
      "https://b",
      "https://c",
    ]);
    expect(parseServeConfig([], { TRELLIS_CORS_ORIGINS: "https://x, https://y" }).corsOrigins).toEqual(["https://x", "https://y"]);
    expect(parseServeConfig([], {}).corsOrigins).toEqual([]);
  });
});
