/**
 * The advisories repository on PostgreSQL: the AdvisoriesRepository contract
 * (src/store/advisories.ts), answer for answer as SQLite's (src/store/sqlite/advisories.ts),
 * and the importer's writer of advisories. Reads (an advisory or a page, then their events)
 * run in one REPEATABLE READ snapshot, so an advisory is never read with the events of another
 * import than its own fields. The writer locks the group FOR SHARE (iam-locks.ts: no advisory
 * under a group being deleted, whose delete takes it FOR UPDATE and then looks for advisories),
 * then finds the advisory of the key (group, advisory_id, artifact_name) FOR UPDATE or inserts
 * it (registry-locks.ts findOrInsert), so two replicas importing one advisory at once end with
 * one advisory, and its aliases and events are replaced under that row lock.
 */
import { and, eq, inArray, type SQL, sql } from "drizzle-orm";
import {
  type AdvisoriesRepository,
  ADVISORY_ORDERS,
  type AdvisoryEventRecord,
  type AdvisoryFields,
  type AdvisoryListFilter,
  type AdvisoryRecord,
} from "../advisories.js";
import { advisoryRecordOf, eventsByAdvisory, planAdvisoryWrite } from "../advisory-rows.js";
import { type ContainsText, textEquals } from "../list-predicates.js";
import { advisoryListConditions } from "../registry-filters.js";
import type { UpsertOutcome } from "../repos.js";
import { newUidp } from "../uidp.js";
import { countedChildren } from "./child-counts.js";
import type { PgDb } from "./connection.js";
import { lockParentGroup } from "./iam-locks.js";
import { keysetPages } from "./list-query.js";
import { findOrInsert } from "./registry-locks.js";
import { advisories, advisoryAliases, advisoryEvents } from "./schema.js";
import { readSnapshot, type Tx } from "./transaction.js";

type AdvisoryRow = typeof advisories.$inferSelect;

/**
 * PostgreSQL's substring test: lower() of a COLLATE "C" column folds ASCII only, as SQLite's
 * lower() does, and strpos takes the needle literally, as SQLite's instr does.
 */
const contains: ContainsText = (col, needle) => sql`strpos(lower(${col}), ${needle}) > 0`;

function advisoryListWhere(f: AdvisoryListFilter): SQL | undefined {
  return advisoryListConditions({ advisories, aliases: advisoryAliases, events: advisoryEvents }, f, contains);
}

async function eventsOf(tx: Tx, uids: readonly string[]): Promise<Map<string, AdvisoryEventRecord[]>> {
  if (uids.length === 0) return new Map();
  return eventsByAdvisory(
    await tx
      .select()
      .from(advisoryEvents)
      .where(inArray(advisoryEvents.advisoryUid, [...uids]))
      .orderBy(advisoryEvents.advisoryUid, advisoryEvents.seq),
  );
}

async function withEvents(tx: Tx, rows: readonly AdvisoryRow[]): Promise<AdvisoryRecord[]> {
  const events = await eventsOf(
    tx,
    rows.map((r) => r.uid),
  );
  return rows.map((r) => advisoryRecordOf(r, events.get(r.uid) ?? []));
}

/**
 * Inserts or replaces the advisory keyed by (parentUid, advisoryId, artifactName), with its
 * aliases and events, in the caller's transaction (advisory-rows.ts plans what changes).
 * @throws NOT_FOUND (group).
 */
export async function upsertAdvisoryInTx(tx: Tx, parentUid: string, f: AdvisoryFields, now: number): Promise<UpsertOutcome> {
  await lockParentGroup(tx, parentUid);
  const freshUid = newUidp(parentUid);
  const fresh = planAdvisoryWrite(freshUid, f, undefined, [], now);
  const existing = await findOrInsert(
    async () => {
      const [row] = await tx
        .select()
        .from(advisories)
        .where(and(eq(advisories.parentUid, parentUid), eq(advisories.advisoryId, f.advisoryId), eq(advisories.artifactName, f.artifactName)))
        .for("update");
      return row;
    },
    async () => {
      if (fresh.outcome === "unchanged") return false; // a plan without a stored row always writes
      const inserted = await tx
        .insert(advisories)
        .values({ uid: freshUid, parentUid, ...fresh.columns, updateTime: fresh.updateTime })
        .onConflictDoNothing({ target: [advisories.parentUid, advisories.advisoryId, advisories.artifactName] })
        .returning({ uid: advisories.uid });
      return inserted.length > 0;
    },
  );
  const uid = existing?.uid ?? freshUid;
  const plan = existing ? planAdvisoryWrite(uid, f, existing, (await eventsOf(tx, [uid])).get(uid) ?? [], now) : fresh;
  if (plan.outcome === "unchanged") return "unchanged";
  if (existing) {
    await tx
      .update(advisories)
      .set({ ...plan.columns, updateTime: plan.updateTime })
      .where(eq(advisories.uid, uid));
    await tx.delete(advisoryAliases).where(eq(advisoryAliases.advisoryUid, uid));
    await tx.delete(advisoryEvents).where(eq(advisoryEvents.advisoryUid, uid));
  }
  if (plan.aliases.length > 0) await tx.insert(advisoryAliases).values(plan.aliases.map((alias) => ({ advisoryUid: uid, alias })));
  if (plan.events.length > 0) await tx.insert(advisoryEvents).values(plan.events.map((e) => ({ ...e, uid: e.uid ?? newUidp(uid) })));
  return plan.outcome;
}

export function createPostgresAdvisoriesRepository(db: PgDb): AdvisoriesRepository {
  const pages = keysetPages(db, { table: advisories, orders: ADVISORY_ORDERS, where: advisoryListWhere, counted: (f) => countedChildren("advisories", f) });
  return {
    async get(uid) {
      return readSnapshot(db, async (tx) => {
        const rows = await tx.select().from(advisories).where(textEquals(advisories.uid, uid));
        return (await withEvents(tx, rows))[0];
      });
    },

    async list(filter, page) {
      return readSnapshot(db, async (tx) => withEvents(tx, await pages.page(filter, page, tx)));
    },

    count: pages.count,
  };
}
