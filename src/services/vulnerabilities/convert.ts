/**
 * Advisories between proto messages and store records, both ways: the API reads them, and the
 * importer writes records built from proto JSON (so it accepts exactly the API's shape).
 *
 * An event's `type` oneof is stored as its EventTypeFilter number plus the member's proto JSON
 * (`body`), so the store never interprets event content.
 */
import { create, fromJson, type JsonValue, toJson } from "@bufbuild/protobuf";
import { timestampFromMs, timestampMs } from "@bufbuild/protobuf/wkt";
import {
  type Advisory,
  type AdvisoryEvent,
  AdvisoryEventSchema,
  AdvisorySchema,
  EventTypeFilter,
} from "../../../gen/chainguard/platform/vulnerabilities/v2beta1/advisories_pb.js";
import type { AdvisoryEventFields, AdvisoryEventRecord, AdvisoryFields, AdvisoryRecord } from "../../store/advisories.js";

type EventCase = NonNullable<AdvisoryEvent["type"]["case"]>;

/** oneof member (localName) ↔ EventTypeFilter number. */
const EVENT_TYPES: Readonly<Record<EventCase, EventTypeFilter>> = {
  detection: EventTypeFilter.DETECTION,
  truePositiveDetermination: EventTypeFilter.TRUE_POSITIVE_DETERMINATION,
  fixed: EventTypeFilter.FIXED,
  falsePositiveDetermination: EventTypeFilter.FALSE_POSITIVE_DETERMINATION,
  analysisNotPlanned: EventTypeFilter.ANALYSIS_NOT_PLANNED,
  fixNotPlanned: EventTypeFilter.FIX_NOT_PLANNED,
  pendingUpstreamFix: EventTypeFilter.PENDING_UPSTREAM_FIX,
  patched: EventTypeFilter.PATCHED,
};

function memberField(c: EventCase) {
  const field = AdvisoryEventSchema.fields.find((f) => f.localName === c);
  if (field?.fieldKind !== "message") throw new Error(`no message member ${c} in AdvisoryEvent`);
  return field;
}

function eventToProto(e: AdvisoryEventRecord): AdvisoryEvent {
  const entry = Object.entries(EVENT_TYPES).find(([, n]) => n === e.eventType);
  let type: AdvisoryEvent["type"] = { case: undefined };
  if (entry) {
    const c = entry[0] as EventCase;
    type = { case: c, value: fromJson(memberField(c).message, JSON.parse(e.body) as JsonValue) } as AdvisoryEvent["type"];
  }
  return create(AdvisoryEventSchema, {
    uid: e.uid,
    createTime: timestampFromMs(e.createTime),
    findings: e.findings ?? new Uint8Array(),
    author: e.author,
    reviewer: e.reviewer,
    reviewState: e.reviewState,
    issue: e.issue ?? undefined,
    type,
  });
}

export function advisoryToProto(row: AdvisoryRecord): Advisory {
  return create(AdvisorySchema, {
    uid: row.uid,
    advisoryId: row.advisoryId,
    createTime: timestampFromMs(row.createTime),
    updateTime: timestampFromMs(row.updateTime),
    deleteTime: row.deleteTime === null ? undefined : timestampFromMs(row.deleteTime),
    author: row.author,
    artifactName: row.artifactName,
    artifactType: row.artifactType,
    artifactArchitecture: row.artifactArchitecture,
    componentName: row.componentName,
    componentLocation: row.componentLocation,
    componentType: row.componentType,
    aliases: [...row.aliases],
    events: row.events.map(eventToProto),
    legacyAdvisoryId: row.legacyAdvisoryId ?? undefined,
    severities: row.severities.map((s) => ({ type: s.type, score: s.score })),
  });
}

export function eventFields(e: AdvisoryEvent): AdvisoryEventFields {
  const c = e.type.case;
  return {
    createTime: e.createTime ? Number(timestampMs(e.createTime)) : undefined,
    author: e.author,
    reviewer: e.reviewer,
    reviewState: e.reviewState,
    issue: e.issue ?? null,
    eventType: c ? EVENT_TYPES[c] : 0,
    body: c ? JSON.stringify(toJson(memberField(c).message, e.type.value as never)) : "{}",
    findings: e.findings.length > 0 ? e.findings : null,
  };
}

/** Store fields of an advisory given as a proto message (the importer's native format). */
export function advisoryFields(a: Advisory, origin?: string): AdvisoryFields {
  return {
    advisoryId: a.advisoryId,
    legacyAdvisoryId: a.legacyAdvisoryId ?? null,
    author: a.author,
    artifactName: a.artifactName,
    artifactType: a.artifactType,
    artifactArchitecture: a.artifactArchitecture,
    componentName: a.componentName,
    componentLocation: a.componentLocation,
    componentType: a.componentType,
    origin,
    aliases: a.aliases,
    severities: a.severities.map((s) => ({ type: s.type, score: s.score })),
    deleteTime: a.deleteTime ? Number(timestampMs(a.deleteTime)) : null,
    createTime: a.createTime ? Number(timestampMs(a.createTime)) : undefined,
    updateTime: a.updateTime ? Number(timestampMs(a.updateTime)) : undefined,
    events: a.events.map(eventFields),
  };
}
