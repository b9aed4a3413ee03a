/**
 * Which database a process uses, from its flags and environment, without opening anything (the
 * CLI's client commands read this module and must not load a database driver).
 */

/** Which database: the data directory's SQLite file, or a PostgreSQL URL. */
export interface StoreTarget {
  readonly dataDir: string;
  /** postgres://… or postgresql://…: PostgreSQL, and `dataDir` is not used. */
  readonly databaseUrl?: string;
  /** PostgreSQL: connections this process's pool may hold (default 10). */
  readonly poolSize?: number;
}

/** How to name the store in "start the server once with …" advice. */
export function storeFlag(target: StoreTarget): string {
  return target.databaseUrl !== undefined ? `--database ${redactDatabaseUrl(target.databaseUrl)}` : `--data ${target.dataDir}`;
}

/**
 * The store a command's flags and environment name: `--database` / TRELLIS_DATABASE (a
 * PostgreSQL URL) wins over `--data` / TRELLIS_DATA (default ./data).
 * @throws Error with a usage message when the URL is not a PostgreSQL one.
 */
export function storeTargetFrom(
  flags: { readonly data?: string; readonly database?: string; readonly poolSize?: string },
  env: NodeJS.ProcessEnv,
): StoreTarget {
  const dataDir = flags.data ?? env.TRELLIS_DATA ?? "./data";
  const url = flags.database ?? (env.TRELLIS_DATABASE || undefined);
  const poolSize = flags.poolSize ?? (env.TRELLIS_DB_POOL_SIZE || undefined);
  if (url === undefined) {
    if (poolSize !== undefined) throw new Error("--db-pool-size applies to a PostgreSQL --database only");
    return { dataDir };
  }
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (!parsed || (parsed.protocol !== "postgres:" && parsed.protocol !== "postgresql:")) {
    throw new Error(`--database (or TRELLIS_DATABASE) must be a postgres://user:password@host:port/database URL (got ${redactDatabaseUrl(url)})`);
  }
  if (poolSize === undefined) return { dataDir, databaseUrl: url };
  if (!/^\d{1,4}$/.test(poolSize) || Number(poolSize) < 1 || Number(poolSize) > 1000) {
    throw new Error(`--db-pool-size (or TRELLIS_DB_POOL_SIZE) must be a whole number from 1 to 1000 (got ${JSON.stringify(poolSize)})`);
  }
  return { dataDir, databaseUrl: url, poolSize: Number(poolSize) };
}

/** `url` without its password (a URL that does not parse is not shown at all: it may hold one). */
export function redactDatabaseUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    return "postgres://(unparsable URL)";
  }
}
