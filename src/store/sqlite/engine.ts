/**
 * The SQLite engine: one better-sqlite3 connection to `<dataDir>/trellis.db` behind the
 * StoreEngine interface (src/store/engine.ts). Which connection it opens depends on who asks:
 *
 * - "serve": the server. Takes the data-directory lock, applies migrations, and on close
 *   commits queued writes and truncates the WAL.
 * - "beside": a tool writing while a server may run (`trellis import`, `trellis keys`): no
 *   data-directory lock, SQLite's own busy wait for the write lock, and no TRUNCATE checkpoint
 *   on close (it would wait for the server's readers while holding off its writers; SQLite's
 *   passive checkpoints fold the WAL in).
 * - "read-only": a reader of an existing database (`trellis auth token --local`): a read-only
 *   connection, no migrations, no lock of any kind.
 */
import Database from "better-sqlite3";
import { drizzle } from "drizzle-orm/better-sqlite3";
import type { ImportTransaction, ImportWrites, StoreEngine, StoreRepositories } from "../engine.js";
import { createAccountAssociationsRepository } from "./account-associations.js";
import { createAdvisoriesRepository, upsertAdvisoryInTx } from "./advisories.js";
import { type Db, databaseFile, openDatabase } from "./db.js";
import { createEolTagsRepository, upsertEolTagInTx } from "./eol-tags.js";
import { createGroupAccessRequestsRepository } from "./group-access-requests.js";
import { flushGroupCommit, msSinceLastWriteOutcome, probeStorage, storageStats, storageWritable, waitForWriteLockAsync } from "./group-commit.js";
import { createGroupInvitesRepository } from "./group-invites.js";
import { createGroupsRepository } from "./groups.js";
import { createIdentitiesRepository } from "./identities.js";
import { createIdentityProvidersRepository } from "./identity-providers.js";
import { createRefreshTokensRepository } from "./refresh-tokens.js";
import { createRegistrySettingsRepository } from "./registry-settings.js";
import { createRepoDeploymentsRepository } from "./repo-deployments.js";
import { createRepoReadmesRepository, putReadmeInTx } from "./repo-readmes.js";
import { createReposRepository, findRepoByName, upsertRepoInTx } from "./repos.js";
import { createRoleBindingsRepository } from "./role-bindings.js";
import { createRolesRepository, ensureBuiltInRoles } from "./roles.js";
import { createScimCredentialsRepository } from "./scim-credentials.js";
import * as schema from "./schema.js";
import { createServerValues } from "./server-keys.js";
import { StorageError } from "../../errors/storage-error.js";
import { createTagsRepository, findTagUid, upsertTagInTx } from "./tags.js";
import { createTokenRevocationsRepository } from "./token-revocations.js";
import { sqliteFailureKind } from "./errors.js";

export type SqliteAccess = "serve" | "beside" | "read-only";

export interface SqliteEngineOptions {
  readonly dataDir: string;
  /** Default "serve". */
  readonly access?: SqliteAccess;
}

/** The engine's connection, for tests that inject storage faults the way they happen (a full disk). */
const connections = new WeakMap<StoreEngine, Db>();

/** Tests only: the drizzle connection behind an engine this module opened. */
export function sqliteConnectionOf(engine: StoreEngine): Db {
  const db = connections.get(engine);
  if (!db) throw new Error("not a SQLite engine");
  return db;
}

/** Every repository over one connection. */
export function sqliteRepositories(db: Db): StoreRepositories {
  return {
    groups: createGroupsRepository(db),
    groupAccessRequests: createGroupAccessRequestsRepository(db),
    identities: createIdentitiesRepository(db),
    roles: createRolesRepository(db),
    roleBindings: createRoleBindingsRepository(db),
    identityProviders: createIdentityProvidersRepository(db),
    scimCredentials: createScimCredentialsRepository(db),
    accountAssociations: createAccountAssociationsRepository(db),
    groupInvites: createGroupInvitesRepository(db),
    repos: createReposRepository(db),
    tags: createTagsRepository(db),
    repoReadmes: createRepoReadmesRepository(db),
    repoDeployments: createRepoDeploymentsRepository(db),
    registrySettings: createRegistrySettingsRepository(db),
    eolTags: createEolTagsRepository(db),
    advisories: createAdvisoriesRepository(db),
    tokenRevocations: createTokenRevocationsRepository(db),
    refreshTokens: createRefreshTokensRepository(db),
  };
}

/** Opens the database of `dataDir` as the engine. @throws Error with a message for the user. */
export function openSqliteEngine(options: SqliteEngineOptions): StoreEngine {
  const access = options.access ?? "serve";
  const file = databaseFile(options.dataDir);
  let db: Db;
  let close: () => void;
  if (access === "read-only") {
    const sqlite = new Database(file, { readonly: true, fileMustExist: true });
    db = drizzle(sqlite, { schema }) as unknown as Db;
    close = () => sqlite.close();
  } else {
    let opened: ReturnType<typeof openDatabase>;
    try {
      opened = openDatabase(options.dataDir, { lock: access === "serve" });
    } catch (err) {
      throw asStorageError(err);
    }
    db = opened.db;
    close =
      access === "serve"
        ? () => opened.close()
        : () => {
            flushGroupCommit(opened.db); // writes still queued are committed, not dropped
            opened.db.$client.close();
          };
  }
  let repositories: StoreRepositories | undefined;
  const engine: StoreEngine = {
    kind: "sqlite",
    location: file,
    // Built on first use: a tool that only reads a key prepares no repository statements.
    get repositories() {
      repositories ??= sqliteRepositories(db);
      return repositories;
    },
    serverValues: createServerValues(db),
    importer: importWriter(db),
    health: {
      writable: () => storageWritable(db),
      msSinceLastOutcome: () => msSinceLastWriteOutcome(db),
      probe: () => probeStorage(db),
      async sizeBytes() {
        const sqlite = db.$client;
        if (!sqlite.open) return undefined;
        return Number(sqlite.pragma("page_count", { simple: true })) * Number(sqlite.pragma("page_size", { simple: true }));
      },
      stats: () => storageStats,
    },
    ensureBuiltInRoles: (now) => ensureBuiltInRoles(db, now),
    startServing: (busyWaitMs) => waitForWriteLockAsync(db, busyWaitMs),
    async close() {
      close();
    },
  };
  connections.set(engine, db);
  return engine;
}

/** A SQLite failure as a StorageError of its kind; anything else as it is. */
function asStorageError(err: unknown): unknown {
  const kind = sqliteFailureKind(err);
  return kind === undefined ? err : new StorageError(kind, (err as Error).message, { cause: err });
}

/**
 * A record's own fault (a constraint, a value too big, anything that is not SQLite's) stays
 * as it is; any other SQLite failure is storage's, not the record's, and becomes a
 * StorageError so the importer stops instead of rejecting record after record.
 */
function recordFaultOr(err: unknown): unknown {
  const code = (err as { code?: unknown } | null)?.code;
  if (!(err instanceof Database.SqliteError) || typeof code !== "string") return err;
  if (code.startsWith("SQLITE_CONSTRAINT") || code === "SQLITE_TOOBIG") return err;
  return new StorageError(sqliteFailureKind(err) ?? "unavailable", err.message, { cause: err });
}

/**
 * The importer's writer: BEGIN IMMEDIATE … COMMIT with a savepoint per record, on the tool's
 * own connection (nothing else runs on it, so awaiting inside the transaction interleaves
 * with nothing). Busy at BEGIN (after SQLite's own busy wait) becomes StorageError "busy".
 */
function importWriter(db: Db): StoreEngine["importer"] {
  const sqlite = db.$client;
  const writes: ImportWrites = {
    async findRepoUid(parentUid, name) {
      return findRepoByName(db, parentUid, name)?.uid;
    },
    async findTagUid(repoUid, name) {
      return findTagUid(db, repoUid, name);
    },
    async upsertRepo(parentUid, fields, now) {
      return upsertRepoInTx(db, parentUid, fields, now).outcome;
    },
    async upsertTag(repoUid, fields, now) {
      return upsertTagInTx(db, repoUid, fields, now).outcome;
    },
    async putReadme(repoUid, content, now) {
      return putReadmeInTx(db, repoUid, content, now);
    },
    async upsertEolTag(tagUid, fields, now) {
      return upsertEolTagInTx(db, tagUid, fields, now);
    },
    async upsertAdvisory(parentUid, fields, now) {
      return upsertAdvisoryInTx(db, parentUid, fields, now).outcome;
    },
  };
  const tx: ImportTransaction = {
    async record(apply) {
      sqlite.exec("SAVEPOINT import_record");
      try {
        const value = await apply(writes);
        sqlite.exec("RELEASE import_record");
        return value;
      } catch (err) {
        sqlite.exec("ROLLBACK TO import_record");
        sqlite.exec("RELEASE import_record");
        throw recordFaultOr(err);
      }
    },
  };
  return {
    async transaction(work) {
      try {
        sqlite.exec("BEGIN IMMEDIATE");
      } catch (err) {
        throw asStorageError(err);
      }
      try {
        const value = await work(tx);
        sqlite.exec("COMMIT");
        return value;
      } catch (err) {
        if (sqlite.inTransaction) sqlite.exec("ROLLBACK");
        throw err;
      }
    },
  };
}
