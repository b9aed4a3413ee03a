/**
 * How an advisory is laid out in rows, the same on every engine: the advisory row (aliases and
 * severities as JSON, the latest approved event's type kept for its filter), its events in
 * position order, and what a re-import changes. Each engine's repository and import writer
 * read and write their own tables through these, so an advisory reads back the same, and a
 * re-import says "updated" or "unchanged" alike, on every engine.
 */
import {
  type AdvisoryEventFields,
  type AdvisoryEventRecord,
  type AdvisoryFields,
  type AdvisoryRecord,
  REVIEW_STATE_APPROVED,
  type SeverityRecord,
} from "./advisories.js";
import { parseStringList } from "./registry-rows.js";

/** An advisory row as every engine's table returns it. */
export interface StoredAdvisoryRow {
  readonly uid: string;
  readonly parentUid: string;
  readonly advisoryId: string;
  readonly legacyAdvisoryId: string | null;
  readonly author: string;
  readonly artifactName: string;
  readonly artifactType: string;
  readonly artifactArchitecture: string;
  readonly componentName: string;
  readonly componentLocation: string;
  readonly componentType: string;
  readonly origin: string;
  readonly aliases: string;
  readonly severities: string;
  readonly latestEventType: number;
  readonly deleteTime: number | null;
  readonly createTime: number;
  readonly updateTime: number;
}

/** An advisory event row as every engine's table returns it. */
export interface StoredAdvisoryEventRow {
  readonly uid: string;
  readonly advisoryUid: string;
  readonly seq: number;
  readonly author: string;
  readonly reviewer: string;
  readonly reviewState: number;
  readonly issue: string | null;
  readonly eventType: number;
  readonly body: string;
  readonly findings: Buffer | null;
  readonly createTime: number;
}

function parseSeverities(text: string): SeverityRecord[] {
  try {
    const v: unknown = JSON.parse(text);
    return Array.isArray(v) ? (v as SeverityRecord[]) : [];
  } catch {
    return [];
  }
}

export function advisoryEventRecordOf(row: StoredAdvisoryEventRow): AdvisoryEventRecord {
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

export function advisoryRecordOf(row: StoredAdvisoryRow, events: readonly AdvisoryEventRecord[]): AdvisoryRecord {
  const { latestEventType: _latest, ...rest } = row;
  return { ...rest, aliases: parseStringList(row.aliases), severities: parseSeverities(row.severities), events };
}

/** Event rows (ordered by advisory, then position) grouped per advisory as records. */
export function eventsByAdvisory(rows: readonly StoredAdvisoryEventRow[]): Map<string, AdvisoryEventRecord[]> {
  const out = new Map<string, AdvisoryEventRecord[]>();
  for (const r of rows) {
    const list = out.get(r.advisoryUid) ?? [];
    list.push(advisoryEventRecordOf(r));
    out.set(r.advisoryUid, list);
  }
  return out;
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

type AdvisoryColumns = Omit<StoredAdvisoryRow, "uid" | "parentUid" | "updateTime">;

/** A stable text of everything a re-import may change, to tell "updated" from "unchanged". */
function fingerprint(row: AdvisoryColumns, events: readonly AdvisoryEventFields[]): string {
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

/** One event row to write: its position, and the uid of the event stored there before, if any. */
export interface PlannedEventRow extends Omit<StoredAdvisoryEventRow, "uid"> {
  readonly uid: string | undefined;
}

/** What an import of `f` over `existing` (with its events) writes. */
export type AdvisoryWritePlan =
  | { readonly outcome: "unchanged" }
  | {
      readonly outcome: "loaded" | "updated";
      readonly columns: AdvisoryColumns;
      readonly updateTime: number;
      /** The distinct aliases, one row each. */
      readonly aliases: readonly string[];
      readonly events: readonly PlannedEventRow[];
    };

/**
 * Plans the import of `f` as advisory `uid`: over the stored row and events when it exists
 * (events keep the uid and, when the import omits it, the time of the event at their
 * position), or new. The engine writes the plan in its transaction.
 */
export function planAdvisoryWrite(
  uid: string,
  f: AdvisoryFields,
  existing: StoredAdvisoryRow | undefined,
  oldEvents: readonly AdvisoryEventRecord[],
  now: number,
): AdvisoryWritePlan {
  const createTime = f.createTime ?? existing?.createTime ?? now;
  const events = f.events.map((e, i) => ({ ...e, createTime: e.createTime ?? oldEvents[i]?.createTime ?? createTime }));
  const columns: AdvisoryColumns = {
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
      return { outcome: "unchanged" };
    }
  }
  return {
    outcome: existing ? "updated" : "loaded",
    columns,
    updateTime: f.updateTime ?? now,
    aliases: [...new Set(f.aliases)],
    events: events.map((e, seq) => ({
      uid: oldEvents[seq]?.uid,
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
    })),
  };
}

/**
 * The free-text `query` as the engines compare it: folded by JavaScript here, then looked for
 * in each column folded by the engine's ASCII-only lower() (SQLite's lower(); PostgreSQL's on
 * COLLATE "C" text), as a plain substring (no pattern characters: `%` and `_` are themselves).
 * Undefined when there is no query.
 */
export function advisoryQueryText(query: string | undefined): string | undefined {
  return query ? query.toLowerCase() : undefined;
}
