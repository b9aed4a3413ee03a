/**
 * The PostgreSQL engine: a node-postgres pool behind the StoreEngine interface
 * (src/store/engine.ts), assembling what is ported so far. Not reachable from `openStore` yet.
 *
 * Ported: every IAM repository (groups, identities, roles, role bindings, group access requests,
 * identity providers and their SCIM state, account associations, group invites, token
 * revocations, refresh tokens; each file's header says which rows it locks and why), the
 * server values (server-values.ts) and the built-in roles. Every other repository, and the
 * importer, answer every call with UNIMPLEMENTED naming the repository and the method: never a
 * wrong answer, and never a crash of the server.
 *
 * Failures: every repository call's PostgreSQL failure leaves here as the engine-neutral
 * StorageError (src/store/storage-error.ts), so the error module maps it once, as for SQLite:
 *   unavailable (connection lost, server shutting down)  → "unavailable"
 *   exhausted (pool acquire timeout, too many clients)    → "busy"
 *   conflict (serialization failure or deadlock left
 *             after writeTransaction's retries)           → "conflict" (ABORTED for the caller)
 *   unique / foreign_key                                  → "unique" / "foreign-key"
 * The health readings follow those outcomes: a call that fails "unavailable" or "busy" marks
 * the database not writable until a call or a probe succeeds again.
 */
import { sql } from "drizzle-orm";
import type pg from "pg";
import { unimplemented } from "../../errors/api-error.js";
import type { StoreEngine, StoreRepositories } from "../engine.js";
import { isUnwritableFailure, StorageError, type StorageFailureKind } from "../../errors/storage-error.js";
import { openPostgres, type PostgresOptions } from "./connection.js";
import { mapPostgresError, type PostgresFailureKind } from "./errors.js";
import { createPostgresAccountAssociationsRepository } from "./account-associations.js";
import { createPostgresGroupAccessRequestsRepository } from "./group-access-requests.js";
import { createPostgresGroupInvitesRepository } from "./group-invites.js";
import { createPostgresGroupsRepository } from "./groups.js";
import { createPostgresIdentitiesRepository } from "./identities.js";
import { createPostgresIdentityProvidersRepository } from "./identity-providers.js";
import { createPostgresRefreshTokensRepository } from "./refresh-tokens.js";
import { createPostgresRoleBindingsRepository } from "./role-bindings.js";
import { createPostgresRolesRepository, ensureBuiltInRolesPostgres } from "./roles.js";
import { createPostgresScimCredentialsRepository } from "./scim-credentials.js";
import { createPostgresServerValues, type PostgresServerValues } from "./server-values.js";
import { createPostgresTokenRevocationsRepository } from "./token-revocations.js";
import { writeTransaction } from "./transaction.js";

/** The repositories not ported to PostgreSQL yet (each answers UNIMPLEMENTED). */
export const UNPORTED_REPOSITORIES = [
  "repos",
  "tags",
  "repoReadmes",
  "repoDeployments",
  "registrySettings",
  "eolTags",
  "advisories",
] as const satisfies readonly (keyof StoreRepositories)[];

const STORAGE_KINDS: Record<PostgresFailureKind, StorageFailureKind> = {
  unavailable: "unavailable",
  exhausted: "busy",
  conflict: "conflict",
  unique: "unique",
  foreign_key: "foreign-key",
};

/** A PostgreSQL failure as the engine-neutral StorageError; anything else (an ApiError, a bug) as it is. */
function asStorageError(err: unknown): unknown {
  if (err instanceof StorageError) return err;
  const mapped = mapPostgresError(err);
  return mapped ? new StorageError(STORAGE_KINDS[mapped.kind], mapped.message, { cause: mapped }) : err;
}

/** `url` without its password, for logs and messages. */
export function redactedUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    return "postgres://(unparsable URL)";
  }
}

/** A repository whose every method rejects with UNIMPLEMENTED naming it (see the header). */
function unported<T extends object>(name: string): T {
  return new Proxy({} as T, {
    get(_target, prop) {
      // Not a method: `await repo`, inspection, string conversion find nothing rather than a function.
      if (typeof prop !== "string" || prop === "then" || prop === "toJSON") return undefined;
      return async () => {
        throw unimplemented(`${name}.${prop} on PostgreSQL`);
      };
    },
  });
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

export interface PostgresEngine extends StoreEngine {
  readonly serverValues: PostgresServerValues;
  /** Like close(), and resolves once every connection has ended. */
  closeAndWait(): Promise<void>;
}

const pools = new WeakMap<StoreEngine, pg.Pool>();

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
export async function openPostgresEngine(url: string, options: Omit<PostgresOptions, "url"> = {}): Promise<PostgresEngine> {
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
      }
      return translated;
    },
  };

  const repositories: StoreRepositories = {
    groups: observed(createPostgresGroupsRepository(db), outcomes),
    identities: observed(createPostgresIdentitiesRepository(db), outcomes),
    roles: observed(createPostgresRolesRepository(db), outcomes),
    roleBindings: observed(createPostgresRoleBindingsRepository(db), outcomes),
    groupAccessRequests: observed(createPostgresGroupAccessRequestsRepository(db), outcomes),
    identityProviders: observed(createPostgresIdentityProvidersRepository(db), outcomes),
    scimCredentials: observed(createPostgresScimCredentialsRepository(db), outcomes),
    accountAssociations: observed(createPostgresAccountAssociationsRepository(db), outcomes),
    groupInvites: observed(createPostgresGroupInvitesRepository(db), outcomes),
    tokenRevocations: observed(createPostgresTokenRevocationsRepository(serverValues), outcomes),
    refreshTokens: observed(createPostgresRefreshTokensRepository(db), outcomes),
    ...(Object.fromEntries(UNPORTED_REPOSITORIES.map((name) => [name, unported(name)])) as Pick<StoreRepositories, (typeof UNPORTED_REPOSITORIES)[number]>),
  };

  let closing: Promise<void> | undefined;
  const closeAndWait = () => {
    closing ??= (async () => {
      await serverValues.close();
      await opened.close();
    })();
    return closing;
  };

  const engine: PostgresEngine = {
    kind: "postgres",
    location: redactedUrl(url),
    repositories,
    serverValues,
    importer: {
      async transaction() {
        throw unimplemented("import on PostgreSQL");
      },
    },
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
      // The database's size is a query away, and this reading must be synchronous.
      sizeBytes: () => undefined,
      // The write path's counters are not kept on PostgreSQL yet.
      stats: () => ({ transactions: 0, transactionSeconds: 0, busyRetries: 0, busyTimeouts: 0 }),
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
    close() {
      closeAndWait().catch(() => {});
    },
    closeAndWait,
  };
  pools.set(engine, pool);
  return engine;
}
