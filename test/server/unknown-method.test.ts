/**
 * An unknown service or method is UNIMPLEMENTED (gRPC status 12) on every RPC door, with a
 * message naming the method and ErrorInfo first — never a bare 404, which gRPC clients cannot
 * read. REST keeps its google.rpc.Status NOT_FOUND. Fast unary path on and off, HTTP/1.1 and h2.
 */
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_ERROR_DOMAIN } from "../../src/server/config.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { defaultAuthHeaders } from "../support/auth.js";
import { type Door, type HeaderPairs, outcomeOf, rawRequest } from "../support/doors.js";
import { envelope } from "../support/raw-rpc.js";

const GROUPS = "chainguard.platform.iam.v2beta1.GroupsService";
const UNKNOWN_METHOD = `/${GROUPS}/FlyToTheMoon`;
const UNKNOWN_SERVICE = "/acme.nothing.v1.Nowhere/Get";

const DOORS: ReadonlyArray<{ door: Door; h2: boolean; contentType: string; body: Buffer | string }> = [
  { door: "grpc", h2: true, contentType: "application/grpc", body: envelope(Buffer.alloc(0)) },
  { door: "grpc-web", h2: false, contentType: "application/grpc-web+proto", body: envelope(Buffer.alloc(0)) },
  { door: "grpc-web", h2: true, contentType: "application/grpc-web+proto", body: envelope(Buffer.alloc(0)) },
  { door: "connect", h2: false, contentType: "application/json", body: "{}" },
  { door: "connect", h2: true, contentType: "application/proto", body: Buffer.alloc(0) },
];

for (const fastUnary of [true, false]) {
  describe(`unknown methods, fast path ${fastUnary ? "on" : "off"}`, () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await startTestApp({}, {}, { fastUnary });
    });
    afterAll(async () => t.close());

    const headers = (contentType: string): HeaderPairs => [["content-type", contentType], ["te", "trailers"], ...Object.entries(defaultAuthHeaders(t.url))];

    for (const { door, h2, contentType, body } of DOORS) {
      const label = `${door} over ${h2 ? "h2" : "HTTP/1.1"} (${contentType})`;
      it(`${label}: an unknown method of a known service is UNIMPLEMENTED naming it`, async () => {
        const res = await rawRequest(t.url, { h2, path: UNKNOWN_METHOD, headers: headers(contentType), body });
        const out = outcomeOf(door, res);
        expect(out.code).toBe(12);
        expect(out.message).toContain(`${GROUPS}/FlyToTheMoon`);
        expect(out.reason).toBe("UNKNOWN_METHOD");
        expect(out.errorInfoFirst).toBe(true);
        if (door === "connect") {
          expect(JSON.parse(out.text).code).toBe("unimplemented");
          expect(res.status).toBe(501);
        } else {
          expect(res.status).toBe(200);
        }
      });

      it(`${label}: an unknown service is UNIMPLEMENTED naming it`, async () => {
        const res = await rawRequest(t.url, { h2, path: UNKNOWN_SERVICE, headers: headers(contentType), body });
        const out = outcomeOf(door, res);
        expect(out.code).toBe(12);
        expect(out.message).toContain("acme.nothing.v1.Nowhere/Get");
        expect(out.reason).toBe("UNKNOWN_SERVICE");
        expect(out.errorInfoFirst).toBe(true);
      });
    }

    it("grpc-js, the reference client, reads UNIMPLEMENTED and the method's name", async () => {
      const Client = grpc.makeGenericClientConstructor({}, "Nowhere");
      const client = new Client(new URL(t.url).host, grpc.credentials.createInsecure());
      try {
        const err = await new Promise<grpc.ServiceError>((resolve) => {
          client.makeUnaryRequest(
            UNKNOWN_METHOD,
            (x: Buffer) => x,
            (x: Buffer) => x,
            Buffer.alloc(0),
            (e: grpc.ServiceError | null) => resolve(e as grpc.ServiceError),
          );
        });
        expect(err.code, err.details).toBe(grpc.status.UNIMPLEMENTED);
        expect(err.details).toContain(`${GROUPS}/FlyToTheMoon`);
      } finally {
        client.close();
      }
    });

    it("a long path that is no method path is UNIMPLEMENTED on gRPC with the path echoed cut short", async () => {
      const path = `/${"x".repeat(8000)}`;
      const res = await rawRequest(t.url, { h2: true, path, headers: headers("application/grpc"), body: envelope(Buffer.alloc(0)) });
      const out = outcomeOf("grpc", res);
      expect(out.code).toBe(12);
      expect(out.reason).toBe("UNKNOWN_METHOD");
      expect(out.message.length).toBeLessThan(400);
    });

    it("REST keeps its NOT_FOUND: a path inside the REST templates, and one outside every door", async () => {
      for (const path of ["/iam/v2beta1/no-such-collection", "/favicon.ico", "/nothing/here"]) {
        for (const h2 of [false, true]) {
          const res = await rawRequest(t.url, { h2, method: "GET", path, headers: Object.entries(defaultAuthHeaders(t.url)) });
          expect(res.status, path).toBe(404);
          const out = outcomeOf("rest", res);
          expect(out.code).toBe(5);
          expect(out.reason).toBe("NOT_FOUND");
          const body = JSON.parse(out.text);
          expect(body.details[0]).toMatchObject({ "@type": "type.googleapis.com/google.rpc.ErrorInfo", domain: DEFAULT_ERROR_DOMAIN });
        }
      }
    });
  });
}
