/**
 * Concurrent writes through every door, as group commit (src/store/sqlite/group-commit.ts) sees them
 * in production: many requests arriving together, some of which must fail inside the shared
 * transaction. Each request gets its own answer, and the database ends up holding exactly the
 * writes that were reported as successful. (That they did share transactions is asserted at
 * the store level, test/store/group-commit.test.ts, which can count COMMITs.) On PostgreSQL
 * the same requests run as concurrent transactions on the pool, and must end the same way.
 */
import { describe, expect, it } from "vitest";
import { GroupsService } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { fileTestApp } from "../support/app.js";
import { queryDb } from "../support/db.js";
import { rest } from "../support/rest.js";
import { type CallDoor, type CallOutcome, callDoors } from "../support/call-method.js";

type Outcome = { ok: true; uid: string } | { ok: false; code: number; reason: string | undefined };

/** The two writes the scenario needs, on one door (test/support/call-method.ts). */
function operations(door: CallDoor) {
  const settle = (out: CallOutcome, uid?: string): Outcome =>
    out.ok ? { ok: true, uid: uid ?? String(out.body.uid) } : { ok: false, code: out.code, reason: out.reason };
  return {
    name: door.name,
    create: async (parent: string, name: string) => settle(await door.call(t.url, undefined, GroupsService.method.createGroup, { parent, group: { name } })),
    remove: async (uid: string) => settle(await door.call(t.url, undefined, GroupsService.method.deleteGroup, { uid }), uid),
  };
}

const t = fileTestApp();

const slug = (s: string) => s.replace(/[^a-z0-9]+/g, "-");

describe.each(callDoors.map(operations))("concurrent writes over $name", (door) => {
  it("each of 40 simultaneous writes gets its own answer, and only the successful ones are stored", async () => {
    const org = (await rest(t.url, "POST", "/iam/v2beta1/groups", { name: `batch-${slug(door.name)}` })).body.uid as string;
    const busy = (await door.create(org, "has-a-child")) as { uid: string };
    await door.create(busy.uid, "the-child");
    const missingParent = "0".repeat(16);

    const calls: { expect: "ok" | number; run: () => Promise<Outcome> }[] = [];
    for (let i = 0; i < 40; i++) {
      if (i % 10 === 3)
        calls.push({ expect: 5, run: () => door.create(`${org}/${missingParent}`, `lost-${i}`) }); // NOT_FOUND
      else if (i % 10 === 7)
        calls.push({ expect: 9, run: () => door.remove(busy.uid) }); // FAILED_PRECONDITION: not empty
      else calls.push({ expect: "ok", run: () => door.create(org, `folder-${i}`) });
    }
    const outcomes = await Promise.all(calls.map((c) => c.run()));

    outcomes.forEach((o, i) => {
      const want = calls[i]?.expect;
      if (want === "ok") expect(o, `call ${i}`).toMatchObject({ ok: true });
      else expect(o, `call ${i}`).toMatchObject({ ok: false, code: want });
    });
    const created = outcomes.filter((o): o is { ok: true; uid: string } => o.ok).map((o) => o.uid);
    expect(created).toHaveLength(32);

    const stored = (await queryDb<{ uid: string; name: string }>(t, "SELECT uid, name FROM groups WHERE parent_uid = ?", [org]))
      .filter((r) => r.name.startsWith("folder-"))
      .map((r) => r.uid)
      .sort();
    expect(stored).toEqual([...created].sort());
    expect(await queryDb(t, "SELECT uid FROM groups WHERE name LIKE 'lost-%'")).toEqual([]);
    expect(await queryDb(t, "SELECT uid FROM groups WHERE uid = ?", [busy.uid])).toEqual([{ uid: busy.uid }]);
  });
});
