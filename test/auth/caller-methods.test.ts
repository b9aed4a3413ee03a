/**
 * The methods that act on the caller (docs/published-api.md "Authorization annotations"), on every
 * door: LookupIdentity, UpdateIdentityMetadata, and LookupGroup / CheckEligibility /
 * RequestGroupAccess in v2beta1 and v1. Users sign in for real through the token exchange
 * with an ID token from a test IdP (test/support/idp.ts), so the identity, its verified email
 * and its uid are the ones production creates.
 *
 *   acme.test    verified root    ← users with a verified @acme.test email belong here
 *   other.test   verified root
 *   plain.test   unverified root  ← never matched
 *   kernel.test  verified root    ← never for a domain that only a Unicode mapping makes "kernel.test"
 *
 * Every rejected call leaves the database unchanged. Also: the 1000-value cap on `uidp.ids`.
 */
import { type DescMessage, type DescMethodUnary, fromJson, type MessageInitShape, toJson } from "@bufbuild/protobuf";
import { decodeJwt } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Groups } from "../../gen/chainguard/platform/iam/groups_v1_pb.js";
import { GroupsService } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { IdentitiesService } from "../../gen/chainguard/platform/iam/v2beta1/identities_pb.js";
import { userIdentityUid } from "../../src/store/identities.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { snapshotDb } from "../support/db.js";
import { startTestIdp, type TestIdp } from "../support/idp.js";
import { rest } from "../support/rest.js";
import { type CallDoor, callDoors } from "../support/call-method.js";
import { closeGrpcClients } from "../support/transports.js";

const CLIENT_ID = "trellis-cli";

let t: TestApp;
let idp: TestIdp;
let acme: string;
let kernel: string;
let other: string;
let plain: string;

async function op(method: string, path: string, body?: unknown) {
  const r = await rest(t.url, method, path, body);
  if (r.status !== 200) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

/** Signs `sub` in through GET /sts/exchange; returns the API token. */
async function signIn(sub: string, email?: string, emailVerified = true): Promise<string> {
  const idToken = await idp.sign({ sub, aud: CLIENT_ID, ...(email && { email, email_verified: emailVerified }) });
  const r = await rest(t.url, "GET", `/sts/exchange?aud=${encodeURIComponent(t.app.issuer.audience)}`, undefined, {
    authorization: `Bearer ${idToken}`,
  });
  if (r.status !== 200) throw new Error(`sign-in failed: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.token;
}

beforeAll(async () => {
  idp = await startTestIdp();
  // REST carries uidp.ids in the URL: 1001 uids need more than the default 16 KiB of headers.
  t = await startTestApp({ trust: { identityProviders: [{ issuer: idp.issuer, users: true, clientId: CLIENT_ID }] } }, { maxHeaderBytes: 128 * 1024 });
  acme = (await op("POST", "/iam/v2beta1/groups", { name: "acme.test", verified: true })).uid;
  other = (await op("POST", "/iam/v2beta1/groups", { name: "other.test", verified: true })).uid;
  plain = (await op("POST", "/iam/v2beta1/groups", { name: "plain.test" })).uid;
  kernel = (await op("POST", "/iam/v2beta1/groups", { name: "kernel.test", verified: true })).uid;
});
afterAll(async () => {
  closeGrpcClients();
  await t.close();
  await idp.close();
});

class DoorError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string | undefined,
    readonly fields: string[],
  ) {
    super(`code ${code} (${reason}) ${fields.join(",")}`);
  }
}

/** Metadata as a test writes it: camelCase members. */
type Metadata = Record<string, string | boolean>;

/**
 * The operations under test, on one door (test/support/call-method.ts). Failures throw
 * DoorError. `token` undefined = the operator.
 */
function operations(door: CallDoor) {
  const call = async <M extends DescMessage>(token: string | undefined, method: DescMethodUnary<M>, request: MessageInitShape<M>) => {
    const out = await door.call(t.url, token, method, request);
    if (!out.ok) throw new DoorError(out.code, out.reason, out.fields);
    return out.body;
  };
  return {
    name: door.name,
    /** Whether the door can send an empty group uid (REST puts it in the path). */
    canSendEmptyGroup: door.name !== "rest",
    async lookupIdentity(token: string | undefined, issuer: string, subject: string): Promise<string> {
      return String((await call(token, IdentitiesService.method.lookupIdentity, { issuer, subject })).uid);
    },
    async updateMetadata(token: string | undefined, metadata: Metadata, mask?: string[]): Promise<Metadata> {
      const method = IdentitiesService.method.updateIdentityMetadata;
      const body = await call(token, method, { identityMetadata: metadata, updateMask: mask && { paths: mask } });
      // Every field, defaults included, whichever door answered: the scenarios check that a
      // mask sets a value back to its default.
      return toJson(method.output, fromJson(method.output, body), { alwaysEmitImplicit: true }) as Metadata;
    },
    async lookupGroup(v: "v1" | "v2", token: string | undefined): Promise<string> {
      if (v === "v2") return String(((await call(token, GroupsService.method.lookupGroup, {})).group as { uid: string }).uid);
      return String(((await call(token, Groups.method.lookupGroup, {})).group as { id: string }).id);
    },
    async checkEligibility(v: "v1" | "v2", token: string | undefined): Promise<boolean> {
      const body = v === "v2" ? await call(token, GroupsService.method.checkEligibility, {}) : await call(token, Groups.method.checkEligibility, {});
      return body.eligible === true;
    },
    async requestAccess(v: "v1" | "v2", token: string | undefined, group: string): Promise<void> {
      if (v === "v2") await call(token, GroupsService.method.requestGroupAccess, { groupUid: group });
      else await call(token, Groups.method.requestGroupAccess, { groupId: group });
    },
    async listGroupsByIds(ids: string[]): Promise<string[]> {
      const body = await call(undefined, GroupsService.method.listGroups, { uidp: { ids }, pageSize: 100 });
      return ((body.groups as { uid: string }[] | undefined) ?? []).map((g) => g.uid);
    },
  };
}

const doors = callDoors.map(operations);
const restDoor = doors.find((d) => d.name === "rest") as (typeof doors)[number];

/** Runs `fn`, expects it to fail without changing the database, returns the DoorError. */
async function rejected(fn: () => Promise<unknown>): Promise<DoorError> {
  const before = await snapshotDb(t);
  const err = await fn().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(DoorError);
  expect(await snapshotDb(t), "a rejected call changed the database").toBe(before);
  return err as DoorError;
}

describe.each(doors)("caller methods over $name", (door) => {
  /** A subject unique to this door and scenario. */
  const sub = (what: string) => `${door.name.replace(/[^a-z0-9]/g, "")}-${what}`;

  it("LookupIdentity answers the uid first sign-in then gives the user, and the same uid after", async () => {
    const subject = sub("lookup");
    const someone = await signIn(sub("asker"));
    const before = await door.lookupIdentity(someone, idp.issuer, subject);
    expect(before).toBe(userIdentityUid(idp.issuer, subject));
    expect((await rest(t.url, "GET", `/iam/v2beta1/identities/${before}`)).status).toBe(404);
    const token = await signIn(subject);
    expect(decodeJwt(token).sub).toBe(before);
    expect((await op("GET", `/iam/v2beta1/identities/${before}`)).uid).toBe(before);
    expect(await door.lookupIdentity(someone, idp.issuer, subject)).toBe(before);
    // The operator may ask too.
    expect(await door.lookupIdentity(undefined, idp.issuer, subject)).toBe(before);
  });

  it("LookupIdentity: issuer and subject are required; a token is required", async () => {
    const token = await signIn(sub("lookup-bad"));
    const err = await rejected(() => door.lookupIdentity(token, "", ""));
    expect(err).toMatchObject({ code: 3, reason: "INVALID_ARGUMENT" });
    expect(err.fields.sort()).toEqual(["issuer", "subject"]);
    expect(await rejected(() => door.lookupIdentity("", idp.issuer, "x"))).toMatchObject({ code: 16 });
  });

  it("UpdateIdentityMetadata changes the caller's own identity, by mask or by the fields given", async () => {
    const token = await signIn(sub("meta"));
    const uid = decodeJwt(token).sub as string;
    const first = await door.updateMetadata(token, { company: "Acme Inc", jobTitle: "builder", updatesOptIn: true, utmSource: "news" });
    expect(first).toMatchObject({ uid, name: sub("meta"), company: "Acme Inc", jobTitle: "builder", updatesOptIn: true, utmSource: "news" });
    // The company is the Identity's company.
    expect((await op("GET", `/iam/v2beta1/identities/${uid}`)).company).toBe("Acme Inc");
    // A mask changes only what it names, also to the default value; output-only values sent are ignored.
    const second = await door.updateMetadata(token, { uid: "ignored", product: "images", jobTitle: "", updatesOptIn: false }, [
      "product",
      "job_title",
      "updates_opt_in",
    ]);
    expect(second).toMatchObject({ uid, company: "Acme Inc", product: "images", jobTitle: "", updatesOptIn: false, utmSource: "news" });
  });

  it("UpdateIdentityMetadata refuses output-only masks, oversized values and the operator, writing nothing", async () => {
    const token = await signIn(sub("meta-bad"));
    const masked = await rejected(() => door.updateMetadata(token, { name: "someone else" }, ["name"]));
    expect(masked).toMatchObject({ code: 3, fields: ["update_mask"] });
    const long = await rejected(() => door.updateMetadata(token, { jobTitle: "x".repeat(513) }));
    expect(long).toMatchObject({ code: 3, fields: ["identity_metadata.job_title"] });
    // The operator token names no stored identity.
    const operator = await rejected(() => door.updateMetadata(undefined, { company: "Ops" }));
    expect(operator).toMatchObject({ code: 9, reason: "FAILED_PRECONDITION" });
    expect(await rejected(() => door.updateMetadata("", { company: "x" }))).toMatchObject({ code: 16 });
  });

  describe.each(["v2", "v1"] as const)("groups %s", (v) => {
    it("a user with a verified email finds its domain's verified organization, asks once, and is no longer eligible", async () => {
      const token = await signIn(sub(`join-${v}`), `${sub(v)}@ACME.test`);
      expect(await door.lookupGroup(v, token)).toBe(acme);
      expect(await door.checkEligibility(v, token)).toBe(true);
      await door.requestAccess(v, token, acme);
      expect(await door.checkEligibility(v, token)).toBe(false);
      const repeat = await rejected(() => door.requestAccess(v, token, acme));
      expect(repeat).toMatchObject({ code: 8, reason: "RESOURCE_EXHAUSTED" });
    });

    it("another organization, a malformed or empty uid are refused without a write", async () => {
      const token = await signIn(sub(`refused-${v}`), `${sub(v)}@acme.test`);
      expect(await rejected(() => door.requestAccess(v, token, other))).toMatchObject({ code: 5 });
      expect(await rejected(() => door.requestAccess(v, token, "f".repeat(40)))).toMatchObject({ code: 5 });
      expect(await rejected(() => door.requestAccess(v, token, "NOT-A-UID"))).toMatchObject({ code: 3 });
      if (door.canSendEmptyGroup) {
        const empty = await rejected(() => door.requestAccess(v, token, ""));
        expect(empty).toMatchObject({ code: 3, fields: [v === "v2" ? "group_uid" : "group_id"] });
      }
      // Still eligible: nothing was recorded.
      expect(await door.checkEligibility(v, token)).toBe(true);
    });

    it("a domain only a Unicode case mapping or normalization makes the organization's is another domain: NOT_FOUND, not eligible", async () => {
      // Only A-Z fold to a-z (src/services/iam/email-match.ts): U+212A KELVIN SIGN lower-cases
      // to "k" and once sent this user to kernel.test; fullwidth "ｋ" is "k" after NFKC, long s
      // "ſ" is "S" upper-cased, Cyrillic "е" only looks like "e".
      expect(await door.lookupGroup(v, await signIn(sub(`ascii-${v}`), `${sub(v)}@KERNEL.Test`))).toBe(kernel);
      for (const [i, domain] of [
        "\u212Aernel.test",
        "\u212AERNEL.TEST",
        "\uFF4Bernel.test",
        "kernel.te\u017Ft",
        "k\u0435rnel.test",
        "kernel.test\u200B",
      ].entries()) {
        const token = await signIn(sub(`lookalike-${i}-${v}`), `${sub(v)}@${domain}`);
        expect(await rejected(() => door.lookupGroup(v, token)), domain).toMatchObject({ code: 5 });
        expect(await door.checkEligibility(v, token)).toBe(false);
        expect(await rejected(() => door.requestAccess(v, token, kernel))).toMatchObject({ code: 5 });
      }
    });

    it("no verified email, an unverified organization, no organization, or the operator: NOT_FOUND and not eligible", async () => {
      const callers = [
        await signIn(sub(`unverified-email-${v}`), `${sub(v)}@acme.test`, false),
        await signIn(sub(`plain-${v}`), `${sub(v)}@plain.test`),
        await signIn(sub(`nowhere-${v}`), `${sub(v)}@nowhere.test`),
        await signIn(sub(`no-email-${v}`)),
        undefined,
      ];
      for (const token of callers) {
        expect(await rejected(() => door.lookupGroup(v, token))).toMatchObject({ code: 5 });
        expect(await door.checkEligibility(v, token)).toBe(false);
        expect(await rejected(() => door.requestAccess(v, token, acme))).toMatchObject({ code: 5 });
        expect(await rejected(() => door.requestAccess(v, token, plain))).toMatchObject({ code: 5 });
      }
      expect(await rejected(() => door.lookupGroup(v, ""))).toMatchObject({ code: 16 });
    });
  });

  it("uidp.ids takes at most 1000 values: more is INVALID_ARGUMENT on uidp.ids, not an internal error", async () => {
    const ids = (n: number) => [acme, ...Array.from({ length: n - 1 }, (_, i) => (i + 1).toString(16).padStart(40, "0"))];
    expect(await door.listGroupsByIds(ids(1000))).toEqual([acme]);
    const err = await rejected(() => door.listGroupsByIds(ids(1001)));
    expect(err).toMatchObject({ code: 3, reason: "INVALID_ARGUMENT", fields: ["uidp.ids"] });
  });
});

describe("access requests and deletes", () => {
  it("an access request never blocks deleting its identity or its organization", async () => {
    const gone = (await op("POST", "/iam/v2beta1/groups", { name: "gone.test", verified: true })).uid;
    const first = await signIn("gone-first", "first@gone.test");
    const second = await signIn("gone-second", "second@gone.test");
    await restDoor.requestAccess("v2", first, gone);
    await restDoor.requestAccess("v2", second, gone);
    await op("DELETE", `/iam/v2beta1/identities/${decodeJwt(first).sub}`);
    // The deleted identity's token is still valid until it expires, but names nothing now.
    expect(await rejected(() => restDoor.updateMetadata(first, { company: "x" }))).toMatchObject({ code: 5 });
    await op("DELETE", `/iam/v2beta1/groups/${gone}`);
    expect((await rest(t.url, "GET", `/iam/v2beta1/groups/${gone}`)).status).toBe(404);
  });
});

describe("concurrent access requests", () => {
  it("the same request sent eight times at once is recorded once; the others are RESOURCE_EXHAUSTED", async () => {
    const token = await signIn("race-user", "race@acme.test");
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => rest(t.url, "POST", `/iam/v2beta1/groups/${acme}:requestGroupAccess`, {}, { authorization: `Bearer ${token}` })),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([200, 429, 429, 429, 429, 429, 429, 429]);
    expect(await restDoor.checkEligibility("v2", token)).toBe(false);
  });
});
