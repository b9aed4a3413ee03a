/**
 * `trellis auth ...` as a real process: browser login (code + PKCE, the "browser" being an
 * HTTP client that follows the printed URL), the device flow, assuming an identity from a
 * token file, the 0600 token cache, renewal on expiry (exchange again, refresh at the IdP,
 * re-read the identity file), token sources in order and the auth exit code 3.
 *
 * The IdP is test/support/fake-idp.ts. The Trellis side of login (discovery with
 * `trellis_user_idps`, `/sts/exchange`) is built in parallel by the auth module, so a tiny
 * stand-in API below implements that contract plus one Connect RPC that checks the bearer.
 */
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { createLocalJWKSet, decodeJwt, jwtVerify, SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CliRunner, cliRunner } from "../support/cli.js";
import { type FakeIdp, startFakeIdp } from "../support/fake-idp.js";

const IDENTITY = "0123456789012345678901234567890123456789/0123456789abcdef";
const API_KEY = new TextEncoder().encode("stand-in api signing key, tests only");

interface FakeApi {
  readonly url: string;
  /** API token lifetime in seconds for tokens issued from now on. */
  tokenTtl: number;
  readonly exchanges: { aud: string; identity: string | null; sub: string }[];
  /** Every request URL seen: tokens must never be in one. */
  readonly urls: string[];
  close(): Promise<void>;
}

async function startFakeApi(idp: FakeIdp): Promise<FakeApi> {
  const jwks = createLocalJWKSet(idp.jwks);
  const issued = new Set<string>();
  let url = "";
  const api: FakeApi = {
    get url() {
      return url;
    },
    tokenTtl: 3600,
    exchanges: [],
    urls: [],
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  const server = http.createServer(async (req, res) => {
    api.urls.push(req.url ?? "");
    const u = new URL(req.url ?? "/", url);
    const json = (status: number, body: unknown): void => {
      res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
    };
    const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1];
    if (u.pathname === "/.well-known/openid-configuration") {
      return json(200, { issuer: url, trellis_user_idps: [{ issuer: idp.issuer, client_id: idp.clientId }] });
    }
    if (u.pathname === "/sts/exchange") {
      try {
        const { payload } = await jwtVerify(bearer ?? "", jwks, { issuer: idp.issuer });
        const identity = u.searchParams.get("identity");
        if (identity !== null && (identity !== IDENTITY || payload.sub !== "ci-job")) {
          return json(403, { code: 7, message: "the token may not assume this identity" });
        }
        const aud = u.searchParams.get("aud") ?? "";
        api.exchanges.push({ aud, identity, sub: String(payload.sub) });
        const token = await new SignJWT({ sub: identity ?? String(payload.sub), n: api.exchanges.length })
          .setProtectedHeader({ alg: "HS256" })
          .setAudience(aud)
          .setExpirationTime(Math.floor(Date.now() / 1000) + api.tokenTtl)
          .sign(API_KEY);
        issued.add(token);
        return json(200, { token });
      } catch (err) {
        return json(401, { code: 16, message: (err as Error).message });
      }
    }
    if (u.pathname === "/chainguard.platform.iam.v2beta1.GroupsService/ListGroups") {
      for await (const _ of req); // drain the request
      if (!bearer || !issued.has(bearer) || decodeJwt(bearer).aud !== url) {
        return json(401, { code: "unauthenticated", message: "a valid API token is required" });
      }
      // An empty protobuf body is an empty ListGroupsResponse.
      res.writeHead(200, { "content-type": "application/proto" }).end();
      return;
    }
    json(404, {});
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return api;
}

/** The cache file, parsed, and a way to age what it holds (as if time had passed). */
function cache(cli: CliRunner) {
  const file = path.join(cli.configHome, "trellis", "credentials.json");
  return {
    file,
    read: () => JSON.parse(fs.readFileSync(file, "utf8")),
    edit(api: string, change: (login: Record<string, any>) => void) {
      const data = JSON.parse(fs.readFileSync(file, "utf8"));
      change(data.logins[api]);
      fs.writeFileSync(file, JSON.stringify(data));
    },
  };
}

const past = () => Math.floor(Date.now() / 1000) - 10;

describe("trellis auth (user login through the browser)", () => {
  let idp: FakeIdp;
  let api: FakeApi;
  let cli: CliRunner;

  beforeAll(async () => {
    idp = await startFakeIdp();
    api = await startFakeApi(idp);
    cli = cliRunner(api.url);
  });
  afterAll(async () => {
    cli.cleanup();
    await api.close();
    await idp.close();
  });

  it("logs in with code + PKCE through the loopback redirect, caches 0600, and the token works", async () => {
    const login = cli.start(["auth", "login", "--no-browser"]);
    const [, authUrl] = await login.waitForStderr(/^ {2}(http:\/\/\S+)$/m);
    const authorize = await fetch(authUrl!, { redirect: "manual" });
    expect(authorize.status).toBe(302);
    const callback = authorize.headers.get("location")!;
    expect(callback).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback\?code=/);
    const page = await fetch(callback);
    expect(await page.text()).toContain("Logged in");
    const done = await login.done;
    expect(done.code, done.stderr).toBe(0);
    expect(done.stdout).toBe("");
    expect(done.stderr).toContain(`Logged in to ${api.url}`);
    expect(idp.stats.codes).toBe(1);
    expect(api.exchanges).toEqual([{ aud: api.url, identity: null, sub: "alice" }]);

    const c = cache(cli);
    expect(fs.statSync(c.file).mode & 0o777).toBe(0o600);
    expect(fs.statSync(path.dirname(c.file)).mode & 0o777).toBe(0o700);
    const cached = c.read().logins[api.url];
    expect(cached.source).toMatchObject({ kind: "user", issuer: idp.issuer, clientId: idp.clientId });
    expect(cached.source.refreshToken).toBeTruthy();

    const [token, list, status] = await Promise.all([
      cli.run(["auth", "token"]),
      cli.run(["iam", "groups", "list", "-o", "json"]),
      cli.run(["auth", "status", "-o", "json"]),
    ]);
    expect(token.code).toBe(0);
    expect(token.stdout).toBe(`${cached.token.token}\n`);
    expect(list.code, list.stderr).toBe(0);
    expect(JSON.parse(list.stdout)).toEqual([]);
    expect(JSON.parse(status.stdout)).toMatchObject({ api: api.url, loggedIn: true, tokenSource: "login cache", tokenValid: true, as: `user at ${idp.issuer}` });
    expect(api.exchanges).toHaveLength(1); // all three used the cached token
  }, 60_000);

  it("takes --token over TRELLIS_TOKEN over the cache; a rejected token is exit 3", async () => {
    const good = cache(cli).read().logins[api.url].token.token;
    const [envWins, flagWins, statusEnv] = await Promise.all([
      cli.run(["iam", "groups", "list"], { TRELLIS_TOKEN: "not-a-token" }),
      cli.run(["--token", good, "iam", "groups", "list"], { TRELLIS_TOKEN: "not-a-token" }),
      cli.run(["auth", "token"], { TRELLIS_TOKEN: "from-env" }),
    ]);
    expect(envWins.code).toBe(3);
    expect(envWins.stderr).toContain("code: UNAUTHENTICATED");
    expect(envWins.stderr).toContain("trellis auth login");
    expect(flagWins.code, flagWins.stderr).toBe(0);
    expect(statusEnv.stdout).toBe("from-env\n");
  }, 30_000);

  it("renews an expired token: exchange again while the id_token is valid, else refresh at the IdP; a dead refresh is exit 3", async () => {
    const c = cache(cli);
    const before = api.exchanges.length;
    c.edit(api.url, (l) => {
      l.token.exp = past();
    });
    const again = await cli.run(["auth", "token"]);
    expect(again.code, again.stderr).toBe(0);
    expect(api.exchanges).toHaveLength(before + 1);
    expect(idp.stats.refreshes).toBe(0);
    expect(again.stdout.trim()).toBe(c.read().logins[api.url].token.token);

    c.edit(api.url, (l) => {
      l.token.exp = past();
      l.source.idToken.exp = past();
    });
    const refreshed = await cli.run(["iam", "groups", "list"]);
    expect(refreshed.code, refreshed.stderr).toBe(0);
    expect(idp.stats.refreshes).toBe(1);
    expect(api.exchanges).toHaveLength(before + 2);
    expect(c.read().logins[api.url].source.idToken.exp).toBeGreaterThan(past() + 60);

    idp.revokeRefreshTokens();
    c.edit(api.url, (l) => {
      l.token.exp = past();
      l.source.idToken.exp = past();
    });
    const dead = await cli.run(["auth", "token"]);
    expect(dead.code).toBe(3);
    expect(dead.stdout).toBe("");
    expect(dead.stderr).toContain("refresh token revoked");

    c.edit(api.url, (l) => {
      delete l.source.refreshToken;
    });
    const [noRefresh, status] = await Promise.all([cli.run(["iam", "groups", "list"]), cli.run(["auth", "status", "-o", "table"])]);
    expect(noRefresh.code).toBe(3);
    expect(noRefresh.stderr).toContain("run `trellis auth login` again");
    expect(status.code).toBe(3);
    expect(status.stdout).toContain("tokenValid: false");
  }, 60_000);

  it("tokens for another audience are exchanged once and cached; logout forgets everything", async () => {
    // Log in again (the previous test broke the login on purpose).
    const login = cli.start(["auth", "login", "--no-browser"]);
    const [, authUrl] = await login.waitForStderr(/^ {2}(http:\/\/\S+)$/m);
    await fetch((await fetch(authUrl!, { redirect: "manual" })).headers.get("location")!);
    expect((await login.done).code).toBe(0);

    const before = api.exchanges.length;
    const first = await cli.run(["auth", "token", "--audience", "registry.test"]);
    expect(first.code, first.stderr).toBe(0);
    expect(decodeJwt(first.stdout.trim()).aud).toBe("registry.test");
    const second = await cli.run(["auth", "token", "--audience", "registry.test"]);
    expect(second.stdout).toBe(first.stdout);
    expect(api.exchanges.slice(before)).toEqual([{ aud: "registry.test", identity: null, sub: "alice" }]);

    const out = await cli.run(["auth", "logout"]);
    expect(out.stderr).toBe(`Logged out of ${api.url}\n`);
    const [token, status] = await Promise.all([cli.run(["auth", "token"]), cli.run(["auth", "status"])]);
    expect(token.code).toBe(3);
    expect(token.stderr).toContain("not logged in");
    expect(status.code).toBe(3);
    // No token ever travelled in a URL.
    expect(api.urls.filter((u) => u.includes("eyJ"))).toEqual([]);
  }, 60_000);
});

describe("trellis auth login --identity (CI) and --device", () => {
  let idp: FakeIdp;
  let api: FakeApi;
  let cli: CliRunner;

  beforeAll(async () => {
    idp = await startFakeIdp({ device: true });
    api = await startFakeApi(idp);
    cli = cliRunner(api.url);
  });
  afterAll(async () => {
    cli.cleanup();
    await api.close();
    await idp.close();
  });

  it("assumes an identity with a token file, re-reads the file on renewal, and a refused identity is exit 3", async () => {
    const file = path.join(cli.configHome, "ci-token");
    fs.writeFileSync(file, `${await idp.sign({ sub: "ci-job", aud: "trellis" })}\n`);
    const login = await cli.run(["auth", "login", "--identity", IDENTITY, "--identity-token", file]);
    expect(login.code, login.stderr).toBe(0);
    expect(api.exchanges).toEqual([{ aud: api.url, identity: IDENTITY, sub: "ci-job" }]);
    const token = await cli.run(["auth", "token"]);
    expect(decodeJwt(token.stdout.trim()).sub).toBe(IDENTITY);

    // CI rotates the file; an expired API token is renewed from the new one.
    fs.writeFileSync(file, await idp.sign({ sub: "ci-job", aud: "trellis", rotated: true }));
    cache(cli).edit(api.url, (l) => {
      l.token.exp = past();
    });
    const renewed = await cli.run(["iam", "groups", "list"]);
    expect(renewed.code, renewed.stderr).toBe(0);
    expect(api.exchanges).toHaveLength(2);

    const [refused, missingFile, halfFlags] = await Promise.all([
      cli.run(["auth", "login", "--identity", `${IDENTITY.slice(0, -1)}0`, "--identity-token", file]),
      cli.run(["auth", "login", "--identity", IDENTITY, "--identity-token", path.join(cli.configHome, "nope")]),
      cli.run(["auth", "login", "--identity", IDENTITY]),
    ]);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain("the token may not assume this identity");
    expect(missingFile.code).toBe(2);
    expect(missingFile.stderr).toContain("cannot read --identity-token");
    expect(halfFlags.code).toBe(2);
  }, 60_000);

  it("logs in with the device flow when the IdP offers it", async () => {
    const r = await cli.run(["auth", "login", "--device"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(`visit ${idp.issuer}/activate and enter the code ABCD-EFGH`);
    expect(idp.stats.devices).toBe(1);
    expect(cache(cli).read().logins[api.url].source.kind).toBe("user");
  }, 30_000);
});
