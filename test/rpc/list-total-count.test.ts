/**
 * total_count stays true while the store remembers counts (src/store/sqlite/count-cache.ts), on
 * every door: a repeated first page is answered from the cache, and any write — through the
 * API, or by another connection to the same database — makes the next first page count
 * again. Within one chain of pages the count is the one taken on its first page (it travels
 * in the page token), as spec'd in src/pagination/page.ts. PostgreSQL caches no count, and
 * must give the same answers (another replica is "another connection" there).
 *
 * Visibility (two callers with different scopes never sharing a cached count) is covered by
 * test/auth/tenants.test.ts, which lists as several users back to back.
 */
import type { DescMessage, DescMethodUnary, MessageInitShape } from "@bufbuild/protobuf";
import { beforeAll, describe, expect, it } from "vitest";
import { GroupsService } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { IdentitiesService } from "../../gen/chainguard/platform/iam/v2beta1/identities_pb.js";
import { fileTestApp } from "../support/app.js";
import { createUserIdentity } from "../support/auth.js";
import { queryDb } from "../support/db.js";
import { rest } from "../support/rest.js";
import { bodyOf, type CallDoor, callDoors } from "../support/call-method.js";

/** The operations the scenario needs, on one door (test/support/call-method.ts). */
function operations(door: CallDoor) {
  const call = <M extends DescMessage>(method: DescMethodUnary<M>, request: MessageInitShape<M>) => door.call(t.url, undefined, method, request).then(bodyOf);
  return {
    name: door.name,
    async createGroup(parent: string, name: string): Promise<string> {
      return String((await call(GroupsService.method.createGroup, { parent, group: { name } })).uid);
    },
    async deleteGroup(uid: string): Promise<void> {
      await call(GroupsService.method.deleteGroup, { uid });
    },
    /** One page of the children of `parent`; the total and the next token. */
    async listChildren(parent: string, pageSize: number, pageToken = ""): Promise<{ total: number; next: string; n: number }> {
      const b = await call(GroupsService.method.listGroups, { uidp: { childrenOf: parent }, pageSize, pageToken });
      return { total: Number(b.totalCount ?? 0), next: String(b.nextPageToken ?? ""), n: ((b.groups as unknown[] | undefined) ?? []).length };
    },
    async countIdentities(): Promise<number> {
      return Number((await call(IdentitiesService.method.listIdentities, { pageSize: 1 })).totalCount ?? 0);
    },
  };
}

async function ok(method: string, path: string, body?: unknown) {
  const r = await rest(t.url, method, path, body);
  if (r.status !== 200) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

const t = fileTestApp();

describe.each(callDoors.map(operations))("total_count with cached counts over $name", (door) => {
  let org: string;
  beforeAll(async () => {
    org = (await ok("POST", "/iam/v2beta1/groups", { name: `count-org ${door.name.replace(/[^a-z0-9]+/g, "-")}` })).uid;
    for (const name of ["child-1", "child-2"]) await door.createGroup(org, name);
  });

  it("a repeated first page gives the same count, and the API's own writes change it at once", async () => {
    expect((await door.listChildren(org, 50)).total).toBe(2);
    expect((await door.listChildren(org, 50)).total).toBe(2);
    const c3 = await door.createGroup(org, "child-3");
    expect((await door.listChildren(org, 50)).total).toBe(3);
    await door.deleteGroup(c3);
    expect((await door.listChildren(org, 50)).total).toBe(2);
  });

  it("a write by another connection to the database changes the next count", async () => {
    const before = await door.listChildren(org, 50);
    expect(before.total).toBe(2);
    const c4 = await door.createGroup(org, "child-4");
    expect((await door.listChildren(org, 50)).total).toBe(3);
    // Delete c4 behind the server's back, as another process (or replica) would.
    expect(await queryDb(t, "DELETE FROM groups WHERE uid = ? RETURNING uid", [c4])).toEqual([{ uid: c4 }]);
    expect((await door.listChildren(org, 50)).total).toBe(2);

    const identitiesBefore = await door.countIdentities();
    expect(await door.countIdentities()).toBe(identitiesBefore);
    await createUserIdentity(t.dataDir, `count-user-${door.name.replace(/[^a-z0-9]+/g, "-")}`); // a second connection
    expect(await door.countIdentities()).toBe(identitiesBefore + 1);
  });

  it("a chain of pages keeps its first page's count; a new chain counts again", async () => {
    const first = await door.listChildren(org, 1);
    expect(first.total).toBe(2);
    expect(first.next).not.toBe("");
    const added = await door.createGroup(org, "child-5");
    const second = await door.listChildren(org, 1, first.next);
    expect(second.n).toBe(1);
    expect(second.total).toBe(2); // carried in the token
    expect((await door.listChildren(org, 1)).total).toBe(3);
    await door.deleteGroup(added);
  });
});
