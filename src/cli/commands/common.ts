/**
 * Small pieces every resource command file uses: the action wrapper that builds the client
 * context, printing, the delete confirmation, and flags that take a duration.
 */
import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import { type Command, InvalidArgumentError } from "commander";
import { type CliContext, connect } from "../client.js";
import { usageError } from "../exit-codes.js";
import type { Io } from "../io.js";
import { type StoreTarget, storeTargetFrom } from "../../store/target.js";
import { render, type ResourceView } from "../output.js";

/**
 * Wraps a command body: commander passes (...arguments, options, command); the body gets
 * the client context, its options and the positional arguments.
 */
export function clientAction<O, A extends string[]>(
  io: Io,
  body: (ctx: CliContext, opts: O, ...args: A) => Promise<void>,
): (...all: unknown[]) => Promise<void> {
  return async (...all) => {
    const cmd = all[all.length - 1] as Command;
    const ctx = await connect(cmd, io);
    await body(ctx, cmd.opts<O & object>(), ...(all.slice(0, -2) as A));
  };
}

/** Prints resources in the chosen format. */
export function print<S extends DescMessage>(ctx: CliContext, view: ResourceView<S>, items: readonly MessageShape<S>[], single = false): void {
  ctx.io.out(render(view, items, ctx.format, single));
}

/** After a delete: the uid on stdout with `-o id`, else a confirmation on stderr (stdout stays empty). */
export function printDeleted(ctx: CliContext, kind: string, uid: string): void {
  if (ctx.format === "id") ctx.io.out(`${uid}\n`);
  else ctx.io.err(`deleted ${kind} ${uid}\n`);
}

/** `90s`, `30m`, `24h`, `7d` → seconds (a commander argument parser). */
export function durationSeconds(value: string): number {
  const m = /^(\d+)([smhd])$/.exec(value.trim());
  if (!m) throw new InvalidArgumentError("must be a number followed by s, m, h or d (e.g. 24h)");
  const unit = { s: 1, m: 60, h: 3600, d: 86400 }[m[2] as "s" | "m" | "h" | "d"];
  return Number(m[1]) * unit;
}

/** Accumulates a repeatable string option (`--x a --x b`). */
export function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

/** The flags of a command that opens the database itself (`--database` wins over `--data`). */
export interface StoreFlags {
  data?: string;
  database?: string;
}

export const DATA_FLAG_HELP = "data directory of the SQLite database [env TRELLIS_DATA, default ./data]";
export const DATABASE_FLAG_HELP = "a PostgreSQL database instead: postgres://user:password@host:port/db [env TRELLIS_DATABASE]";

/** The database a local command's flags and environment name; a malformed URL is a usage error. */
export function storeTargetOf(flags: StoreFlags, io: Io): StoreTarget {
  try {
    return storeTargetFrom(flags, io.env);
  } catch (err) {
    throw usageError((err as Error).message);
  }
}
