/**
 * Output formats for every resource command (`-o table|json|yaml|id`).
 *
 * - json: exactly what the REST API returns for the same resource: the REST door's own
 *   rendering (src/transcode/render-response.ts: proto3 JSON with default values written out,
 *   timestamps with three fractional digits, unset `*_UNSPECIFIED` enums left out). A list
 *   prints a JSON array of resources, each as REST renders it.
 * - yaml: the same value as json, written by the `yaml` library.
 * - id: one uid per line, for `xargs` and `$(...)`.
 * - table: aligned columns chosen per resource; the default when stdout is a terminal
 *   (json otherwise, so pipes get something parseable).
 */
import type { DescMessage, Message, MessageShape } from "@bufbuild/protobuf";
import { renderWithToJson } from "../transcode/render-response.js";
import { stringify as toYaml } from "yaml";
import { usageError } from "./exit-codes.js";

export const OUTPUT_FORMATS = ["table", "json", "yaml", "id"] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

/** One table column: a header and how to read the cell from the resource. */
export interface Column<T> {
  readonly header: string;
  readonly cell: (item: T) => string;
}

/** How to print one kind of resource. */
export interface ResourceView<S extends DescMessage> {
  readonly schema: S;
  readonly columns: readonly Column<MessageShape<S>>[];
  /** The value `-o id` prints; the uid for every resource we have. */
  readonly id: (item: MessageShape<S>) => string;
}

/** The effective format: the flag, else table on a terminal and json in a pipe. */
export function resolveFormat(flag: string | undefined, isTty: boolean): OutputFormat {
  if (flag === undefined) return isTty ? "table" : "json";
  if (!(OUTPUT_FORMATS as readonly string[]).includes(flag)) {
    throw usageError(`-o must be one of ${OUTPUT_FORMATS.join(", ")} (got ${JSON.stringify(flag)})`);
  }
  return flag as OutputFormat;
}

/** Renders resources as `format`; `single` prints an object instead of a one-element list. */
export function render<S extends DescMessage>(view: ResourceView<S>, items: readonly MessageShape<S>[], format: OutputFormat, single = false): string {
  switch (format) {
    case "id":
      return items.map((i) => `${view.id(i)}\n`).join("");
    case "json":
    case "yaml": {
      const values = items.map((i) => renderWithToJson(view.schema, i as Message));
      const value = single ? values[0] : values;
      return format === "json" ? `${JSON.stringify(value, null, 2)}\n` : toYaml(value);
    }
    case "table":
      return single ? verticalTable(view, items[0]) : table(view.columns, items);
  }
}

/** `HEADER  HEADER` rows aligned on the widest cell, like kubectl's default output. */
export function table<T>(columns: readonly Column<T>[], items: readonly T[]): string {
  const rows = [columns.map((c) => c.header), ...items.map((i) => columns.map((c) => oneLine(c.cell(i))))];
  const widths = columns.map((_, k) => Math.max(...rows.map((r) => r[k]!.length)));
  return rows
    .map((r) =>
      r
        .map((cell, k) => (k === r.length - 1 ? cell : cell.padEnd(widths[k]!)))
        .join("  ")
        .trimEnd(),
    )
    .join("\n")
    .concat("\n");
}

/** A single resource on a terminal: one `Header: value` line per column. */
function verticalTable<S extends DescMessage>(view: ResourceView<S>, item: MessageShape<S> | undefined): string {
  if (item === undefined) return "";
  const width = Math.max(...view.columns.map((c) => c.header.length)) + 1;
  return view.columns
    .map((c) => `${`${c.header}:`.padEnd(width)} ${oneLine(c.cell(item))}`.trimEnd())
    .join("\n")
    .concat("\n");
}

/** Cells stay on one line whatever a description holds. */
function oneLine(s: string): string {
  return s.replace(/\s*\n\s*/g, " ");
}

/** RFC 3339 rendering of an optional protobuf Timestamp, "" when unset. */
export function time(ts: { seconds: bigint; nanos: number } | undefined): string {
  if (!ts) return "";
  return new Date(Number(ts.seconds) * 1000 + Math.floor(ts.nanos / 1e6)).toISOString();
}
