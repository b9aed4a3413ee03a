/**
 * total_count stays true while the store remembers counts (src/store/sqlite/count-cache.ts), on
 * every door: a repeated first page is answered from the cache, and any write — through the
 * API, or by another connection to the same database file — makes the next first page count
 * again. Within one chain of pages the count is the one taken on its first page (it travels
 * in the page token), as spec'd in src/pagination/page.ts.
 *
 * Visibility (two callers with different scopes never sharing a cached count) is covered by
 * test/auth/tenants.test.ts, which lists as several users back to back.
 */
import Database from "better-sqlite3";
import { createClient } from "@connectrpc/connect";
import { beforeAll, describe, expect, it } from "vitest";
import { GroupsService } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { IdentitiesService } from "../../gen/chainguard/platform/iam/v2beta1/identities_pb.js";
import { fileTestApp } from "../support/app.js";
import { createUserIdentity } from "../support/auth.js";
import { rest } from "../support/rest.js";
import { rpcTransports } from "../support/transports.js";

interface Door {
  readonly name: string;
  createGroup(parent: string, name: string): Promise<string>;
  deleteGroup(uid: string): Promise<void>;
  /** One page of the children of `parent`; the total and the next token. */
  listChildren(parent: string, pageSize: number, pageToken?: string): Promise<{ total: number; next: string; n: number }>;
  countIdentities(): Promise<number>;
}

function rpcDoor(transport: (typeof rpcTransports)[number]): Door {
  const groups = () => createClient(GroupsService, transport.create(t.url));
  const identities = () => createClient(IdentitiesService, transport.create(t.url));
  return {
    name: transport.name,
    async createGroup(parent, name) {
      return (await groups().createGroup({ parent, group: { name } })).uid;
    },
    async deleteGroup(uid) {
      await groups().deleteGroup({ uid });
    },
    async listChildren(parent, pageSize, pageToken = "") {
      const r = await groups().listGroups({ uidp: { childrenOf: parent }, pageSize, pageToken });
      return { total: Number(r.totalCount), next: r.nextPageToken, n: r.groups.length };
    },
    async countIdentities() {
      return Number((await identities().listIdentities({ pageSize: 1 })).totalCount);
    },
  };
}

async function ok(method: string, path: string, body?: unknown) {
  const r = await rest(t.url, method, path, body);
  if (r.status !== 200) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

const restDoor: Door = {
  name: "rest",
  async createGroup(parent, name) {
    return (await ok("POST", `/iam/v2beta1/groups/${parent}`, { name })).uid;
  },
  async deleteGroup(uid) {
    await ok("DELETE", `/iam/v2beta1/groups/${uid}`);
  },
  async listChildren(parent, pageSize, pageToken = "") {
    const b = await ok(
      "GET",
      `/iam/v2beta1/groups?uidp.children_of=${parent}&page_size=${pageSize}${pageToken ? `&page_token=${encodeURIComponent(pageToken)}` : ""}`,
    );
    return { total: Number(b.totalCount), next: b.nextPageToken ?? "", n: (b.groups ?? []).length };
  },
  async countIdentities() {
    return Number((await ok("GET", "/iam/v2beta1/identities?page_size=1")).totalCount);
  },
};

const t = fileTestApp();

describe.each([...rpcTransports.map(rpcDoor), restDoor])("total_count with cached counts over $name", (door) => {
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

  it("a write by another connection to the database file changes the next count", async () => {
    const before = await door.listChildren(org, 50);
    expect(before.total).toBe(2);
    const c4 = await door.createGroup(org, "child-4");
    expect((await door.listChildren(org, 50)).total).toBe(3);
    // Delete c4 behind the server's back, as another process would (WAL allows it).
    const other = new Database(t.dbFile);
    try {
      expect(other.prepare("DELETE FROM groups WHERE uid = ?").run(c4).changes).toBe(1);
    } finally {
      other.close();
    }
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
