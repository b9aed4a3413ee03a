/**
 * Advisories repository: reads for the API and the one writer (`upsertAdvisoryInTx`, used by
 * `trellis import`). An advisory is identified by (group, advisory_id, artifact_name); a
 * re-import replaces its fields and events in place, keeping uids (events keep the uid of the
 * event at the same position) so clients holding them stay valid.
 *
 * Every filter is an indexed equality or IN over `advisories`, `advisory_aliases` or
 * `advisory_events`; only the free-text `query` is a substring test over the candidate rows.
 * No proto types enter here: an event's oneof content is an opaque JSON `body`.
 */
import { and, eq, inArray, type SQL, sql } from "drizzle-orm";
import type { Db } from "./db.js";
import { advisoryRecordOf, eventsByAdvisory, planAdvisoryWrite } from "../advisory-rows.js";
import type { Bind, ContainsText } from "../list-predicates.js";
import { advisoryListConditions } from "../registry-filters.js";
import { preparedLists } from "./list-query.js";
import { requireGroup } from "./references.js";
import type { UpsertOutcome } from "../repos.js";
import { type AdvisoryRow, advisories, advisoryAliases, advisoryEvents } from "./schema.js";
import { newUidp } from "../uidp.js";
import {
  ADVISORY_ORDERS,
  type AdvisoryEventRecord,
  type AdvisoryFields,
  type AdvisoryRecord,
  type AdvisoryListFilter,
  type AdvisoriesRepository,
} from "../advisories.js";

function eventsOf(tx: Db, uids: readonly string[]): Map<string, AdvisoryEventRecord[]> {
  if (uids.length === 0) return new Map();
  return eventsByAdvisory(
    tx
      .select()
      .from(advisoryEvents)
      .where(inArray(advisoryEvents.advisoryUid, [...uids]))
      .orderBy(advisoryEvents.advisoryUid, advisoryEvents.seq)
      .all(),
  );
}

function withEvents(tx: Db, rows: readonly AdvisoryRow[]): AdvisoryRecord[] {
  const events = eventsOf(
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
export function upsertAdvisoryInTx(tx: Db, parentUid: string, f: AdvisoryFields, now: number): { row: AdvisoryRecord; outcome: UpsertOutcome } {
  requireGroup(tx, parentUid);
  const existing = tx
    .select()
    .from(advisories)
    .where(and(eq(advisories.parentUid, parentUid), eq(advisories.advisoryId, f.advisoryId), eq(advisories.artifactName, f.artifactName)))
    .get();
  const oldEvents = existing ? (eventsOf(tx, [existing.uid]).get(existing.uid) ?? []) : [];
  const uid = existing?.uid ?? newUidp(parentUid);
  const plan = planAdvisoryWrite(uid, f, existing, oldEvents, now);
  if (plan.outcome === "unchanged") return { row: advisoryRecordOf(existing as AdvisoryRow, oldEvents), outcome: "unchanged" };
  if (existing) {
    tx.update(advisories)
      .set({ ...plan.columns, updateTime: plan.updateTime })
      .where(eq(advisories.uid, uid))
      .run();
    tx.delete(advisoryAliases).where(eq(advisoryAliases.advisoryUid, uid)).run();
    tx.delete(advisoryEvents).where(eq(advisoryEvents.advisoryUid, uid)).run();
  } else {
    tx.insert(advisories)
      .values({ uid, parentUid, ...plan.columns, updateTime: plan.updateTime })
      .run();
  }
  for (const alias of plan.aliases) tx.insert(advisoryAliases).values({ advisoryUid: uid, alias }).run();
  for (const e of plan.events) {
    tx.insert(advisoryEvents)
      .values({ ...e, uid: e.uid ?? newUidp(uid) })
      .run();
  }
  const row = tx.select().from(advisories).where(eq(advisories.uid, uid)).get() as AdvisoryRow;
  return { row: withEvents(tx, [row])[0] as AdvisoryRecord, outcome: plan.outcome };
}

/** SQLite's substring test (advisory-rows.ts `advisoryQueryText`). */
const contains: ContainsText = (col, needle) => sql`instr(lower(${col}), ${needle}) > 0`;

/** The WHERE of an advisory list (registry-filters.ts) over this engine's tables. */
function advisoryListWhere(f: AdvisoryListFilter, bind?: Bind): SQL | undefined {
  return advisoryListConditions({ advisories, aliases: advisoryAliases, events: advisoryEvents }, f, contains, bind);
}

export function createAdvisoriesRepository(db: Db): AdvisoriesRepository {
  // list and count run statements prepared once per filter shape (list-query.ts preparedLists).
  const lists = preparedLists(db, advisories, advisories.uid, "advisories");
  return {
    async get(uid) {
      const row = db.select().from(advisories).where(eq(advisories.uid, uid)).get();
      return row ? withEvents(db, [row])[0] : undefined;
    },

    async list(filter, page) {
      const where = (bind: Bind) => advisoryListWhere(filter, bind);
      const rows = lists.page(where, advisories[ADVISORY_ORDERS.fields[page.order]], page) as AdvisoryRow[];
      return withEvents(db, rows);
    },

    async count(filter) {
      return lists.count((bind) => advisoryListWhere(filter, bind));
    },
  };
}
