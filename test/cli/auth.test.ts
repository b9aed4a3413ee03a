/**
 * `trellis auth ...` as a real process against a real server whose trust config names a small
 * IdP started in the test (test/support/fake-idp.ts): browser login (code + PKCE, the
 * "browser" being an HTTP client that follows the printed URL) and the server's real
 * `/sts/exchange`, the device flow, a CI job assuming an identity from a token file, the 0600
 * token cache, renewal on expiry (exchange again, refresh at the IdP, re-read the identity
 * file), token sources in order, `--audience`, and the auth exit code 3.
 */
import fs from "node:fs";
import path from "node:path";
import { decodeJwt } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "../support/app.js";
import { type CliRunner, cliRunner } from "../support/cli.js";
import { type FakeIdp, startFakeIdp } from "../support/fake-idp.js";

const REGISTRY = "registry.test";

let idp: FakeIdp;
let t: TestApp;

beforeAll(async () => {
  idp = await startFakeIdp({ device: true });
  t = await startTestApp({
    trust: { registryAudience: REGISTRY, identityProviders: [{ issuer: idp.issuer, users: true, clientId: idp.clientId }] },
  });
});
afterAll(async () => {
  await t.close();
  await idp.close();
});

/** The cache file, parsed, and a way to age what it holds (as if time had passed). */
function cache(cli: CliRunner) {
  const file = path.join(cli.configHome, "trellis", "credentials.json");
  return {
    file,
    login: () => JSON.parse(fs.readFileSync(file, "utf8")).logins[t.url],
    // biome-ignore lint/suspicious/noExplicitAny: the test edits the stored login's JSON freely
    edit(change: (login: Record<string, any>) => void) {
      const data = JSON.parse(fs.readFileSync(file, "utf8"));
      change(data.logins[t.url]);
      fs.writeFileSync(file, JSON.stringify(data));
    },
  };
}

const past = () => Math.floor(Date.now() / 1000) - 10;

/** `auth login` through the loopback redirect, with an HTTP client as the browser. */
async function browserLogin(cli: CliRunner, extra: string[] = []) {
  const login = cli.start(["auth", "login", "--no-browser", ...extra]);
  const [, authUrl] = await login.waitForStderr(/^ {2}(http:\/\/\S+)$/m);
  const authorize = await fetch(authUrl!, { redirect: "manual" });
  expect(authorize.status).toBe(302);
  const callback = authorize.headers.get("location")!;
  expect(callback).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback\?code=/);
  expect(await (await fetch(callback)).text()).toContain("Logged in");
  return login.done;
}

describe("trellis auth login (a user, through the browser)", () => {
  let cli: CliRunner;
  beforeAll(() => {
    cli = cliRunner(t.url);
  });
  afterAll(() => cli.cleanup());

  it("logs in with code + PKCE, exchanges at the server, caches 0600, and the user can found an organization", async () => {
    const done = await browserLogin(cli);
    expect(done.code, done.stderr).toBe(0);
    expect(done.stdout).toBe("");
    expect(done.stderr).toContain(`Logged in to ${t.url}`);
    expect(idp.stats.codes).toBe(1);

    const c = cache(cli);
    expect(fs.statSync(c.file).mode & 0o777).toBe(0o600);
    expect(fs.statSync(path.dirname(c.file)).mode & 0o777).toBe(0o700);
    const cached = c.login();
    expect(cached.source).toMatchObject({ kind: "user", issuer: idp.issuer, clientId: idp.clientId });
    expect(cached.source.refreshToken).toBeTruthy();
    const claims = decodeJwt(cached.token.token);
    expect(claims).toMatchObject({ iss: t.url, aud: t.url });
    expect(cached.token.exp).toBe(claims.exp);

    const [token, created, status] = await Promise.all([
      cli.run(["auth", "token"]),
      cli.run(["iam", "groups", "create", "alices-org", "-o", "json"]),
      cli.run(["auth", "status", "-o", "json"]),
    ]);
    expect(token.code).toBe(0);
    expect(token.stdout).toBe(`${cached.token.token}\n`);
    expect(created.code, created.stderr).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ api: t.url, loggedIn: true, tokenSource: "login cache", tokenValid: true, as: `user at ${idp.issuer}` });
    // The user sees their own organization and nothing else.
    const list = await cli.run(["iam", "groups", "list", "-o", "json"]);
    expect(JSON.parse(list.stdout).map((g: { name: string }) => g.name)).toEqual(["alices-org"]);
    expect(c.login().token.token).toBe(cached.token.token); // every call used the cached token
  }, 60_000);

  it("takes --token over TRELLIS_TOKEN over the cache; a rejected token is exit 3", async () => {
    const good = cache(cli).login().token.token;
    const [envWins, flagWins, printed] = await Promise.all([
      cli.run(["iam", "groups", "list"], { TRELLIS_TOKEN: "not-a-token" }),
      cli.run(["--token", good, "iam", "groups", "list"], { TRELLIS_TOKEN: "not-a-token" }),
      cli.run(["auth", "token"], { TRELLIS_TOKEN: "from-env" }),
    ]);
    expect(envWins.code).toBe(3);
    expect(envWins.stderr).toContain("code: UNAUTHENTICATED");
    expect(envWins.stderr).toMatch(/reason: TOKEN_\w+/);
    expect(envWins.stderr).toContain("trellis auth login");
    expect(flagWins.code, flagWins.stderr).toBe(0);
    expect(printed.stdout).toBe("from-env\n");
  }, 30_000);

  it("renews an expired token: exchange again while the id_token is valid, else refresh at the IdP; a dead refresh is exit 3", async () => {
    const c = cache(cli);
    const first = c.login().token.token;
    c.edit((l) => {
      l.token.exp = past();
    });
    const again = await cli.run(["auth", "token"]);
    expect(again.code, again.stderr).toBe(0);
    const second = again.stdout.trim();
    expect(second).not.toBe(first);
    expect(second).toBe(c.login().token.token);
    expect(idp.stats.refreshes).toBe(0);

    c.edit((l) => {
      l.token.exp = past();
      l.source.idToken.exp = past();
    });
    const refreshed = await cli.run(["iam", "groups", "list"]);
    expect(refreshed.code, refreshed.stderr).toBe(0);
    expect(idp.stats.refreshes).toBe(1);
    expect(c.login().token.token).not.toBe(second);
    expect(c.login().source.idToken.exp).toBeGreaterThan(past() + 60);

    idp.revokeRefreshTokens();
    c.edit((l) => {
      l.token.exp = past();
      l.source.idToken.exp = past();
    });
    const dead = await cli.run(["auth", "token"]);
    expect(dead.code).toBe(3);
    expect(dead.stdout).toBe("");
    expect(dead.stderr).toContain("refresh token revoked");

    c.edit((l) => {
      delete l.source.refreshToken;
    });
    const [noRefresh, status] = await Promise.all([cli.run(["iam", "groups", "list"]), cli.run(["auth", "status", "-o", "table"])]);
    expect(noRefresh.code).toBe(3);
    expect(noRefresh.stderr).toContain("run `trellis auth login` again");
    expect(status.code).toBe(3);
    expect(status.stdout).toContain("tokenValid: false");
  }, 60_000);

  it("exchanges a registry-audience token once and caches it; logout forgets everything", async () => {
    expect((await browserLogin(cli)).code).toBe(0); // the previous test broke the login on purpose

    const first = await cli.run(["auth", "token", "--audience", REGISTRY]);
    expect(first.code, first.stderr).toBe(0);
    expect(decodeJwt(first.stdout.trim()).aud).toBe(REGISTRY);
    const [second, refused] = await Promise.all([
      cli.run(["auth", "token", "--audience", REGISTRY]),
      cli.run(["auth", "token", "--audience", "elsewhere.example"]),
    ]);
    expect(second.stdout).toBe(first.stdout);
    expect(refused.code).toBe(1); // INVALID_ARGUMENT on aud: a bad request, not a bad login
    expect(refused.stderr).toContain("aud");

    const out = await cli.run(["auth", "logout"]);
    expect(out.stderr).toBe(`Logged out of ${t.url}\n`);
    const [token, status] = await Promise.all([cli.run(["auth", "token"]), cli.run(["auth", "status"])]);
    expect(token.code).toBe(3);
    expect(token.stderr).toContain("not logged in");
    expect(status.code).toBe(3);
  }, 60_000);

  it("logs in with the device flow when the IdP offers it", async () => {
    const device = cliRunner(t.url);
    try {
      const r = await device.run(["auth", "login", "--device"]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toContain(`visit ${idp.issuer}/activate and enter the code ABCD-EFGH`);
      expect(idp.stats.devices).toBe(1);
      expect(cache(device).login().source.kind).toBe("user");
    } finally {
      device.cleanup();
    }
  }, 30_000);
});

describe("trellis auth login --identity (a CI job)", () => {
  it("assumes an identity with a token file, acts with its role, re-reads the file on renewal; a refused identity is exit 3", async () => {
    // The operator prepares a group, an identity the CI token may assume, and a binding.
    const operator = cliRunner(t.url, { TRELLIS_TOKEN: t.token });
    const ci = cliRunner(t.url);
    try {
      const org = JSON.parse((await operator.run(["iam", "groups", "create", "ci-org", "-o", "json"])).stdout);
      const identity = JSON.parse(
        (await operator.run(["iam", "identities", "create", "deployer", "--group", org.uid, "--issuer", idp.issuer, "--subject", "ci-job", "-o", "json"]))
          .stdout,
      );
      expect((await operator.run(["iam", "role-bindings", "create", "--group", org.uid, "--identity", identity.uid, "--role", "viewer"])).code).toBe(0);

      // The CI platform's token names our API as its audience.
      const file = path.join(ci.configHome, "ci-token");
      fs.writeFileSync(file, `${await idp.sign({ sub: "ci-job", aud: t.url })}\n`);
      const login = await ci.run(["auth", "login", "--identity", identity.uid, "--identity-token", file]);
      expect(login.code, login.stderr).toBe(0);
      expect(login.stderr).toContain(`as identity ${identity.uid}`);
      const [token, groups] = await Promise.all([ci.run(["auth", "token"]), ci.run(["iam", "groups", "list", "-o", "json"])]);
      expect(decodeJwt(token.stdout.trim()).sub).toBe(identity.uid);
      expect(JSON.parse(groups.stdout).map((g: { uid: string }) => g.uid)).toEqual([org.uid]);

      // CI rotates the file; an expired API token is renewed from the new one.
      fs.writeFileSync(file, await idp.sign({ sub: "ci-job", aud: t.url, rotated: true }));
      cache(ci).edit((l) => {
        l.token.exp = past();
      });
      const renewed = await ci.run(["auth", "token"]);
      expect(renewed.code, renewed.stderr).toBe(0);
      expect(renewed.stdout).not.toBe(token.stdout);

      const other = `${org.uid}/0123456789abcdef`;
      const [refused, missingFile, halfFlags] = await Promise.all([
        ci.run(["auth", "login", "--identity", other, "--identity-token", file]),
        ci.run(["auth", "login", "--identity", identity.uid, "--identity-token", path.join(ci.configHome, "nope")]),
        ci.run(["auth", "login", "--identity", identity.uid]),
      ]);
      expect(refused.code).toBe(3);
      expect(refused.stderr).toContain("HTTP 403");
      expect(refused.stderr).toContain("reason: IDENTITY_NOT_ASSUMABLE");
      expect(missingFile.code).toBe(2);
      expect(missingFile.stderr).toContain("cannot read --identity-token");
      expect(halfFlags.code).toBe(2);
    } finally {
      operator.cleanup();
      ci.cleanup();
    }
  }, 60_000);
});

describe("trellis auth login --invite (joining a group)", () => {
  it("logs in, asks the IdP for the email scope, and joins the invite's group with exactly its role; a used single-use code is refused", async () => {
    const operator = cliRunner(t.url, { TRELLIS_TOKEN: t.token });
    const carol = cliRunner(t.url);
    const dan = cliRunner(t.url);
    try {
      const org = JSON.parse((await operator.run(["iam", "groups", "create", "invited-org", "-o", "json"])).stdout);
      const created = await operator.run([
        "iam",
        "invites",
        "create",
        "--group",
        "invited-org",
        "--role",
        "viewer",
        "--single-use",
        "--ttl",
        "1h",
        "-o",
        "json",
      ]);
      expect(created.code, created.stderr).toBe(0);
      const { code } = JSON.parse(created.stdout);
      // Bound to the user's verified email: works only because the login asked for `email`.
      const forMail = JSON.parse(
        (await operator.run(["iam", "invites", "create", "--group", "invited-org", "--role", "viewer", "--email", "carol@example.test", "-o", "json"])).stdout,
      ).code;

      idp.subject = "carol";
      const joined = await browserLogin(carol, ["--invite", forMail, "-o", "json"]);
      expect(joined.code, joined.stderr).toBe(0);
      expect(idp.stats.lastScope.split(" ")).toContain("email");
      expect(joined.stderr).toContain("Joined invited-org as viewer");
      const binding = JSON.parse(joined.stdout);
      expect(binding).toMatchObject({ group: { uid: org.uid }, role: { name: "viewer" } });
      const groups = await carol.run(["iam", "groups", "list", "-o", "json"]);
      expect(JSON.parse(groups.stdout).map((g: { uid: string }) => g.uid)).toEqual([org.uid]);
      // Exactly the invite's role: a viewer cannot create under the group.
      const write = await carol.run(["iam", "groups", "create", "sneaky", "--parent", org.uid]);
      expect(write.code).toBe(3);

      idp.subject = "dan";
      const first = await browserLogin(dan, ["--invite", code]);
      expect(first.code, first.stderr).toBe(0);
      const second = await browserLogin(carol, ["--invite", code]);
      expect(second.code).toBe(1);
      expect(second.stderr).toContain("code: NOT_FOUND");
      // Dan's email is not carol's.
      const mismatch = await browserLogin(dan, ["--invite", forMail]);
      expect(mismatch.code).toBe(1);
      expect(mismatch.stderr).toContain("INVITE_EMAIL_MISMATCH");

      const [identity, bad] = await Promise.all([
        operator.run(["auth", "login", "--identity", org.uid, "--identity-token", "/dev/null", "--invite", code]),
        operator.run(["auth", "login", "--invite", "not a code"]),
      ]);
      expect(identity.code).toBe(2);
      expect(bad.code).toBe(2);
    } finally {
      idp.subject = "alice";
      operator.cleanup();
      carol.cleanup();
      dan.cleanup();
    }
  }, 90_000);
});
