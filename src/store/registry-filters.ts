/**
 * The WHERE of the registry's Lists (tags, end-of-life tags, advisories), built once for every
 * engine over that engine's tables with drizzle's dialect-neutral operators, so that a filter
 * selects the same rows everywhere. The one piece said differently per dialect, a substring
 * test, is the engine's `ContainsText`. Every value goes through `bind` (inline by default;
 * SQLite's prepared Lists pass named placeholders).
 */
import type { Column, SQL, Table } from "drizzle-orm";
import { and, asc, desc, eq, gte, inArray, notInArray, or, sql } from "drizzle-orm";
import type { AdvisoryListFilter } from "./advisories.js";
import { advisoryQueryText } from "./advisory-rows.js";
import { allOf, type Bind, type ContainsText, inline, textContains, textEquals, textIn, uidpConditions, withinConditions } from "./list-predicates.js";
import { includedClasses, NOT_VERSIONS } from "./registry-rows.js";
import type { TagListFilter } from "./tags.js";

/** The tags table's columns a tag list reads. */
export interface TagFilterColumns {
  readonly uid: Column;
  readonly repoUid: Column;
  readonly name: Column;
  readonly digest: Column;
  readonly updateTime: Column;
  readonly generated: Column;
}

/** The WHERE of a tag list (also of the end-of-life list, which filters the same tags). */
export function tagListConditions(tags: TagFilterColumns, f: TagListFilter, bind: Bind = inline): SQL | undefined {
  const classes = includedClasses(f.include);
  return allOf([
    ...uidpConditions(tags.uid, tags.repoUid, f.uidp, bind),
    f.name !== undefined ? textEquals(tags.name, f.name, bind) : undefined,
    f.digest !== undefined ? textEquals(tags.digest, f.digest, bind) : undefined,
    f.updatedSince !== undefined ? gte(tags.updateTime, bind(f.updatedSince)) : undefined,
    // Ordinary tags are always included; a full set of classes needs no condition at all.
    classes !== undefined ? inArray(tags.generated, classes.map(bind)) : undefined,
    withinConditions(tags.uid, f.within, bind),
  ]);
}

/**
 * The reads of a repo's tags summary (GetRepoTagsSummary), over an engine's tags table: the
 * included tags, the one named "latest" (else the newest), and the longest other name on its
 * digest (ties by name), never "latest" or "latest-dev".
 */
export function tagsSummaryQueries(tags: TagFilterColumns, repoUid: string, include: TagListFilter["include"]) {
  const classes = includedClasses(include);
  const matching = and(eq(tags.repoUid, repoUid), classes !== undefined ? inArray(tags.generated, classes) : undefined);
  return {
    matching,
    namedLatest: and(matching, eq(tags.name, "latest")),
    newestFirst: [desc(tags.updateTime), desc(tags.uid)],
    versionsOf: (latest: { readonly name: string; readonly digest: string }) =>
      and(matching, eq(tags.digest, latest.digest), notInArray(tags.name, [...NOT_VERSIONS, latest.name])),
    longestFirst: [desc(sql`length(${tags.name})`), asc(tags.name)],
  };
}

/** The advisory tables an advisory list reads. */
export interface AdvisoryFilterTables {
  readonly advisories: Table & {
    readonly uid: Column;
    readonly parentUid: Column;
    readonly advisoryId: Column;
    readonly legacyAdvisoryId: Column;
    readonly artifactName: Column;
    readonly artifactType: Column;
    readonly artifactArchitecture: Column;
    readonly componentName: Column;
    readonly componentType: Column;
    readonly componentLocation: Column;
    readonly origin: Column;
    readonly latestEventType: Column;
  };
  readonly aliases: Table & { readonly advisoryUid: Column; readonly alias: Column };
  readonly events: Table & {
    readonly advisoryUid: Column;
    readonly reviewState: Column;
    readonly author: Column;
    readonly reviewer: Column;
    readonly eventType: Column;
  };
}

/**
 * The WHERE of an advisory list: every filter an indexed equality or IN over `advisories`,
 * `advisory_aliases` or `advisory_events`; only the free-text `query` is a substring test over
 * the candidate rows (advisory-rows.ts `advisoryQueryText` says how it folds case).
 */
export function advisoryListConditions(t: AdvisoryFilterTables, f: AdvisoryListFilter, contains: ContainsText, bind: Bind = inline): SQL | undefined {
  const a = t.advisories;
  const anyText = (col: Column, values: readonly string[] | undefined): SQL | undefined =>
    values && values.length > 0 ? textIn(col, values, bind) : undefined;
  const anyNumber = (col: Column, values: readonly number[]): SQL => inArray(col, values.map(bind));
  const uidIn = (table: Table & { readonly advisoryUid: Column }, cond: SQL) => sql`${a.uid} IN (SELECT ${table.advisoryUid} FROM ${table} WHERE ${cond})`;
  const q = advisoryQueryText(f.query);
  return allOf([
    ...uidpConditions(a.uid, a.parentUid, f.uidp, bind),
    withinConditions(a.uid, f.within, bind),
    anyText(a.advisoryId, f.advisoryIds),
    anyText(a.legacyAdvisoryId, f.legacyAdvisoryIds),
    f.origin !== undefined ? textEquals(a.origin, f.origin, bind) : anyText(a.artifactName, f.artifactNames),
    anyText(a.artifactType, f.artifactTypes),
    anyText(a.artifactArchitecture, f.artifactArchitectures),
    anyText(a.componentName, f.componentNames),
    anyText(a.componentType, f.componentTypes),
    anyText(a.componentLocation, f.componentLocations),
    f.aliases && f.aliases.length > 0 ? uidIn(t.aliases, textIn(t.aliases.alias, f.aliases, bind)) : undefined,
    f.eventReviewStates?.length ? uidIn(t.events, anyNumber(t.events.reviewState, f.eventReviewStates)) : undefined,
    f.eventAuthors?.length ? uidIn(t.events, textIn(t.events.author, f.eventAuthors, bind)) : undefined,
    f.excludeEventAuthors?.length
      ? sql`${a.uid} NOT IN (SELECT ${t.events.advisoryUid} FROM ${t.events} WHERE ${textIn(t.events.author, f.excludeEventAuthors, bind)})`
      : undefined,
    f.eventReviewers?.length ? uidIn(t.events, textIn(t.events.reviewer, f.eventReviewers, bind)) : undefined,
    f.eventTypes?.length ? uidIn(t.events, anyNumber(t.events.eventType, f.eventTypes)) : undefined,
    f.latestEventType !== undefined ? eq(a.latestEventType, bind(f.latestEventType)) : undefined,
    q
      ? or(
          textContains(contains, a.artifactName, q, bind),
          textContains(contains, a.componentName, q, bind),
          uidIn(t.aliases, textContains(contains, t.aliases.alias, q, bind)),
        )
      : undefined,
  ]);
}
