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
import { and, eq, inArray, or, type SQL, sql } from "drizzle-orm";
import type { Db } from "./db.js";
import { allOf, type Bind, parseStringList, preparedLists, uidpConditions, withinConditions } from "./list-query.js";
import { requireGroup } from "./references.js";
import type { UpsertOutcome } from "../repos.js";
import { type AdvisoryEventRow, type AdvisoryRow, advisories, advisoryAliases, advisoryEvents } from "./schema.js";
import { newUidp } from "../uidp.js";
import {
  ADVISORY_ORDERS,
  REVIEW_STATE_APPROVED,
  type SeverityRecord,
  type AdvisoryEventFields,
  type AdvisoryEventRecord,
  type AdvisoryFields,
  type AdvisoryRecord,
  type AdvisoryListFilter,
  type AdvisoriesRepository,
} from "../advisories.js";

function parseSeverities(text: string): SeverityRecord[] {
  try {
    const v: unknown = JSON.parse(text);
    return Array.isArray(v) ? (v as SeverityRecord[]) : [];
  } catch {
    return [];
  }
}

function toEventRecord(row: AdvisoryEventRow): AdvisoryEventRecord {
  return {
    uid: row.uid,
    createTime: row.createTime,
    author: row.author,
    reviewer: row.reviewer,
    reviewState: row.reviewState,
    issue: row.issue,
    eventType: row.eventType,
    body: row.body,
    findings: row.findings === null ? null : new Uint8Array(row.findings),
  };
}

function toAdvisoryRecord(row: AdvisoryRow, events: readonly AdvisoryEventRecord[]): AdvisoryRecord {
  const { latestEventType: _latest, ...rest } = row;
  return { ...rest, aliases: parseStringList(row.aliases), severities: parseSeverities(row.severities), events };
}

function eventsOf(tx: Db, uids: readonly string[]): Map<string, AdvisoryEventRecord[]> {
  const out = new Map<string, AdvisoryEventRecord[]>();
  if (uids.length === 0) return out;
  const rows = tx
    .select()
    .from(advisoryEvents)
    .where(inArray(advisoryEvents.advisoryUid, [...uids]))
    .orderBy(advisoryEvents.advisoryUid, advisoryEvents.seq)
    .all();
  for (const r of rows) {
    const list = out.get(r.advisoryUid) ?? [];
    list.push(toEventRecord(r));
    out.set(r.advisoryUid, list);
  }
  return out;
}

function withEvents(tx: Db, rows: readonly AdvisoryRow[]): AdvisoryRecord[] {
  const events = eventsOf(
    tx,
    rows.map((r) => r.uid),
  );
  return rows.map((r) => toAdvisoryRecord(r, events.get(r.uid) ?? []));
}

/** EventTypeFilter of the most recent approved event (by time, then position); 0 when none. */
function latestApprovedType(events: readonly { createTime: number; reviewState: number; eventType: number }[]): number {
  let best: { t: number; type: number } | undefined;
  for (const e of events) {
    if (e.reviewState === REVIEW_STATE_APPROVED && (best === undefined || e.createTime >= best.t)) {
      best = { t: e.createTime, type: e.eventType };
    }
  }
  return best?.type ?? 0;
}

/** A stable text of everything a re-import may change, to tell "updated" from "unchanged". */
function fingerprint(row: Omit<AdvisoryRow, "uid" | "parentUid" | "updateTime">, events: readonly AdvisoryEventFields[]): string {
  return JSON.stringify([
    Object.entries(row).sort(([a], [b]) => a.localeCompare(b)),
    events.map((e) => [
      e.createTime,
      e.author,
      e.reviewer,
      e.reviewState,
      e.issue,
      e.eventType,
      e.body,
      e.findings ? Buffer.from(e.findings).toString("base64") : null,
    ]),
  ]);
}

/**
 * Inserts or replaces the advisory keyed by (parentUid, advisoryId, artifactName), with its
 * aliases and events, in the caller's transaction. @throws NOT_FOUND (group).
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
  const createTime = f.createTime ?? existing?.createTime ?? now;
  const events = f.events.map((e, i) => ({ ...e, createTime: e.createTime ?? oldEvents[i]?.createTime ?? createTime }));
  const columns = {
    advisoryId: f.advisoryId,
    legacyAdvisoryId: f.legacyAdvisoryId,
    author: f.author,
    artifactName: f.artifactName,
    artifactType: f.artifactType,
    artifactArchitecture: f.artifactArchitecture,
    componentName: f.componentName,
    componentLocation: f.componentLocation,
    componentType: f.componentType,
    origin: f.origin ?? f.artifactName,
    aliases: JSON.stringify(f.aliases),
    severities: JSON.stringify(f.severities),
    latestEventType: latestApprovedType(events),
    deleteTime: f.deleteTime,
    createTime,
  };
  if (existing) {
    const { uid: _u, parentUid: _p, updateTime: _t, ...stored } = existing;
    if (fingerprint(stored, oldEvents) === fingerprint(columns, events) && (f.updateTime ?? existing.updateTime) === existing.updateTime) {
      return { row: toAdvisoryRecord(existing, oldEvents), outcome: "unchanged" };
    }
    tx.update(advisories)
      .set({ ...columns, updateTime: f.updateTime ?? now })
      .where(eq(advisories.uid, uid))
      .run();
    tx.delete(advisoryAliases).where(eq(advisoryAliases.advisoryUid, uid)).run();
    tx.delete(advisoryEvents).where(eq(advisoryEvents.advisoryUid, uid)).run();
  } else {
    tx.insert(advisories)
      .values({ uid, parentUid, ...columns, updateTime: f.updateTime ?? now })
      .run();
  }
  for (const alias of new Set(f.aliases)) tx.insert(advisoryAliases).values({ advisoryUid: uid, alias }).run();
  events.forEach((e, seq) => {
    tx.insert(advisoryEvents)
      .values({
        uid: oldEvents[seq]?.uid ?? newUidp(uid),
        advisoryUid: uid,
        seq,
        author: e.author,
        reviewer: e.reviewer,
        reviewState: e.reviewState,
        issue: e.issue,
        eventType: e.eventType,
        body: e.body,
        findings: e.findings === null ? null : Buffer.from(e.findings),
        createTime: e.createTime,
      })
      .run();
  });
  const row = tx.select().from(advisories).where(eq(advisories.uid, uid)).get() as AdvisoryRow;
  return { row: withEvents(tx, [row])[0] as AdvisoryRecord, outcome: existing ? "updated" : "loaded" };
}

/** `advisories.uid IN (SELECT advisory_uid FROM <table> WHERE <cond>)`. */
function uidIn(sub: SQL): SQL {
  return sql`${advisories.uid} IN ${sub}`;
}

/**
 * The WHERE of an advisory list; exported for the query-plan test. Every value goes through
 * `bind` (inline by default; named placeholders when the statement is prepared per shape).
 */
export function advisoryListWhere(db: Db, f: AdvisoryListFilter, bind: Bind = (v) => v): SQL | undefined {
  const anyOf = <T extends string | number>(col: Parameters<typeof inArray>[0], values: readonly T[] | undefined): SQL | undefined =>
    values && values.length > 0 ? inArray(col, values.map(bind)) : undefined;
  const eventsWhere = (cond: SQL) => uidIn(sql`(${db.select({ u: advisoryEvents.advisoryUid }).from(advisoryEvents).where(cond)})`);
  const q = f.query?.toLowerCase();
  return allOf([
    ...uidpConditions(advisories.uid, advisories.parentUid, f.uidp, bind),
    withinConditions(advisories.uid, f.within, bind),
    anyOf(advisories.advisoryId, f.advisoryIds),
    anyOf(advisories.legacyAdvisoryId, f.legacyAdvisoryIds),
    f.origin !== undefined ? eq(advisories.origin, bind(f.origin) as string) : anyOf(advisories.artifactName, f.artifactNames),
    anyOf(advisories.artifactType, f.artifactTypes),
    anyOf(advisories.artifactArchitecture, f.artifactArchitectures),
    anyOf(advisories.componentName, f.componentNames),
    anyOf(advisories.componentType, f.componentTypes),
    anyOf(advisories.componentLocation, f.componentLocations),
    f.aliases && f.aliases.length > 0
      ? uidIn(sql`(${db.select({ u: advisoryAliases.advisoryUid }).from(advisoryAliases).where(anyOf(advisoryAliases.alias, f.aliases))})`)
      : undefined,
    f.eventReviewStates?.length ? eventsWhere(anyOf(advisoryEvents.reviewState, f.eventReviewStates) as SQL) : undefined,
    f.eventAuthors?.length ? eventsWhere(anyOf(advisoryEvents.author, f.eventAuthors) as SQL) : undefined,
    f.excludeEventAuthors?.length
      ? sql`${advisories.uid} NOT IN (${db.select({ u: advisoryEvents.advisoryUid }).from(advisoryEvents).where(anyOf(advisoryEvents.author, f.excludeEventAuthors))})`
      : undefined,
    f.eventReviewers?.length ? eventsWhere(anyOf(advisoryEvents.reviewer, f.eventReviewers) as SQL) : undefined,
    f.eventTypes?.length ? eventsWhere(anyOf(advisoryEvents.eventType, f.eventTypes) as SQL) : undefined,
    f.latestEventType !== undefined ? eq(advisories.latestEventType, bind(f.latestEventType) as number) : undefined,
    q
      ? or(
          sql`instr(lower(${advisories.artifactName}), ${bind(q)}) > 0`,
          sql`instr(lower(${advisories.componentName}), ${bind(q)}) > 0`,
          uidIn(
            sql`(${db
              .select({ u: advisoryAliases.advisoryUid })
              .from(advisoryAliases)
              .where(sql`instr(lower(${advisoryAliases.alias}), ${bind(q)}) > 0`)})`,
          ),
        )
      : undefined,
  ]);
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
      const where = (bind: Bind) => advisoryListWhere(db, filter, bind);
      const rows = lists.page(where, advisories[ADVISORY_ORDERS.fields[page.order]], page) as AdvisoryRow[];
      return withEvents(db, rows);
    },

    async count(filter) {
      return lists.count((bind) => advisoryListWhere(db, filter, bind));
    },
  };
}
