/**
 * The anti-escalation guards (src/auth/grant-guard.ts) read a GrantView synchronously, inside
 * the write transaction of the change they judge. PostgreSQL reads are asynchronous, so a guard
 * cannot pull rows from it as it goes. `runGuard` runs the guard against what was read so far;
 * when it asks for something not read yet, the view throws a private signal, the rows are read
 * (through the same transaction, so under the same locks as the write), and the guard runs
 * again from the start. A guard is a pure function of what the view answers, so a rerun
 * decides exactly as a first run with everything loaded would; it asks for a handful of things
 * (the caller's grants, a few roles), so it runs a handful of times at most.
 */
import { eq } from "drizzle-orm";
import type { GrantView } from "../grant-view.js";
import type { Grant } from "../role-bindings.js";
import type { PgDb } from "./connection.js";
import { roleBindings, roles } from "./schema.js";

type Tx = Parameters<Parameters<PgDb["transaction"]>[0]>[0];

/** Thrown by the view (and caught by runGuard) when the guard needs rows not read yet. */
class NotReadYet {
  constructor(readonly load: () => Promise<void>) {}
}

/** Runs `guard` with a GrantView over `tx` (see the header); rethrows what the guard throws. */
export async function runGuard<A extends unknown[]>(tx: Tx | PgDb, guard: (view: GrantView, ...args: A) => void, ...args: A): Promise<void> {
  const grants = new Map<string, Grant[]>();
  const capabilities = new Map<string, readonly number[] | undefined>();
  const binding = new Map<string, string[]>();
  const view: GrantView = {
    grantsOf(identityUid) {
      const known = grants.get(identityUid);
      if (known) return known;
      throw new NotReadYet(async () => {
        const rows = await tx
          .select({ groupUid: roleBindings.groupUid, capabilities: roles.capabilities })
          .from(roleBindings)
          .innerJoin(roles, eq(roles.uid, roleBindings.roleUid))
          .where(eq(roleBindings.identityUid, identityUid));
        grants.set(
          identityUid,
          rows.map((r) => ({ groupUid: r.groupUid, capabilities: JSON.parse(r.capabilities) as number[] })),
        );
      });
    },
    roleCapabilities(roleUid) {
      if (capabilities.has(roleUid)) return capabilities.get(roleUid);
      throw new NotReadYet(async () => {
        const [row] = await tx.select({ capabilities: roles.capabilities }).from(roles).where(eq(roles.uid, roleUid));
        capabilities.set(roleUid, row && (JSON.parse(row.capabilities) as number[]));
      });
    },
    groupsBinding(roleUid) {
      const known = binding.get(roleUid);
      if (known) return known;
      throw new NotReadYet(async () => {
        const rows = await tx.selectDistinct({ groupUid: roleBindings.groupUid }).from(roleBindings).where(eq(roleBindings.roleUid, roleUid));
        binding.set(
          roleUid,
          rows.map((r) => r.groupUid),
        );
      });
    },
  };
  for (;;) {
    try {
      guard(view, ...args);
      return;
    } catch (err) {
      if (!(err instanceof NotReadYet)) throw err;
      await err.load();
    }
  }
}
