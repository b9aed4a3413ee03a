/**
 * Two `Authorization` headers are UNAUTHENTICATED (HTTP 401) on every door, whatever the
 * values, the token exchange included. Node keeps only the first of a repeated Authorization
 * header in `req.headers` (HTTP/1.1 drops the rest; h2 keeps the first entry), so before the
 * fix the second was silently ignored and the call ran as the first: a proxy or client that
 * adds its own header could not tell which credential the server used.
 *
 * HTTP/1.1 sends two header lines; h2 goes through a proxy that appends a second
 * `authorization` entry to each request's header block (Node's http2 client refuses to send
 * one), so every h2 client reads the answers as usual. Both servers: the fast unary path on,
 * and off (connect-node serves Connect, gRPC and gRPC-web).
 */
import { create, toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ExchangeRequestSchema } from "../../gen/chainguard/platform/oidc/oidc_pb.js";
import { builtInRoleUid } from "../../src/store/builtin-roles.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { snapshotDb } from "../support/db.js";
import { type Door, type HeaderPairs, type Outcome, outcomeOf, rawRequest } from "../support/doors.js";
import { type HeaderInjector, startHeaderInjector } from "../support/h2-header-injector.js";
import { startTestIdp, type TestIdp } from "../support/idp.js";
import { envelope } from "../support/raw-rpc.js";
import { rest } from "../support/rest.js";

const LIST = "/chainguard.platform.iam.v2beta1.GroupsService/ListGroups";
const EXCHANGE = "/chainguard.platform.oidc.SecurityTokenService/Exchange";
const CLIENT_ID = "trellis-cli";
const SUBJECT = "repo:acme/app:ref:refs/heads/main";

let fast: TestApp;
let slow: TestApp;
let idp: TestIdp;
let identity: string;
/** Per server and second value: an h2 proxy that adds `authorization: <value>`. */
const injectors = new Map<string, HeaderInjector>();

beforeAll(async () => {
  idp = await startTestIdp();
  const trust = { identityProviders: [{ issuer: idp.issuer, users: true, clientId: CLIENT_ID }] };
  fast = await startTestApp({ trust });
  slow = await startTestApp({ trust }, {}, { fastUnary: false });
  const org = (await rest(fast.url, "POST", "/iam/v2beta1/groups", { name: "acme" })).body.uid;
  identity = (await rest(fast.url, "POST", `/iam/v2beta1/identities/${org}`, { name: "deployer", claimMatch: { issuer: idp.issuer, subject: SUBJECT } })).body
    .uid;
  await rest(fast.url, "POST", `/iam/v2beta1/roleBindings/${org}`, { identityUid: identity, roleUid: builtInRoleUid("viewer") });
});
afterAll(async () => {
  for (const p of injectors.values()) await p.close();
  await fast?.close();
  await slow?.close();
  await idp?.close();
});

/** The h2 base URL that makes every request carry a second `authorization: <second>`. */
async function viaInjector(t: TestApp, second: string): Promise<string> {
  const key = `${t.url} ${second}`;
  let p = injectors.get(key);
  if (!p) {
    p = await startHeaderInjector(t.url, "authorization", second);
    injectors.set(key, p);
  }
  return p.url;
}

interface Case {
  readonly name: string;
  readonly door: Door;
  readonly h2: boolean;
  readonly server: () => TestApp;
  /** The request with these Authorization values (one, or two). */
  send(t: TestApp, url: string, auth: readonly string[]): Promise<Outcome>;
}

function authPairs(values: readonly string[]): HeaderPairs {
  return values.map((v) => ["authorization", v] as const);
}

const label = (t: () => TestApp) => (t === fastServer ? "fast path" : "connect-node");
const fastServer = () => fast;
const slowServer = () => slow;

function apiCases(server: () => TestApp): Case[] {
  const connect = (h2: boolean): Case => ({
    name: `connect json ${h2 ? "h2" : "http/1.1"} (${label(server)})`,
    door: "connect",
    h2,
    server,
    send: async (_t, url, auth) =>
      outcomeOf("connect", await rawRequest(url, { h2, path: LIST, headers: [...authPairs(auth), ["content-type", "application/json"]], body: "{}" })),
  });
  const grpc: Case = {
    name: `grpc h2 (${label(server)})`,
    door: "grpc",
    h2: true,
    server,
    send: async (_t, url, auth) =>
      outcomeOf(
        "grpc",
        await rawRequest(url, {
          h2: true,
          path: LIST,
          headers: [...authPairs(auth), ["content-type", "application/grpc"], ["te", "trailers"]],
          body: envelope(Buffer.alloc(0)),
        }),
      ),
  };
  const grpcWeb = (h2: boolean): Case => ({
    name: `grpc-web ${h2 ? "h2" : "http/1.1"} (${label(server)})`,
    door: "grpc-web",
    h2,
    server,
    send: async (_t, url, auth) =>
      outcomeOf(
        "grpc-web",
        await rawRequest(url, {
          h2,
          path: LIST,
          headers: [...authPairs(auth), ["content-type", "application/grpc-web+proto"]],
          body: envelope(Buffer.alloc(0)),
        }),
      ),
  });
  return [connect(false), connect(true), grpc, grpcWeb(false), grpcWeb(true)];
}

const restCase = (h2: boolean): Case => ({
  name: `rest GET ${h2 ? "h2" : "http/1.1"}`,
  door: "rest",
  h2,
  server: fastServer,
  send: async (_t, url, auth) => outcomeOf("rest", await rawRequest(url, { h2, method: "GET", path: "/iam/v2beta1/groups", headers: authPairs(auth) })),
});

const API_CASES: Case[] = [...apiCases(fastServer), ...apiCases(slowServer), restCase(false), restCase(true)];

/** Runs `c` with `auth`, over the injector (which adds `extra`) on h2, as two header lines on HTTP/1.1. */
async function run(c: Case, first: string, extra: string | undefined): Promise<Outcome> {
  const t = c.server();
  if (extra === undefined) return c.send(t, t.url, [first]);
  if (c.h2) return c.send(t, await viaInjector(t, extra), [first]);
  return c.send(t, t.url, [first, extra]);
}

function expectUnauthenticated(c: Case, out: Outcome): void {
  expect(out.code, `${c.name}: ${out.message}`).toBe(16);
  expect(out.reason).toBe("TOKEN_INVALID");
  if (c.door === "connect" || c.door === "rest") expect(out.status).toBe(401);
}

describe("two Authorization headers on the API", () => {
  it.each(API_CASES)("one valid token is served on $name (the control)", async (c) => {
    const out = await run(c, `Bearer ${c.server().token}`, undefined);
    expect(out.code, out.message).toBe(0);
  });

  it.each(API_CASES)("a valid token followed by another value is UNAUTHENTICATED on $name", async (c) => {
    const token = c.server().token;
    for (const second of ["Bearer not-a-token", `Bearer ${token}`]) {
      expectUnauthenticated(c, await run(c, `Bearer ${token}`, second));
    }
  });
});

describe("two Authorization headers on the token exchange", () => {
  const q = (t: TestApp) => `aud=${encodeURIComponent(t.app.issuer.audience)}&identity=${identity}`;
  const exchangeCases: Case[] = [
    {
      name: "rest GET /sts/exchange http/1.1",
      door: "rest",
      h2: false,
      server: fastServer,
      send: async (_t, url, auth) =>
        outcomeOf("rest", await rawRequest(url, { h2: false, method: "GET", path: `/sts/exchange?${q(fast)}`, headers: authPairs(auth) })),
    },
    {
      name: "rest GET /sts/exchange h2",
      door: "rest",
      h2: true,
      server: fastServer,
      send: async (_t, url, auth) =>
        outcomeOf("rest", await rawRequest(url, { h2: true, method: "GET", path: `/sts/exchange?${q(fast)}`, headers: authPairs(auth) })),
    },
    {
      name: "rest POST /sts/exchange (form) http/1.1",
      door: "rest",
      h2: false,
      server: fastServer,
      send: async (_t, url, auth) =>
        outcomeOf(
          "rest",
          await rawRequest(url, {
            h2: false,
            path: "/sts/exchange",
            headers: [...authPairs(auth), ["content-type", "application/x-www-form-urlencoded"]],
            body: q(fast),
          }),
        ),
    },
    ...[fastServer, slowServer].flatMap((server): Case[] => [
      {
        name: `connect Exchange http/1.1 (${label(server)})`,
        door: "connect",
        h2: false,
        server,
        send: async (_t, url, auth) =>
          outcomeOf(
            "connect",
            await rawRequest(url, {
              h2: false,
              path: EXCHANGE,
              headers: [...authPairs(auth), ["content-type", "application/json"]],
              body: JSON.stringify({ aud: [server().app.issuer.audience], identity }),
            }),
          ),
      },
      {
        name: `grpc Exchange h2 (${label(server)})`,
        door: "grpc",
        h2: true,
        server,
        send: async (_t, url, auth) =>
          outcomeOf(
            "grpc",
            await rawRequest(url, {
              h2: true,
              path: EXCHANGE,
              headers: [...authPairs(auth), ["content-type", "application/grpc"], ["te", "trailers"]],
              body: envelope(Buffer.from(toBinary(ExchangeRequestSchema, create(ExchangeRequestSchema, { aud: [server().app.issuer.audience], identity })))),
            }),
          ),
      },
      {
        name: `grpc-web Exchange h2 (${label(server)})`,
        door: "grpc-web",
        h2: true,
        server,
        send: async (_t, url, auth) =>
          outcomeOf(
            "grpc-web",
            await rawRequest(url, {
              h2: true,
              path: EXCHANGE,
              headers: [...authPairs(auth), ["content-type", "application/grpc-web+json"]],
              body: envelope(Buffer.from(JSON.stringify({ aud: [server().app.issuer.audience], identity }))),
            }),
          ),
      },
    ]),
  ];

  it.each(exchangeCases)("is UNAUTHENTICATED on $name, and one header alone exchanges", async (c) => {
    const t = c.server();
    const idToken = await idp.sign({ sub: SUBJECT, aud: t.app.issuer.issuer });
    // The identity was made on `fast`; on `slow` (its own database) the control is PERMISSION_DENIED.
    const control = await run(c, `Bearer ${idToken}`, undefined);
    expect(control.code, control.message).toBe(t === fast ? 0 : 7);
    const before = await snapshotDb(t);
    for (const second of ["Bearer not-a-token", `Bearer ${idToken}`]) {
      expectUnauthenticated(c, await run(c, `Bearer ${idToken}`, second));
    }
    expect(await snapshotDb(t)).toBe(before);
  });
});
