/**
 * Key rotation (docs/auth.md "Keys", docs/cli.md "Keys and token revocation"): `trellis keys
 * rotate` runs as its own process beside the running server, which signs with the new key
 * from its next call on (no restart), keeps accepting tokens signed by the old key until
 * every one of them has expired, lists both keys in the JWKS during that overlap and only
 * the new one after. Page-token keys rotate the same way. The server's clock is moved with
 * the test app's fake clock; the CLI writes with the real one (the offset starts at 0).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { decodeProtectedHeader, SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GroupsService } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { SIGNING_KEY_RETENTION_MS, type SigningKey } from "../../src/auth/signing-keys.js";
import { PAGE_KEYS_NAME, parsePageKeyRing } from "../../src/pagination/page-keys.js";
import { createPageTokenCodec } from "../../src/pagination/page-token.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { createUserIdentity, identityToken, operatorToken, serverSigningKey } from "../support/auth.js";
import { type CallOutcome, callDoors } from "../support/call-method.js";
import { cliRunner } from "../support/cli.js";
import { queryDb } from "../support/db.js";
import { rest } from "../support/rest.js";
import { storeArgs } from "../support/store-target.js";
import { closeGrpcClients } from "../support/transports.js";

let t: TestApp;
let offset = 0;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  closeGrpcClients();
  await t.close();
});

function advance(ms: number) {
  offset += ms;
  t.advanceClock(ms);
}
const serverNowS = () => Math.floor((Date.now() + offset) / 1000);

const listGroups = GroupsService.method.listGroups;

async function onEveryDoor(token: string): Promise<(true | CallOutcome)[]> {
  return Promise.all(
    callDoors.map(async (d) => {
      const out = await d.call(t.url, token, listGroups, {});
      return out.ok ? true : out;
    }),
  );
}
const everyDoorOk = () => callDoors.map(() => true);

async function jwksKids(): Promise<string[]> {
  const r = await fetch(`${t.url}/.well-known/jwks.json`);
  expect(r.status).toBe(200);
  return ((await r.json()) as { keys: { kid: string }[] }).keys.map((k) => k.kid).sort();
}

interface ListedKey {
  use: string;
  id: string;
  status: string;
  createTime: string;
  retireTime?: string;
}

async function keysCli(args: string[]): Promise<ListedKey[]> {
  const cli = cliRunner(t.url);
  try {
    const r = await cli.run(["keys", ...args, ...storeArgs(t.dataDir), "-o", "json"]);
    expect(r.code, r.stderr).toBe(0);
    return JSON.parse(r.stdout) as ListedKey[];
  } finally {
    cli.cleanup();
  }
}

/** A token signed with `key` right now on the server's clock, as a holder of that key could make. */
function signedWith(key: SigningKey, subject: string): Promise<string> {
  const iat = serverNowS();
  return new SignJWT({})
    .setProtectedHeader({ alg: "ES256", kid: key.kid, typ: "at+jwt" })
    .setIssuer(t.app.issuer.issuer)
    .setAudience(t.app.issuer.audience)
    .setSubject(subject)
    .setIssuedAt(iat)
    .setExpirationTime(iat + 600)
    .setJti(`forged-${iat}`)
    .sign(key.privateKey);
}

describe("trellis keys rotate", () => {
  it("while the server runs: new tokens are signed by the new key at once, old tokens stay valid until they expire, the JWKS lists both during the overlap and only the new one after", async () => {
    const user = await createUserIdentity(t.dataDir, "rotation-user");
    const oldKey = await serverSigningKey(t.dataDir);
    expect(await jwksKids()).toEqual([oldKey.kid]);
    const old = await identityToken(t.app, user);
    expect(await onEveryDoor(old)).toEqual(everyDoorOk());

    const keys = await keysCli(["rotate", "--only", "signing"]);
    const signing = keys.filter((k) => k.use === "token-signing");
    expect(signing.map((k) => k.status)).toEqual(["active", "retiring"]);
    const newKid = (signing[0] as ListedKey).id;
    expect(signing[1]).toMatchObject({ id: oldKey.kid });
    // Retires when every token the old key signed has expired: the longest lifetime after the rotation.
    expect(Date.parse(signing[1]?.retireTime ?? "") - Date.parse(signing[0]?.createTime ?? "")).toBe(SIGNING_KEY_RETENTION_MS);

    // No restart: the next token is signed by the new key; both keys are published and verify.
    const fresh = await identityToken(t.app, user);
    expect(decodeProtectedHeader(fresh).kid).toBe(newKid);
    expect(await jwksKids()).toEqual([newKid, oldKey.kid].sort());
    expect(await onEveryDoor(old)).toEqual(everyDoorOk());
    expect(await onEveryDoor(fresh)).toEqual(everyDoorOk());

    // The old token expires as it always would; the old key is still published (an operator
    // token it signed may live a day).
    advance(3600_000 + 31_000);
    for (const o of await onEveryDoor(old)) expect(o).toMatchObject({ ok: false, code: 16, reason: "TOKEN_EXPIRED" });
    expect(await jwksKids()).toEqual([newKid, oldKey.kid].sort());
    expect(await onEveryDoor(await signedWith(oldKey, user))).toEqual(everyDoorOk());

    // Past the retention the old key is retired: gone from the JWKS, and nothing it signs verifies.
    advance(SIGNING_KEY_RETENTION_MS);
    expect(await jwksKids()).toEqual([newKid]);
    for (const o of await onEveryDoor(await signedWith(oldKey, user))) expect(o).toMatchObject({ ok: false, code: 16, reason: "TOKEN_INVALID" });
    expect(await onEveryDoor(await identityToken(t.app, user))).toEqual(everyDoorOk());
  });

  it("--drop-previous (a leaked key): tokens signed by the old key fail on the next call, even ones in the verified-token cache", async () => {
    const user = await createUserIdentity(t.dataDir, "drop-user");
    const old = await identityToken(t.app, user);
    expect(await onEveryDoor(old)).toEqual(everyDoorOk()); // cached now
    const keys = await keysCli(["rotate", "--only", "signing", "--drop-previous"]);
    expect(keys.filter((k) => k.use === "token-signing").map((k) => k.status)).toEqual(["active"]);
    for (const o of await onEveryDoor(old)) expect(o).toMatchObject({ ok: false, code: 16, reason: "TOKEN_INVALID" });
    expect(await jwksKids()).toEqual([keys[0]?.id]);
    expect(await onEveryDoor(await identityToken(t.app, user))).toEqual(everyDoorOk());
  });

  it("page-token keys: a List paged across a rotation carries on, new pages are sealed with the new key, --drop-previous ends the old pages", async () => {
    // A fresh operator token at the server's moved clock: the file's default one was signed
    // by a key an earlier test dropped, and expired when earlier tests moved the clock a day.
    const opToken = await operatorToken(t.dataDir, undefined, () => Date.now() + offset);
    const auth = { authorization: `Bearer ${opToken}` };
    const org = (await rest(t.url, "POST", "/iam/v2beta1/groups", { name: "paged-org" }, auth)).body.uid as string;
    for (const name of ["team-a", "team-b", "team-c", "team-d"]) {
      const r = await rest(t.url, "POST", `/iam/v2beta1/groups/${org}`, { name }, auth);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
    }
    const page = (door: (typeof callDoors)[number], pageToken: string) =>
      door.call(t.url, opToken, listGroups, { uidp: { childrenOf: org }, pageSize: 1, pageToken });
    const next = (out: CallOutcome) => String((out as { body: { nextPageToken?: string } }).body.nextPageToken);
    // One List chain per door, begun before the rotation (two CLI runs for all doors).
    const sealedBefore = await Promise.all(
      callDoors.map(async (door) => {
        const first = await page(door, "");
        expect(first, door.name).toMatchObject({ ok: true });
        return next(first);
      }),
    );

    const keys = await keysCli(["rotate", "--only", "page-tokens"]);
    expect(keys.filter((k) => k.use === "page-token").map((k) => k.status)).toEqual(["active", "retiring"]);
    const [stored] = await queryDb<{ value: Buffer }>(t, "SELECT value FROM server_keys WHERE name = ?", [PAGE_KEYS_NAME]);
    const newKey = stored && parsePageKeyRing(stored.value)?.active;
    for (const [i, door] of callDoors.entries()) {
      const second = await page(door, sealedBefore[i] as string);
      expect(second, door.name).toMatchObject({ ok: true });
      // The next page's token is sealed with the new key alone.
      expect(createPageTokenCodec(newKey as Uint8Array).decode(next(second), Date.now() + offset).kind, door.name).toBe("ok");
    }

    await keysCli(["rotate", "--only", "page-tokens", "--drop-previous"]);
    for (const [i, door] of callDoors.entries()) {
      expect(await page(door, sealedBefore[i] as string), door.name).toMatchObject({ ok: false, code: 3 });
    }
  });

  it("keys list and rotate refuse a data directory the server never used (exit 1), and change nothing there", async () => {
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-keys-empty-"));
    const cli = cliRunner(t.url);
    try {
      for (const cmd of ["list", "rotate"]) {
        const r = await cli.run(["keys", cmd, "--data", empty]);
        expect(r.code).toBe(1);
        expect(r.stderr).toMatch(/start the server once/);
      }
      expect(fs.readdirSync(empty)).toEqual([]);
    } finally {
      cli.cleanup();
      fs.rmSync(empty, { recursive: true, force: true });
    }
  });
});
