/**
 * `trellis db copy --from DIR --to postgres://…`: moves a whole SQLite deployment to an empty
 * PostgreSQL database, every table, every value verbatim (uids, timestamps, the server keys),
 * so API tokens signed before the move still verify and page tokens still continue.
 *
 * Consistency. The source is opened read-only with no data-directory lock (a server may keep
 * running; stop it first if its writes after this moment must not be lost), inside one read
 * transaction held for the whole copy: the copy is the database as it was at one instant. The
 * target is written in ONE PostgreSQL transaction, so a copy that fails anywhere (a lost
 * connection, a value PostgreSQL refuses, a checksum that differs) leaves the target as empty
 * as it was. A transaction-level advisory lock, taken before the target is found empty, makes a
 * second copy into the same database wait and then find it full.
 *
 * Verification. Each table's rows are read in the order of its primary key (or its unique
 * key), which both engines sort bytewise (PostgreSQL's text columns are COLLATE "C"), and fed
 * to one function, `rowChecksum`, that writes every value in one canonical form: the same code
 * digests the rows as read from SQLite while copying and as read back from PostgreSQL before
 * commit. Counts and digests must match for every table, or nothing is committed.
 *
 * `child_counts`, PostgreSQL's own table of counts derived from the rows (schema.ts), is not
 * copied: SQLite has no such table, and the triggers that keep it fill it from the rows as
 * they are inserted, in the same transaction.
 */
import { createHash, type Hash } from "node:crypto";
import fs from "node:fs";
import Database from "better-sqlite3";
import { getTableConfig, type PgColumn, type PgTable } from "drizzle-orm/pg-core";
import type pg from "pg";
import { databaseFile } from "../sqlite/db.js";
import sqliteJournal from "../sqlite/migrations/meta/_journal.json" with { type: "json" };
import { openPostgres } from "./connection.js";
import * as schema from "./schema.js";

/** The copy was refused before anything was written (the CLI's exit 1, with this message). */
export class CopyRefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "CopyRefusedError";
  }
}

/**
 * Every table, parents before children (the foreign keys hold at every insert). A table the
 * SQLite database has and this list lacks refuses the copy, so a table added to the schema
 * cannot be silently left behind.
 */
export const COPY_ORDER: readonly PgTable[] = [
  schema.groups,
  schema.serverKeys,
  schema.identities,
  schema.roles,
  schema.roleBindings,
  schema.identityProviders,
  schema.accountAssociations,
  schema.groupAccessRequests,
  schema.groupInvites,
  schema.repos,
  schema.tags,
  schema.tagHistory,
  schema.repoReadmes,
  schema.repoDeployments,
  schema.registrySettings,
  schema.eolTags,
  schema.advisories,
  schema.advisoryAliases,
  schema.advisoryEvents,
  schema.refreshTokens,
  schema.scimCredentials,
];

/** Rows per INSERT: well under PostgreSQL's 65 535 parameters for the widest table. */
const INSERT_BATCH_ROWS = 500;
/** Rows fetched per round trip when reading the target back. */
const READ_BACK_BATCH_ROWS = 2000;
/** Held (per transaction) by a copy while it checks and fills the target. */
const COPY_LOCK_KEY = 0x7472656c6c697301n;

type ColumnKind = "text" | "integer" | "boolean" | "bytes";

interface TablePlan {
  readonly name: string;
  readonly columns: readonly { readonly name: string; readonly kind: ColumnKind }[];
  /** Columns that order the rows identically on both engines (a primary or unique key). */
  readonly orderBy: readonly string[];
}

export interface TableCopy {
  readonly table: string;
  readonly rows: number;
  /** SHA-256 (hex) of the table's rows in key order, identical on source and target. */
  readonly checksum: string;
}

export type CopyProgress =
  | { readonly phase: "copy"; readonly table: string; readonly copied: number; readonly total: number }
  | { readonly phase: "verify"; readonly table: string; readonly rows: number };

export interface CopyOptions {
  /** The SQLite deployment's data directory (holding trellis.db). */
  readonly fromDir: string;
  /** postgres:// URL of the target database; must be empty of Trellis rows. */
  readonly toUrl: string;
  readonly onProgress?: (progress: CopyProgress) => void;
}

/** Copies the deployment and verifies it; resolves to one entry per table. */
export async function copySqliteToPostgres(options: CopyOptions): Promise<TableCopy[]> {
  const plans = COPY_ORDER.map(planOf);
  const source = openSource(options.fromDir, plans);
  try {
    // Pins one snapshot of the source for the whole copy (see the header).
    source.exec("BEGIN");
    source.prepare("SELECT count(*) FROM sqlite_master").get();
    const target = await openPostgres({ url: options.toUrl, poolSize: 1 });
    try {
      const client = await target.pool.connect();
      try {
        await client.query("BEGIN");
        try {
          await client.query("SELECT pg_advisory_xact_lock($1)", [COPY_LOCK_KEY.toString()]);
          await refuseNonEmptyTarget(client, plans);
          const copied: TableCopy[] = [];
          for (const plan of plans) copied.push(await copyTable(source, client, plan, options.onProgress));
          await moveSequences(source, client);
          for (const [i, plan] of plans.entries()) {
            await verifyTable(client, plan, copied[i]!);
            options.onProgress?.({ phase: "verify", table: plan.name, rows: copied[i]!.rows });
          }
          await client.query("COMMIT");
          return copied;
        } catch (err) {
          await client.query("ROLLBACK").catch(() => {});
          throw err;
        }
      } finally {
        client.release();
      }
    } finally {
      await target.close();
    }
  } finally {
    source.close();
  }
}

function planOf(table: PgTable): TablePlan {
  const config = getTableConfig(table);
  const columns = config.columns.map((c) => ({ name: c.name, kind: kindOf(c) }));
  const primary = config.columns.filter((c) => c.primary).map((c) => c.name);
  const composite = config.primaryKeys[0]?.columns.map((c) => c.name);
  const unique = config.indexes.find((i) => i.config.unique)?.config.columns.map((c) => (c as PgColumn).name);
  const orderBy = primary.length > 0 ? primary : (composite ?? unique);
  if (!orderBy || orderBy.length === 0) throw new Error(`table ${config.name} has no primary or unique key to order a copy by`);
  return { name: config.name, columns, orderBy };
}

function kindOf(column: PgColumn): ColumnKind {
  if (column.columnType === "PgBoolean") return "boolean";
  if (column.columnType === "PgInteger" || column.columnType === "PgBigInt53") return "integer";
  if (column.getSQLType() === "bytea") return "bytes";
  return "text";
}

/** Opens trellis.db read-only after checking it is a Trellis database this build can copy. */
function openSource(dataDir: string, plans: readonly TablePlan[]): Database.Database {
  const file = databaseFile(dataDir);
  if (!fs.existsSync(file)) {
    throw new CopyRefusedError(`${dataDir} is not a Trellis data directory: it has no ${file}`);
  }
  let source: Database.Database;
  try {
    source = new Database(file, { readonly: true, fileMustExist: true });
    source.prepare("SELECT count(*) FROM sqlite_master").get();
  } catch (err) {
    throw new CopyRefusedError(`${file} is not a SQLite database Trellis can read: ${(err as Error).message}`);
  }
  try {
    source.defaultSafeIntegers(true); // 64-bit integers exactly, as BigInt
    const tables = new Set(
      (source.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").all() as { name: string }[]).map((r) => r.name),
    );
    if (!tables.has("__drizzle_migrations") || !tables.has("groups") || !tables.has("server_keys")) {
      throw new CopyRefusedError(`${file} is not a Trellis database (it lacks Trellis's tables)`);
    }
    // Only a database at exactly this build's schema has the columns the copy reads.
    const applied = source.prepare("SELECT count(*) AS n FROM __drizzle_migrations").get() as { n: bigint };
    const known = (sqliteJournal as { entries: unknown[] }).entries.length;
    if (Number(applied.n) !== known) {
      throw new CopyRefusedError(
        `${file} has ${applied.n} migrations applied and this build has ${known}: ` +
          (Number(applied.n) < known
            ? "start this build's server on it once (it migrates at start-up), stop it, then copy"
            : "it was migrated by a newer Trellis; copy it with that build"),
      );
    }
    tables.delete("__drizzle_migrations");
    const planned = new Set(plans.map((p) => p.name));
    const unknown = [...tables].filter((t) => !planned.has(t));
    if (unknown.length > 0) throw new CopyRefusedError(`this build does not know how to copy the table(s) ${unknown.join(", ")} of ${file}`);
    return source;
  } catch (err) {
    source.close();
    throw err;
  }
}

async function refuseNonEmptyTarget(client: pg.PoolClient, plans: readonly TablePlan[]): Promise<void> {
  const filled: string[] = [];
  for (const plan of plans) {
    const { rowCount } = await client.query(`SELECT 1 FROM "${plan.name}" LIMIT 1`);
    if (rowCount) filled.push(plan.name);
  }
  if (filled.length > 0) {
    throw new CopyRefusedError(`the target database is not empty (rows in ${filled.join(", ")}); db copy only fills an empty database, so nothing was written`);
  }
}

/** The SQLite value as PostgreSQL takes it (a parameter of the INSERT). */
function toParameter(value: unknown, kind: ColumnKind): unknown {
  if (value === null || value === undefined) return null;
  if (kind === "boolean") return value === 1n || value === 1;
  if (kind === "integer") return String(value); // exact, whatever its size
  return value; // text as string, bytes as Buffer
}

async function copyTable(source: Database.Database, client: pg.PoolClient, plan: TablePlan, onProgress: CopyOptions["onProgress"]): Promise<TableCopy> {
  const cols = plan.columns.map((c) => `"${c.name}"`).join(", ");
  const total = Number((source.prepare(`SELECT count(*) AS n FROM "${plan.name}"`).get() as { n: bigint }).n);
  const digest = tableDigest(plan);
  let batch: unknown[][] = [];
  let copied = 0;
  const flush = async () => {
    if (batch.length === 0) return;
    const params: unknown[] = [];
    const tuples = batch.map((row) => {
      const marks = row.map((value) => {
        params.push(value);
        return `$${params.length}`;
      });
      return `(${marks.join(", ")})`;
    });
    await client.query(`INSERT INTO "${plan.name}" (${cols}) VALUES ${tuples.join(", ")}`, params);
    copied += batch.length;
    batch = [];
    onProgress?.({ phase: "copy", table: plan.name, copied, total });
  };
  const select = source.prepare(`SELECT ${cols} FROM "${plan.name}" ORDER BY ${plan.orderBy.map((c) => `"${c}"`).join(", ")}`).raw(true);
  // better-sqlite3 allows no other statement on the connection while this iterator is open;
  // none runs until it is done (the awaits only wait for PostgreSQL).
  for (const row of select.iterate() as IterableIterator<unknown[]>) {
    digest.add(row);
    batch.push(row.map((value, i) => toParameter(value, plan.columns[i]!.kind)));
    if (batch.length >= INSERT_BATCH_ROWS) await flush();
  }
  await flush();
  if (total === 0) onProgress?.({ phase: "copy", table: plan.name, copied: 0, total: 0 });
  return { table: plan.name, rows: digest.rows, checksum: digest.hex() };
}

/**
 * tag_history.seq is an identity column: rows were inserted with their own values, so its
 * sequence must move past them, and past any value SQLite's AUTOINCREMENT already handed out
 * (sqlite_sequence), so that no seq is ever reused.
 */
async function moveSequences(source: Database.Database, client: pg.PoolClient): Promise<void> {
  const table = getTableConfig(schema.tagHistory).name;
  const hasSequence = source.prepare("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_sequence'").get();
  const used = hasSequence ? (source.prepare("SELECT seq FROM sqlite_sequence WHERE name = ?").get(table) as { seq: bigint } | undefined) : undefined;
  await client.query(
    `SELECT setval(pg_get_serial_sequence('"${table}"', 'seq'), greatest($1::bigint, (SELECT coalesce(max(seq), 0) FROM "${table}"), 1), ` +
      `$1::bigint > 0 OR EXISTS (SELECT 1 FROM "${table}"))`,
    [String(used?.seq ?? 0n)],
  );
}

/** Reads the table back from PostgreSQL inside the copy's transaction and compares. */
async function verifyTable(client: pg.PoolClient, plan: TablePlan, expected: TableCopy): Promise<void> {
  const digest = tableDigest(plan);
  const cols = plan.columns.map((c) => `"${c.name}"`).join(", ");
  const cursor = `copy_verify_${plan.name}`;
  await client.query(`DECLARE ${cursor} NO SCROLL CURSOR FOR SELECT ${cols} FROM "${plan.name}" ORDER BY ${plan.orderBy.map((c) => `"${c}"`).join(", ")}`);
  for (;;) {
    const { rows } = await client.query({ text: `FETCH ${READ_BACK_BATCH_ROWS} FROM ${cursor}`, rowMode: "array" });
    for (const row of rows as unknown[][]) digest.add(row);
    if (rows.length < READ_BACK_BATCH_ROWS) break;
  }
  await client.query(`CLOSE ${cursor}`);
  const { rows } = await client.query(`SELECT count(*)::text AS n FROM "${plan.name}"`);
  const counted = Number(rows[0].n);
  if (counted !== expected.rows || digest.rows !== expected.rows) {
    throw new Error(`verification failed for ${plan.name}: ${expected.rows} rows copied, ${counted} in the target; nothing was committed`);
  }
  const checksum = digest.hex();
  if (checksum !== expected.checksum) {
    throw new Error(`verification failed for ${plan.name}: checksum ${checksum} in the target, ${expected.checksum} in the source; nothing was committed`);
  }
}

/**
 * The checksum of a table: SHA-256 over its rows in key order, each value written in one
 * canonical form whichever engine it was read from: null as "N"; integers (SQLite's BigInt,
 * PostgreSQL's number or int8 string) and booleans (0/1, true/false) as "I" and the decimal
 * integer; text as "T", its UTF-8 byte length, ":" and the bytes; binary as "B", its length,
 * ":" and the bytes. Lengths make the encoding unambiguous (no separator can be forged by a value).
 */
export function tableDigest(plan: Pick<TablePlan, "columns">): { add(row: readonly unknown[]): void; readonly rows: number; hex(): string } {
  const hash: Hash = createHash("sha256");
  let rows = 0;
  return {
    add(row) {
      rows += 1;
      hash.update("R");
      for (const [i, value] of row.entries()) hash.update(canonical(value, plan.columns[i]!.kind));
    },
    get rows() {
      return rows;
    },
    hex: () => hash.digest("hex"),
  };
}

function canonical(value: unknown, kind: ColumnKind): string | Buffer {
  if (value === null || value === undefined) return "N";
  switch (kind) {
    case "boolean":
      return value === true || value === 1n || value === 1 ? "I1" : "I0";
    case "integer":
      return `I${BigInt(value as bigint | number | string).toString()}`;
    case "bytes": {
      const bytes = value as Buffer;
      return Buffer.concat([Buffer.from(`B${bytes.length}:`), bytes]);
    }
    case "text": {
      const bytes = Buffer.from(String(value), "utf8");
      return Buffer.concat([Buffer.from(`T${bytes.length}:`), bytes]);
    }
  }
}
