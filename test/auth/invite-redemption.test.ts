/**
 * Redeeming a group invite (trellis.iam.v1.InvitesService/RedeemGroupInvite) on every door:
 * the signed-in user is bound to exactly the invite's role at the invite's group and gains
 * nothing else; a single-use invite works once; an expired one, one for another email, an
 * operator or an assumed identity are refused, and every refusal leaves the database as it
 * was. An invite's email matches the user's only with ASCII letters folded (never through a
 * Unicode case mapping), and an invite grants only what its creator could grant at the time
 * of redemption (a binding lost or a role narrowed since ends it). Users sign in for real
 * through the token exchange with a test IdP.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Capability } from "../../gen/chainguard/capabilities/capabilities_pb.js";
import { GroupInvitesService } from "../../gen/chainguard/platform/iam/v2beta1/group_invites_pb.js";
import { GroupsService } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { InvitesService } from "../../gen/trellis/iam/v1/invites_pb.js";
import { BUILT_IN_ROLES } from "../../src/store/builtin-roles.js";
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

/** The capability names of the built-in viewer role, and of an inviter: viewer plus what CreateGroupInvite needs. */
const VIEWER_CAPS = (BUILT_IN_ROLES.find((r) => r.name === "viewer")?.capabilities ?? []).map((c) => Capability[c]);
const INVITER_CAPS = [...VIEWER_CAPS, "CAP_IAM_GROUP_INVITES_CREATE", "CAP_IAM_ROLE_BINDINGS_CREATE"];

describe.each(callDoors)("an invite's email over $name", (door) => {
  const slug = door.name.replace(/[^a-z0-9]+/g, "-");

  it("matches with ASCII letters folded and nothing else: a Unicode case mapping or normalization never makes another address the invited one", async () => {
    const org = (await op("POST", "/iam/v2beta1/groups", { name: `mail-${slug}` })).uid as string;
    const forKate = await invite(org, viewer, { email: "kate@example.test" });
    const forIan = await invite(org, viewer, { email: "ian@example.test" });
    const forKelvin = await invite(org, viewer, { email: "\u212Aate@example.test" });
    // [invite code, the redeeming user's verified email]
    const lookalikes: [string, string][] = [
      [forKate, "\u212Aate@example.test"], // KELVIN SIGN: "k" when lower-cased
      [forKate, "\u212AATE@EXAMPLE.TEST"],
      [forKate, "\uFF4Bate@example.test"], // fullwidth k: "k" after NFKC
      [forKate, "kate@example.te\u017Ft"], // long s: "S" when upper-cased
      [forKate, "kate@\u0435xample.test"], // Cyrillic e
      [forIan, "\u0130an@example.test"], // I with dot above: "i" + U+0307 lower-cased, "i" in Turkish
      [forIan, "\u0131an@example.test"], // dotless i: "I" when upper-cased
      [forKelvin, "kate@example.test"],
    ];
    let n = 0;
    const before = await snapshotDb(t);
    const users = [];
    for (const [, email] of lookalikes) users.push(await signIn(`look-${n++}-${slug}`, email));
    const afterSignIns = await snapshotDb(t);
    for (const [i, [code, email]] of lookalikes.entries()) {
      const out = await door.call(t.url, users[i]!.token, REDEEM, { code });
      expect(out.ok ? [] : out.preconditionTypes, email).toEqual(["INVITE_EMAIL_MISMATCH"]);
    }
    expect(await snapshotDb(t)).toBe(afterSignIns);
    expect(afterSignIns).not.toBe(before);
    // The same address with other ASCII case is the invited one.
    const kate = await signIn(`kate-${slug}`, "KATE@Example.TEST");
    expect(await door.call(t.url, kate.token, REDEEM, { code: forKate })).toMatchObject({ ok: true, body: { identity: { uid: kate.uid } } });
  });
});

describe.each(callDoors)("an invite's creator over $name", (door) => {
  const slug = door.name.replace(/[^a-z0-9]+/g, "-");
  let n = 0;

  /** An organization with a folder where `mel` holds a custom role `inviter` and has made a multi-use invite for `role` (through this door). */
  async function world(role: "viewer" | "custom") {
    const org = (await op("POST", "/iam/v2beta1/groups", { name: `made-${n++}-${slug}` })).uid as string;
    const team = (await op("POST", `/iam/v2beta1/groups/${org}`, { name: "team" })).uid as string;
    const inviter = (await op("POST", `/iam/v2beta1/roles/${org}`, { name: "inviter", capabilities: INVITER_CAPS })).uid as string;
    const granted =
      role === "viewer" ? viewer : ((await op("POST", `/iam/v2beta1/roles/${org}`, { name: "reader", capabilities: ["CAP_IAM_GROUPS_LIST"] })).uid as string);
    const mel = await signIn(`mel-${n++}-${slug}`);
    const binding = (await op("POST", `/iam/v2beta1/roleBindings/${team}`, { identityUid: mel.uid, roleUid: inviter })).uid as string;
    const made = await door.call(t.url, mel.token, GroupInvitesService.method.createGroupInvite, {
      parent: team,
      groupInvite: { roleUid: granted, ttl: { seconds: 3600n } },
    });
    if (!made.ok) throw new Error(`mel's invite: ${made.message}`);
    return { team, inviter, granted, mel, binding, code: String(made.body.code) };
  }

  /** Redeems `code` as each user; every one must be refused INVITE_CREATOR_CANNOT_GRANT with the database unchanged. */
  async function refusedToAll(code: string, users: { token: string }[]) {
    const before = await snapshotDb(t);
    for (const u of users) {
      const out = await door.call(t.url, u.token, REDEEM, { code });
      expect(out.ok ? [] : out.preconditionTypes).toEqual(["INVITE_CREATOR_CANNOT_GRANT"]);
    }
    expect(await snapshotDb(t)).toBe(before);
  }

  it("a creator who lost her binding cannot get it back through her own invite, nor grant it to anyone; bound again, her invite works", async () => {
    const w = await world("viewer");
    await op("DELETE", `/iam/v2beta1/roleBindings/${w.binding}`);
    const nina = await signIn(`nina-${n++}-${slug}`);
    await refusedToAll(w.code, [w.mel, nina]);
    await op("POST", `/iam/v2beta1/roleBindings/${w.team}`, { identityUid: w.mel.uid, roleUid: w.inviter });
    expect(await door.call(t.url, nina.token, REDEEM, { code: w.code })).toMatchObject({
      ok: true,
      body: { identity: { uid: nina.uid }, role: { uid: viewer } },
    });
  });

  it("a creator whose role was narrowed (the invited role's capabilities, or making invites) no longer grants through her invites", async () => {
    const w = await world("viewer");
    const nina = await signIn(`nina-${n++}-${slug}`);
    // One of the viewer's capabilities taken from her role: she could not grant viewer now.
    await op("PATCH", `/iam/v2beta1/roles/${w.inviter}`, { capabilities: INVITER_CAPS.filter((c) => c !== "CAP_REPO_LIST") });
    await refusedToAll(w.code, [w.mel, nina]);
    // Making invites taken from her role: she holds viewer, but could not make this invite now.
    await op("PATCH", `/iam/v2beta1/roles/${w.inviter}`, { capabilities: VIEWER_CAPS });
    await refusedToAll(w.code, [nina]);
    await op("PATCH", `/iam/v2beta1/roles/${w.inviter}`, { capabilities: INVITER_CAPS });
    expect(await door.call(t.url, nina.token, REDEEM, { code: w.code })).toMatchObject({ ok: true });
  });

  it("an invited role widened past its creator's rights after the invite was made grants nothing", async () => {
    const w = await world("custom");
    await op("PATCH", `/iam/v2beta1/roles/${w.granted}`, { capabilities: ["CAP_IAM_GROUPS_LIST", "CAP_IAM_GROUPS_DELETE"] });
    const nina = await signIn(`nina-${n++}-${slug}`);
    await refusedToAll(w.code, [nina]);
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
