/**
 * The PostgreSQL engine: a node-postgres pool behind the StoreEngine interface
 * (src/store/engine.ts), which `openStore` (src/store/open.ts) opens for a
 * `--database postgres://…`. It assembles every repository (each file's header says which rows
 * it locks and why), the importer's writer (import-writer.ts), the server values shared by
 * every replica (server-values.ts) and the built-in roles.
 *
 * Failures: every repository call's PostgreSQL failure leaves here as the engine-neutral
 * StorageError (src/store/storage-error.ts), so the error module maps it once, as for SQLite:
 *   unavailable (connection lost, server shutting down)  → "unavailable"
 *   exhausted (pool acquire timeout, too many clients)    → "busy"
 *   lock_timeout (a row lock held past the bounded wait)  → "busy"
 *   conflict (serialization failure or deadlock left
 *             after writeTransaction's retries)           → "conflict" (ABORTED for the caller)
 *   unique / foreign_key                                  → "unique" / "foreign-key"
 *   unstorable_text (a NUL in a text value, 22021)        → "unstorable-text" (INVALID_ARGUMENT)
 * The health readings follow those outcomes: a call that fails "unavailable" or "busy" marks
 * the database not writable until a call or a probe succeeds again, and one that fails "busy"
 * counts in the storage stats' busyTimeouts (the other counters: transaction.ts).
 */
import { sql } from "drizzle-orm";
import type pg from "pg";
import { redactDatabaseUrl } from "../target.js";
import type { StoreEngine, StoreRepositories } from "../engine.js";
import { isUnwritableFailure, StorageError, type StorageFailureKind } from "../../errors/storage-error.js";
import { openPostgres, type PostgresOptions } from "./connection.js";
import { mapPostgresError, type PostgresFailureKind } from "./errors.js";
import { createPostgresAdvisoriesRepository } from "./advisories.js";
import { createPostgresEolTagsRepository } from "./eol-tags.js";
import { createPostgresGroupsRepository } from "./groups.js";
import { createPostgresIdentitiesRepository } from "./identities.js";
import { createPostgresImportWriter, DEFAULT_IMPORT_LOCK_TIMEOUT_MS } from "./import-writer.js";
import { createPostgresRegistrySettingsRepository } from "./registry-settings.js";
import { createPostgresRepoDeploymentsRepository } from "./repo-deployments.js";
import { createPostgresRepoReadmesRepository } from "./repo-readmes.js";
import { createPostgresReposRepository } from "./repos.js";
import { createPostgresAccountAssociationsRepository } from "./account-associations.js";
import { createPostgresGroupAccessRequestsRepository } from "./group-access-requests.js";
import { createPostgresGroupInvitesRepository } from "./group-invites.js";
import { createPostgresIdentityProvidersRepository } from "./identity-providers.js";
import { createPostgresRefreshTokensRepository } from "./refresh-tokens.js";
import { createPostgresRoleBindingsRepository } from "./role-bindings.js";
import { createPostgresRolesRepository, ensureBuiltInRolesPostgres } from "./roles.js";
import { createPostgresScimCredentialsRepository } from "./scim-credentials.js";
import { createPostgresServerValues, type PostgresServerValues } from "./server-values.js";
import { createPostgresTagsRepository } from "./tags.js";
import { createPostgresTokenRevocationsRepository } from "./token-revocations.js";
import { writeCountersOf, writeTransaction } from "./transaction.js";

const STORAGE_KINDS: Record<PostgresFailureKind, StorageFailureKind> = {
  unavailable: "unavailable",
  exhausted: "busy",
  lock_timeout: "busy",
  conflict: "conflict",
  unique: "unique",
  foreign_key: "foreign-key",
  unstorable_text: "unstorable-text",
};

/** A PostgreSQL failure as the engine-neutral StorageError; anything else (an ApiError, a bug) as it is. */
function asStorageError(err: unknown): unknown {
  if (err instanceof StorageError) return err;
  const mapped = mapPostgresError(err);
  return mapped ? new StorageError(STORAGE_KINDS[mapped.kind], mapped.message, { cause: mapped }) : err;
}

interface Outcomes {
  succeeded(): void;
  failed(err: unknown): unknown;
}

/** `repo` with every method's storage failure translated and its outcome recorded. */
function observed<T extends object>(repo: T, outcomes: Outcomes): T {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(repo)) {
    if (typeof value !== "function") {
      out[key] = value;
      continue;
    }
    out[key] = async (...args: unknown[]) => {
      try {
        const result = await (value as (...a: unknown[]) => Promise<unknown>).apply(repo, args);
        outcomes.succeeded();
        return result;
      } catch (err) {
        throw outcomes.failed(err);
      }
    };
  }
  return out as T;
}

export interface PostgresEngineOptions extends Omit<PostgresOptions, "url"> {
  /** How long an import's statement waits for a row lock before the import stops "busy" (ms; default 1000). */
  readonly importLockTimeoutMs?: number;
}

export interface PostgresEngine extends StoreEngine {
  readonly serverValues: PostgresServerValues;
}

const pools = new WeakMap<StoreEngine, pg.Pool>();

/**
 * How long a metrics scrape waits for the database's size: the pool may be full or the
 * database gone, and a scrape must answer well within Prometheus' timeout (10 s by default)
 * rather than wait out the pool's acquire timeout.
 */
const SIZE_QUERY_BOUND_MS = 1000;

/**
 * The database's size as PostgreSQL counts it (every relation's files: tables, indexes, TOAST;
 * not the cluster's shared WAL), or undefined when it does not answer within the bound. Asked
 * only when metrics are scraped, never on a call's path; a failure is not an outcome of the
 * health readings (it is no write).
 */
async function databaseSize(pool: pg.Pool): Promise<number | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(resolve, SIZE_QUERY_BOUND_MS, undefined);
  });
  const size = pool.query<{ bytes: string }>("SELECT pg_database_size(current_database())::text AS bytes").then(
    (result) => Number(result.rows[0]?.bytes),
    () => undefined,
  );
  try {
    return await Promise.race([size, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Tests only: the pool behind an engine this module opened. */
export function postgresPoolOf(engine: StoreEngine): pg.Pool {
  const pool = pools.get(engine);
  if (!pool) throw new Error("not a PostgreSQL engine");
  return pool;
}

/**
 * Opens the PostgreSQL database at `url`: migrates it (once across replicas), loads the server
 * values and starts listening for other replicas' changes to them.
 * @throws StorageError "unavailable"/"busy" when the server cannot be reached; Error when a newer build migrated it.
 */
export async function openPostgresEngine(url: string, options: PostgresEngineOptions = {}): Promise<PostgresEngine> {
  let opened: Awaited<ReturnType<typeof openPostgres>>;
  try {
    opened = await openPostgres({ ...options, url });
  } catch (err) {
    throw asStorageError(err);
  }
  const { db, pool } = opened;
  const serverValues = createPostgresServerValues(db, { url, onListenError: options.onIdleError });
  try {
    await serverValues.start();
  } catch (err) {
    await serverValues.close();
    await opened.close().catch(() => {});
    throw asStorageError(err);
  }

  let writable = true;
  let lastOutcomeAt = Date.now();
  const counters = writeCountersOf(db);
  const outcomes: Outcomes = {
    succeeded() {
      writable = true;
      lastOutcomeAt = Date.now();
    },
    failed(err) {
      const translated = asStorageError(err);
      if (translated instanceof StorageError) {
        lastOutcomeAt = Date.now();
        if (isUnwritableFailure(translated.kind)) writable = false;
        if (translated.kind === "busy") counters.busyTimeouts++;
      }
      return translated;
    },
  };

  // The server awaits this before every call (engine.ts `catchUp`): a database it cannot reach
  // fails the call UNAVAILABLE and counts as an outcome like any repository call's.
  const sharedValues: PostgresServerValues = {
    ...serverValues,
    async catchUp() {
      try {
        await serverValues.catchUp();
        outcomes.succeeded();
      } catch (err) {
        throw outcomes.failed(err);
      }
    },
  };

  const repositories: StoreRepositories = {
    groups: observed(createPostgresGroupsRepository(db), outcomes),
    identities: observed(createPostgresIdentitiesRepository(db), outcomes),
    roles: observed(createPostgresRolesRepository(db), outcomes),
    roleBindings: observed(createPostgresRoleBindingsRepository(db), outcomes),
    repos: observed(createPostgresReposRepository(db), outcomes),
    tags: observed(createPostgresTagsRepository(db), outcomes),
    repoReadmes: observed(createPostgresRepoReadmesRepository(db), outcomes),
    repoDeployments: observed(createPostgresRepoDeploymentsRepository(db), outcomes),
    registrySettings: observed(createPostgresRegistrySettingsRepository(db), outcomes),
    eolTags: observed(createPostgresEolTagsRepository(db), outcomes),
    advisories: observed(createPostgresAdvisoriesRepository(db), outcomes),
    groupAccessRequests: observed(createPostgresGroupAccessRequestsRepository(db), outcomes),
    identityProviders: observed(createPostgresIdentityProvidersRepository(db), outcomes),
    scimCredentials: observed(createPostgresScimCredentialsRepository(db), outcomes),
    accountAssociations: observed(createPostgresAccountAssociationsRepository(db), outcomes),
    groupInvites: observed(createPostgresGroupInvitesRepository(db), outcomes),
    tokenRevocations: observed(createPostgresTokenRevocationsRepository(serverValues), outcomes),
    refreshTokens: observed(createPostgresRefreshTokensRepository(db), outcomes),
  };

  let closing: Promise<void> | undefined;
  // Closing twice (a failed start, then the caller's own close) ends the pool once.
  const close = () => {
    closing ??= (async () => {
      await serverValues.close();
      await opened.close();
    })();
    return closing;
  };

  const engine: PostgresEngine = {
    kind: "postgres",
    location: redactDatabaseUrl(url),
    repositories,
    serverValues: sharedValues,
    importer: observed(
      createPostgresImportWriter(db, { lockTimeoutMs: options.importLockTimeoutMs ?? DEFAULT_IMPORT_LOCK_TIMEOUT_MS, storageError: asStorageError }),
      outcomes,
    ),
    health: {
      writable: () => writable,
      msSinceLastOutcome: () => Date.now() - lastOutcomeAt,
      async probe() {
        try {
          await writeTransaction(db, (tx) => tx.execute(sql`SELECT 1`));
          outcomes.succeeded();
        } catch (err) {
          throw outcomes.failed(err);
        }
      },
      sizeBytes: () => databaseSize(pool),
      // writeTransaction counts the transactions and retries, `outcomes` the busy failures.
      stats: () => counters,
    },
    async ensureBuiltInRoles(now) {
      try {
        await ensureBuiltInRolesPostgres(db, now);
      } catch (err) {
        throw asStorageError(err);
      }
    },
    // A write waits for the rows it locks, not for a database-wide lock, and a connection for
    // at most the pool's acquire timeout: there is no start-up mode to leave.
    startServing() {},
    close,
  };
  pools.set(engine, pool);
  return engine;
}
