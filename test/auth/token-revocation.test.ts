/**
 * Revoking API tokens (docs/auth.md "Revocation"): TokensService.RevokeTokens on every door,
 * and `trellis tokens revoke` as a subprocess. A revoked token fails on the very next call on
 * every door, also when it sits in the verified-token cache, and also when the revocation was
 * written by another process on the same database file. Who may revoke what is checked with
 * a caller holding one narrow right, and every refusal leaves the database unchanged.
 */
import type { DescMessage, DescMethodUnary, MessageInitShape } from "@bufbuild/protobuf";
import { decodeJwt } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Capability } from "../../gen/chainguard/capabilities/capabilities_pb.js";
import { GroupsService } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { TokensService } from "../../gen/trellis/iam/v1/tokens_pb.js";
import { revokeLocally } from "../../src/auth/key-admin.js";
import { CAP_CLAIM } from "../../src/auth/token-limits.js";
import { builtInRoleUid } from "../../src/store/builtin-roles.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { createUserIdentity, identityToken, operatorToken } from "../support/auth.js";
import { type CallOutcome, callDoors } from "../support/call-method.js";
import { cliRunner } from "../support/cli.js";
import { queryDb, snapshotDb, withServerStore } from "../support/db.js";
import { rest } from "../support/rest.js";
import { storeArgs, storeOfTestApp } from "../support/store-target.js";
import { closeGrpcClients } from "../support/transports.js";

const UNAUTHENTICATED = 16;
const PERMISSION_DENIED = 7;
const INVALID_ARGUMENT = 3;

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  closeGrpcClients();
  await t.close();
});

const listGroups = GroupsService.method.listGroups;
const revokeTokens = TokensService.method.revokeTokens;

async function op(method: string, path: string, body?: unknown) {
  const r = await rest(t.url, method, path, body);
  if (r.status !== 200) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

let seq = 0;
async function newUser(tag: string): Promise<string> {
  return createUserIdentity(t.dataDir, `${tag}-${++seq}`);
}

/** Every door answers `token` with a list (true) or the refusal it gives. */
async function onEveryDoor(token: string): Promise<(true | CallOutcome)[]> {
  return Promise.all(
    callDoors.map(async (d) => {
      const out = await d.call(t.url, token, listGroups, {});
      return out.ok ? true : out;
    }),
  );
}

function expectRevokedEverywhere(outcomes: readonly (true | CallOutcome)[]) {
  for (const o of outcomes) expect(o).toMatchObject({ ok: false, code: UNAUTHENTICATED, reason: "TOKEN_REVOKED" });
}

/** One call over the first door (gRPC); the per-door behaviour is covered by the loops. */
function call<M extends DescMessage>(token: string, method: DescMethodUnary<M>, request: MessageInitShape<M>) {
  return (callDoors[0] as (typeof callDoors)[number]).call(t.url, token, method, request);
}

/** Refused with `code` and `reason`, and nothing in the database changed. */
async function expectRefused(run: () => Promise<CallOutcome>, code: number, reason?: string) {
  const before = await snapshotDb(t);
  const out = await run();
  expect(out, JSON.stringify(out)).toMatchObject({ ok: false, code, ...(reason ? { reason } : {}) });
  expect(await snapshotDb(t)).toBe(before);
}

describe("revoking one token by its jti", () => {
  for (const door of callDoors) {
    it(`over ${door.name}: the token fails at once on every door, cached or not; the identity's other tokens keep working`, async () => {
      const user = await newUser(`jti-${door.name.replace(/[^a-z]/g, "")}`);
      const victim = await identityToken(t.app, user);
      const other = await identityToken(t.app, user);
      // Both work, and the victim is now in the verified-token cache.
      expect(await onEveryDoor(victim)).toEqual(callDoors.map(() => true));
      const jti = decodeJwt(victim).jti as string;
      // The identity revokes its own token, with that very token.
      expect(await door.call(t.url, victim, revokeTokens, { identity: user, jti })).toMatchObject({ ok: true });
      expectRevokedEverywhere(await onEveryDoor(victim));
      expect(await onEveryDoor(other)).toEqual(callDoors.map(() => true));
    });
  }

  it("a jti names a token only together with its subject: another identity's same jti revokes nothing", async () => {
    const alice = await newUser("alice");
    const bob = await newUser("bob");
    const aliceToken = await identityToken(t.app, alice);
    const bobToken = await identityToken(t.app, bob);
    // Bob revokes "his" token with Alice's jti: recorded under Bob, Alice unaffected.
    expect(await call(bobToken, revokeTokens, { identity: bob, jti: decodeJwt(aliceToken).jti as string })).toMatchObject({ ok: true });
    expect(await onEveryDoor(aliceToken)).toEqual(callDoors.map(() => true));
    expect(await onEveryDoor(bobToken)).toEqual(callDoors.map(() => true));
  });
});

describe("revoking every token of an identity", () => {
  for (const door of callDoors) {
    it(`over ${door.name}: tokens issued up to now fail on every door, its refresh tokens are gone, a later sign-in works`, async () => {
      const user = await newUser(`all-${door.name.replace(/[^a-z]/g, "")}`);
      const first = await identityToken(t.app, user);
      const second = await identityToken(t.app, user);
      // The refresh token is written by another connection, as a second replica or a tool would.
      await withServerStore(t, async (store) => {
        await store.repositories.refreshTokens.issue(
          {
            tokenHash: `h-${user}`,
            familyId: `f-${user}`,
            identityUid: user,
            audiences: [t.url],
            issueTime: Date.now(),
            expireTime: Date.now() + 3600_000,
            familyExpireTime: Date.now() + 3600_000,
          },
          Date.now(),
        );
        expect(await store.repositories.refreshTokens.find(`h-${user}`)).toBeDefined();
        expect(await onEveryDoor(first)).toEqual(callDoors.map(() => true));
        expect(await door.call(t.url, first, revokeTokens, { identity: user })).toMatchObject({ ok: true });
        expectRevokedEverywhere(await onEveryDoor(first));
        expectRevokedEverywhere(await onEveryDoor(second));
        expect(await store.repositories.refreshTokens.find(`h-${user}`)).toBeUndefined();
      });
      // A token issued in a later second than the revocation is a new sign-in: it works.
      t.advanceClock(1000);
      const later = await identityToken(t.app, user);
      expect(await onEveryDoor(later)).toEqual(callDoors.map(() => true));
    });
  }

  it("a revoked token stays refused for the rest of its life, then reads as expired", async () => {
    const user = await newUser("expiry");
    const token = await identityToken(t.app, user);
    expect(await call(token, revokeTokens, { identity: user })).toMatchObject({ ok: true });
    expectRevokedEverywhere(await onEveryDoor(token));
    t.advanceClock(59 * 60 * 1000);
    expectRevokedEverywhere(await onEveryDoor(token));
    t.advanceClock(2 * 60 * 1000);
    for (const o of await onEveryDoor(token)) expect(o).toMatchObject({ ok: false, code: UNAUTHENTICATED, reason: "TOKEN_EXPIRED" });
  });
});

describe("who may revoke", () => {
  it("nobody else's tokens without identity.delete at the identity's group; unknown and forbidden look the same; operator names need the operator", async () => {
    const alice = await newUser("who-alice");
    const mallory = await newUser("who-mallory");
    const malloryToken = await identityToken(t.app, mallory);
    for (const door of callDoors) {
      await expectRefused(() => door.call(t.url, malloryToken, revokeTokens, { identity: alice }), PERMISSION_DENIED, "TOKEN_REVOCATION_DENIED");
      await expectRefused(() => door.call(t.url, malloryToken, revokeTokens, { identity: `${"a".repeat(40)}` }), PERMISSION_DENIED, "TOKEN_REVOCATION_DENIED");
      await expectRefused(() => door.call(t.url, malloryToken, revokeTokens, { identity: "operator:root" }), PERMISSION_DENIED, "TOKEN_REVOCATION_DENIED");
    }
  });

  it("a malformed identity or jti is INVALID_ARGUMENT naming the field, on every door", async () => {
    for (const door of callDoors) {
      for (const [request, field] of [
        [{ identity: "" }, "identity"],
        [{ identity: "not a uid" }, "identity"],
        [{ identity: "operator:" }, "identity"],
        [{ identity: "operator:x", jti: "has space" }, "jti"],
      ] as const) {
        const before = await snapshotDb(t);
        const out = await door.call(t.url, t.token, revokeTokens, request);
        expect(out, `${door.name} ${JSON.stringify(request)}`).toMatchObject({ ok: false, code: INVALID_ARGUMENT });
        expect(JSON.stringify(out)).toContain(field);
        expect(await snapshotDb(t)).toBe(before);
      }
    }
  });

  it("identity.delete at the group revokes a robot's tokens, but not one granted more than the caller holds (escalation guard)", async () => {
    const org = (await op("POST", "/iam/v2beta1/groups", { name: `revoke-org-${++seq}` })).uid as string;
    const admin = await newUser("who-admin");
    const role = (await op("POST", `/iam/v2beta1/roles/${org}`, { name: `revoker-${seq}`, capabilities: [Capability[Capability.CAP_IAM_IDENTITY_DELETE]] }))
      .uid as string;
    await op("POST", `/iam/v2beta1/roleBindings/${org}`, { identityUid: admin, roleUid: role });
    const adminToken = await identityToken(t.app, admin);
    const plainRobot = (
      await op("POST", `/iam/v2beta1/identities/${org}`, { name: "plain", claimMatch: { issuer: "https://idp.example.test", subject: "ci-plain" } })
    ).uid as string;
    const ownerRobot = (
      await op("POST", `/iam/v2beta1/identities/${org}`, { name: "owner", claimMatch: { issuer: "https://idp.example.test", subject: "ci-owner" } })
    ).uid as string;
    await op("POST", `/iam/v2beta1/roleBindings/${org}`, { identityUid: ownerRobot, roleUid: builtInRoleUid("owner") });
    const plainToken = await identityToken(t.app, plainRobot);
    const ownerToken = await identityToken(t.app, ownerRobot);

    for (const door of callDoors) {
      await expectRefused(() => door.call(t.url, adminToken, revokeTokens, { identity: ownerRobot }), PERMISSION_DENIED, "PRIVILEGE_ESCALATION");
    }
    expect(await onEveryDoor(ownerToken)).toEqual(callDoors.map(() => true));
    expect(await call(adminToken, revokeTokens, { identity: plainRobot })).toMatchObject({ ok: true });
    expectRevokedEverywhere(await onEveryDoor(plainToken));
    // Without identity.delete (a viewer of the org), even the plain robot is out of reach.
    const viewer = await newUser("who-viewer");
    await op("POST", `/iam/v2beta1/roleBindings/${org}`, { identityUid: viewer, roleUid: builtInRoleUid("viewer") });
    const viewerToken = await identityToken(t.app, viewer);
    await expectRefused(() => call(viewerToken, revokeTokens, { identity: plainRobot }), PERMISSION_DENIED, "TOKEN_REVOCATION_DENIED");
  });

  it("a down-scoped token revokes nothing, not even its own identity's tokens", async () => {
    const user = await newUser("scoped");
    const reduced = await t.app.issuer.mint({ subject: user, audience: t.app.issuer.audience, ttlSeconds: 600, claims: { [CAP_CLAIM]: ["groups.list"] } });
    for (const door of callDoors) {
      await expectRefused(() => door.call(t.url, reduced, revokeTokens, { identity: user }), PERMISSION_DENIED, "TOKEN_DOWN_SCOPED");
    }
  });

  it("the operator revokes anyone's tokens, operator tokens included", async () => {
    const user = await newUser("by-operator");
    const token = await identityToken(t.app, user);
    expect(await call(t.token, revokeTokens, { identity: user })).toMatchObject({ ok: true });
    expectRevokedEverywhere(await onEveryDoor(token));
    const opToken = await operatorToken(t.dataDir, "leaky");
    expect(await onEveryDoor(opToken)).toEqual(callDoors.map(() => true));
    expect(await call(t.token, revokeTokens, { identity: "operator:leaky", jti: decodeJwt(opToken).jti as string })).toMatchObject({ ok: true });
    expectRevokedEverywhere(await onEveryDoor(opToken));
    expect(await onEveryDoor(t.token)).toEqual(callDoors.map(() => true));
  });
});

describe("trellis tokens revoke (subprocess)", () => {
  it("through the API: revokes, exit 0; refused for someone else's tokens with the auth exit code", async () => {
    const user = await newUser("cli-api");
    const token = await identityToken(t.app, user);
    const other = await newUser("cli-other");
    const cli = cliRunner(t.url, { TRELLIS_TOKEN: token });
    try {
      const refused = await cli.run(["tokens", "revoke", "--identity", other]);
      expect(refused.code, refused.stderr).toBe(3);
      const bad = await cli.run(["tokens", "revoke", "--identity", "nope"]);
      expect(bad.code, bad.stderr).toBe(2);
      const ok = await cli.run(["tokens", "revoke", "--identity", user, "--jti", decodeJwt(token).jti as string]);
      expect(ok.code, ok.stderr).toBe(0);
      expect(ok.stderr).toMatch(/revoked token/);
      expectRevokedEverywhere(await onEveryDoor(token));
    } finally {
      cli.cleanup();
    }
  });

  it("--local from another process on the same database file: the running server refuses the token on its next call, cached or not", async () => {
    const user = await newUser("cli-local");
    const token = await identityToken(t.app, user);
    const other = await identityToken(t.app, user);
    expect(await onEveryDoor(token)).toEqual(callDoors.map(() => true)); // cached now
    const cli = cliRunner(t.url);
    try {
      // By jti: the CLI writes with the wall clock, the server here runs on a moved test clock.
      const r = await cli.run(["tokens", "revoke", "--local", ...storeArgs(t.dataDir), "--identity", user, "--jti", decodeJwt(token).jti as string]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toBe("");
    } finally {
      cli.cleanup();
    }
    expectRevokedEverywhere(await onEveryDoor(token));
    expect(await onEveryDoor(other)).toEqual(callDoors.map(() => true));
  });
});

describe("a revocation by another connection is seen at the next call", () => {
  // The server asks SQLite whether another connection committed at most once per turn of
  // the event loop (src/store/sqlite/shared-values.ts): a call right after such a commit must
  // still see it. Each round: a call that succeeds (the token cached, the change check just
  // read), the commit by another connection, then the very next call, which must fail.
  for (const door of callDoors) {
    it(`over ${door.name}: each of several revocations, written between two back-to-back calls by another connection, fails the very next call`, async () => {
      const user = await newUser(`next-${door.name.replace(/[^a-z]/g, "")}`);
      for (let round = 0; round < 5; round++) {
        const token = await identityToken(t.app, user);
        expect(await door.call(t.url, token, listGroups, {}), `round ${round}`).toMatchObject({ ok: true });
        await revokeLocally(storeOfTestApp(t.dataDir), { subject: user, jti: decodeJwt(token).jti as string }, Date.now());
        expect(await door.call(t.url, token, listGroups, {}), `round ${round}`).toMatchObject({ ok: false, code: UNAUTHENTICATED, reason: "TOKEN_REVOKED" });
      }
    });
  }
});

describe("the revocation list stays bounded", () => {
  it("past 100 single-token revocations of one identity, they collapse into revoking all its tokens (wider, never narrower)", async () => {
    const user = await newUser("bounded");
    const token = await identityToken(t.app, user);
    for (let i = 0; i < 100; i++) expect((await call(token, revokeTokens, { identity: user, jti: `junk-${i}` })).ok).toBe(true);
    expect(await onEveryDoor(token)).toEqual(callDoors.map(() => true));
    expect(await call(token, revokeTokens, { identity: user, jti: "junk-100" })).toMatchObject({ ok: true });
    expectRevokedEverywhere(await onEveryDoor(token));
    const [stored] = await queryDb<{ value: Buffer }>(t, "SELECT value FROM server_keys WHERE name = 'token_revocations'");
    const doc = JSON.parse(String(stored?.value)) as { tokens: { sub: string }[]; subjects: { sub: string }[] };
    expect(doc.tokens.filter((e) => e.sub === user)).toEqual([]);
    expect(doc.subjects.filter((e) => e.sub === user)).toHaveLength(1);
  });
});
