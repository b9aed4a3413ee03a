/**
 * The storage seam: everything the rest of Trellis may ask of a database, with no engine in
 * sight. The server, the CLI's local tools, the importer and the tests open a `StoreEngine`
 * (src/store/open.ts) and reach storage only through it, so a second engine fills this
 * interface without touching a service, auth or the server. Today's engine is SQLite
 * (src/store/sqlite/engine.ts).
 *
 * Async at the boundary, with two deliberate exceptions that sit on every call's hot path and
 * must not cost a query: the shared-values watch (a remembered value, re-read only when the
 * database changed) and the health readings (the outcome of the last write).
 */
import type { AccountAssociationsRepository } from "./account-associations.js";
import type { AdvisoriesRepository, AdvisoryFields } from "./advisories.js";
import type { EolFields, EolTagsRepository } from "./eol-tags.js";
import type { GroupAccessRequestsRepository } from "./group-access-requests.js";
import type { GroupInvitesRepository } from "./group-invites.js";
import type { GroupsRepository } from "./groups.js";
import type { IdentitiesRepository } from "./identities.js";
import type { IdentityProvidersRepository } from "./identity-providers.js";
import type { RefreshTokensRepository } from "./refresh-tokens.js";
import type { RegistrySettingsRepository } from "./registry-settings.js";
import type { RepoDeploymentsRepository } from "./repo-deployments.js";
import type { RepoReadmesRepository } from "./repo-readmes.js";
import type { RepoFields, ReposRepository, UpsertOutcome } from "./repos.js";
import type { RoleBindingsRepository } from "./role-bindings.js";
import type { RolesRepository } from "./roles.js";
import type { ScimCredentialsRepository } from "./scim-credentials.js";
import type { TagFields, TagsRepository } from "./tags.js";
import type { TokenRevocationsRepository } from "./token-revocations.js";

/** Every repository, one per resource (the interfaces live beside their records in src/store/). */
export interface StoreRepositories {
  readonly groups: GroupsRepository;
  readonly groupAccessRequests: GroupAccessRequestsRepository;
  readonly identities: IdentitiesRepository;
  readonly roles: RolesRepository;
  readonly roleBindings: RoleBindingsRepository;
  readonly identityProviders: IdentityProvidersRepository;
  readonly scimCredentials: ScimCredentialsRepository;
  readonly accountAssociations: AccountAssociationsRepository;
  readonly groupInvites: GroupInvitesRepository;
  readonly repos: ReposRepository;
  readonly tags: TagsRepository;
  readonly repoReadmes: RepoReadmesRepository;
  readonly repoDeployments: RepoDeploymentsRepository;
  readonly registrySettings: RegistrySettingsRepository;
  readonly eolTags: EolTagsRepository;
  readonly advisories: AdvisoriesRepository;
  readonly tokenRevocations: TokenRevocationsRepository;
  readonly refreshTokens: RefreshTokensRepository;
}

/**
 * A change of named server values (rows of `server_keys`): given their current bytes (in the
 * order asked, undefined when absent; and when each row was first stored, in ms), the bytes to store per name, `null` to delete it, or
 * undefined to leave it; returning undefined leaves every value. Pure and synchronous: the
 * engine runs it under its write lock (SQLite: BEGIN IMMEDIATE; a row lock elsewhere), so two
 * processes starting at once agree on one result.
 */
export type ServerValuesChange = (
  current: readonly (Buffer | undefined)[],
  createTimes: readonly (number | undefined)[],
) => readonly (Buffer | null | undefined)[] | undefined;

/**
 * Values every process on the database shares and may change while the others run: the
 * page-token keys, the token-signing keys, the revocation list, the issuer settings.
 */
export interface ServerValues {
  /** The value stored under `name`, or undefined. */
  read(name: string): Promise<Buffer | undefined>;
  /** Applies `change` to the values under `names` in one write; resolves to the values afterwards. */
  update(names: readonly string[], now: number, change: ServerValuesChange): Promise<(Buffer | undefined)[]>;
  /**
   * A synchronous reader of the rows `names` turned into T by `parse`; the parsed value is
   * remembered and re-read only when the database may have changed (a write by this process or
   * by any other), so a rotation or revocation made anywhere applies at the next call.
   */
  watch<T>(names: readonly string[], parse: (values: readonly (Buffer | undefined)[]) => T): () => T;
  /**
   * Only on an engine whose watchers cannot ask the database synchronously (PostgreSQL): resolves
   * once the watchers return every change committed before it was called. The server awaits it
   * before each call reads a watcher, so a revocation or rotation made by another process applies
   * at that process's very next call. Absent where `watch` is already current (SQLite), so the
   * calls there pay nothing.
   */
  readonly catchUp?: () => Promise<void>;
}

/** Counters of the write path, read when metrics are scraped. */
export interface StorageStats {
  readonly transactions: number;
  readonly transactionSeconds: number;
  readonly busyRetries: number;
  readonly busyTimeouts: number;
}

/** What gRPC health, /readyz and /metrics read. */
export interface StoreHealth {
  /** False while the database cannot be written (the last write or probe failed for storage reasons). */
  writable(): boolean;
  /** How long ago (ms) a write last reached storage or failed for storage reasons. */
  msSinceLastOutcome(): number;
  /** A write that changes nothing, through the normal write path, so `writable` stays current. */
  probe(): Promise<void>;
  /**
   * Size of the stored data in bytes, or undefined when the engine cannot tell now. Read when
   * metrics are scraped, never on a call's path: PostgreSQL asks the database (bounded wait).
   */
  sizeBytes(): Promise<number | undefined>;
  readonly stats: () => StorageStats;
}

/** The writes one import record may make, inside the importer's transaction. */
export interface ImportWrites {
  /** The uid of the repo named `name` in group `parentUid`, or undefined. */
  findRepoUid(parentUid: string, name: string): Promise<string | undefined>;
  /** The uid of the tag named `name` in repo `repoUid`, or undefined. */
  findTagUid(repoUid: string, name: string): Promise<string | undefined>;
  upsertRepo(parentUid: string, fields: RepoFields, now: number): Promise<UpsertOutcome>;
  upsertTag(repoUid: string, fields: TagFields, now: number): Promise<UpsertOutcome>;
  putReadme(repoUid: string, content: string, now: number): Promise<UpsertOutcome>;
  upsertEolTag(tagUid: string, fields: EolFields, now: number): Promise<UpsertOutcome>;
  upsertAdvisory(parentUid: string, fields: AdvisoryFields, now: number): Promise<UpsertOutcome>;
}

/** One open import transaction. */
export interface ImportTransaction {
  /**
   * Runs one record's writes behind a savepoint: when `apply` throws, that record's writes are
   * undone, the error is rethrown and the transaction goes on with the next record. A failure
   * of the storage itself rather than of the record is rethrown as a StorageError (the
   * importer stops on those).
   */
  record<T>(apply: (writes: ImportWrites) => Promise<T>): Promise<T>;
}

/**
 * The importer's writer: bulk writes beside a running server, in bounded transactions that
 * the importer sizes itself (records per transaction, time holding the lock).
 */
export interface ImportWriter {
  /**
   * One write transaction around `work`, committed when it resolves and rolled back whole when
   * it throws. When another writer holds the lock past the engine's bound, it rejects with a
   * StorageError of kind "busy" before `work` runs.
   */
  transaction<T>(work: (tx: ImportTransaction) => Promise<T>): Promise<T>;
}

export interface StoreEngine {
  /** Which engine, for logs ("sqlite"). */
  readonly kind: string;
  /** Where the data lives, for logs and messages (a file, a URL without its password). */
  readonly location: string;
  readonly repositories: StoreRepositories;
  readonly serverValues: ServerValues;
  readonly importer: ImportWriter;
  readonly health: StoreHealth;
  /**
   * Creates or refreshes the built-in roles (start-up; running it again changes nothing).
   */
  ensureBuiltInRoles(now: number): Promise<void>;
  /**
   * The server's start-up writes are done: from now on a write that finds the lock taken
   * waits without blocking reads, for at most `busyWaitMs`, then fails "busy".
   */
  startServing(busyWaitMs: number): void;
  /**
   * Finishes queued writes and releases the connections (and, for a server, its claim on the
   * data). SQLite has closed when it returns; the promise resolves once every connection has
   * ended (PostgreSQL's pool ends asynchronously).
   */
  close(): Promise<void>;
}
