/**
 * Redeeming a group invite (trellis.iam.v1.InvitesService/RedeemGroupInvite) on every door:
 * the signed-in user is bound to exactly the invite's role at the invite's group and gains
 * nothing else; a single-use invite works once; an expired one, one for another email, an
 * operator or an assumed identity are refused, and every refusal leaves the database as it
 * was. Users sign in for real through the token exchange with a test IdP.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GroupsService } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { InvitesService } from "../../gen/trellis/iam/v1/invites_pb.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { identityToken } from "../support/auth.js";
import { callDoors } from "../support/call-method.js";
import { snapshotDb } from "../support/db.js";
import { startTestIdp, type TestIdp } from "../support/idp.js";
import { rest } from "../support/rest.js";
import { closeGrpcClients } from "../support/transports.js";

const CLIENT_ID = "trellis-cli";
const REDEEM = InvitesService.method.redeemGroupInvite;

let t: TestApp;
let idp: TestIdp;
let viewer: string;
let editor: string;

async function op(method: string, path: string, body?: unknown) {
  const r = await rest(t.url, method, path, body);
  if (r.status !== 200) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

async function signIn(sub: string, email?: string): Promise<{ token: string; uid: string }> {
  const idToken = await idp.sign({ sub, aud: CLIENT_ID, ...(email && { email, email_verified: true }) });
  const r = await rest(t.url, "GET", `/sts/exchange?aud=${encodeURIComponent(t.app.issuer.audience)}`, undefined, {
    authorization: `Bearer ${idToken}`,
  });
  if (r.status !== 200) throw new Error(`sign-in failed: ${r.status} ${JSON.stringify(r.body)}`);
  const token = r.body.token as string;
  return { token, uid: JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString()).sub };
}

async function invite(group: string, role: string, extra: Record<string, unknown> = {}): Promise<string> {
  return (await op("POST", `/iam/v2beta1/groupInvites/${group}`, { roleUid: role, ttl: "3600s", ...extra })).code;
}

beforeAll(async () => {
  idp = await startTestIdp();
  t = await startTestApp({ trust: { identityProviders: [{ issuer: idp.issuer, users: true, clientId: CLIENT_ID }] } });
  const roles = (await op("GET", "/iam/v2beta1/roles")).roles as { uid: string; name: string }[];
  viewer = roles.find((r) => r.name === "viewer")!.uid;
  editor = roles.find((r) => r.name === "editor")!.uid;
});
afterAll(async () => {
  closeGrpcClients();
  await t.close();
  await idp.close();
});

describe.each(callDoors)("RedeemGroupInvite over $name", (door) => {
  const slug = door.name.replace(/[^a-z0-9]+/g, "-");

  it("binds the signed-in user with exactly the invite's role at its group; a single-use invite works once", async () => {
    const org = (await op("POST", "/iam/v2beta1/groups", { name: `inv-${slug}` })).uid as string;
    const team = (await op("POST", `/iam/v2beta1/groups/${org}`, { name: "team" })).uid as string;
    const code = await invite(team, viewer, { singleUse: true });
    const alice = await signIn(`alice-${slug}`);

    const out = await door.call(t.url, alice.token, REDEEM, { code });
    expect(out.ok, JSON.stringify(out)).toBe(true);
    if (!out.ok) return;
    expect(out.body).toMatchObject({ identity: { uid: alice.uid }, group: { uid: team }, role: { uid: viewer } });

    // Exactly that binding, nothing else: she reads the team, not its organization, and
    // cannot write in it.
    const bindings = (await op("GET", `/iam/v2beta1/roleBindings?identity=${alice.uid}`)).roleBindings as { group: { uid: string } }[];
    expect(bindings.map((b) => b.group.uid)).toEqual([team]);
    expect((await door.call(t.url, alice.token, GroupsService.method.getGroup, { uid: team })).ok).toBe(true);
    const orgRead = await door.call(t.url, alice.token, GroupsService.method.getGroup, { uid: org });
    expect(orgRead.ok ? 0 : orgRead.code).toBe(7);
    const write = await door.call(t.url, alice.token, GroupsService.method.createGroup, { parent: team, group: { name: "sneaky" } });
    expect(write.ok ? 0 : write.code).toBe(7);

    // Single use: gone for the next user, and nothing changes.
    const bob = await signIn(`bob-${slug}`);
    const before = await snapshotDb(t);
    const again = await door.call(t.url, bob.token, REDEEM, { code });
    expect(again.ok ? 0 : again.code).toBe(5);
    expect(await snapshotDb(t)).toBe(before);
  });

  it("refuses an operator, an assumed identity, another email, a malformed and an unknown code, changing nothing", async () => {
    const org = (await op("POST", "/iam/v2beta1/groups", { name: `refuse-${slug}` })).uid as string;
    const code = await invite(org, editor);
    const forCarol = await invite(org, viewer, { email: "carol@example.test" });
    const bot = (
      await op("POST", `/iam/v2beta1/identities/${org}`, {
        name: "ci-bot",
        claimMatch: { issuer: "https://ci.example.test", subject: "job" },
      })
    ).uid as string;
    const dave = await signIn(`dave-${slug}`, "dave@example.test");
    // [token, code, gRPC code, ErrorInfo reason or PreconditionFailure type]
    const cases: [string, string, number, string][] = [
      [t.token, code, 9, "INVITE_NEEDS_USER"],
      [await identityToken(t.app, bot), code, 9, "INVITE_NEEDS_USER"],
      [dave.token, forCarol, 9, "INVITE_EMAIL_MISMATCH"],
      [dave.token, "not a code!", 3, "INVALID_ARGUMENT"],
      [dave.token, "", 3, "INVALID_ARGUMENT"],
      [dave.token, `${"0".repeat(16)}${"A".repeat(43)}`, 5, "NOT_FOUND"],
    ];
    const before = await snapshotDb(t);
    for (const [token, c, code_, reason] of cases) {
      const out = await door.call(t.url, token, REDEEM, { code: c });
      expect(out.ok, c).toBe(false);
      if (out.ok) continue;
      expect(out.code, `${c}: ${out.message}`).toBe(code_);
      if (code_ === 9) expect(out.preconditionTypes).toEqual([reason]);
      else expect(out.reason).toBe(reason);
    }
    expect(await snapshotDb(t)).toBe(before);
    // A multi-use invite works for several users; redeeming twice returns the same binding.
    const erin = await signIn(`erin-${slug}`);
    const first = await door.call(t.url, erin.token, REDEEM, { code });
    const second = await door.call(t.url, erin.token, REDEEM, { code });
    expect(first.ok && second.ok && first.body.uid === second.body.uid).toBe(true);
    expect((await door.call(t.url, dave.token, REDEEM, { code })).ok).toBe(true);
  });
});

describe("an expired invite", () => {
  it("is FAILED_PRECONDITION INVITE_EXPIRED and binds nothing", async () => {
    const org = (await op("POST", "/iam/v2beta1/groups", { name: "expiring" })).uid as string;
    const code = await invite(org, viewer, { ttl: "1s" });
    const frank = await signIn("frank");
    t.advanceClock(2_000);
    try {
      const before = await snapshotDb(t);
      for (const door of callDoors) {
        const out = await door.call(t.url, frank.token, REDEEM, { code });
        expect(out.ok ? [] : out.preconditionTypes, door.name).toEqual(["INVITE_EXPIRED"]);
      }
      expect(await snapshotDb(t)).toBe(before);
    } finally {
      t.advanceClock(-2_000);
    }
  });
});
