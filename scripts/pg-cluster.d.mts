// Types of scripts/pg-cluster.mjs for the TypeScript that imports it (test/support).
export interface RunningCluster {
  /** Superuser URL of the `postgres` database. */
  readonly url: string;
  /** What stopCluster takes. */
  readonly dir: string;
  /** The system user the server runs as. */
  readonly user: string;
}
export function findServerBinaries(env?: NodeJS.ProcessEnv): string | undefined;
export function ensureServerBinaries(log?: (line: string) => void): string;
export function startCluster(options?: { dir?: string; port?: number; log?: (line: string) => void; durable?: boolean }): Promise<RunningCluster>;
export function stopCluster(dir: string): Promise<void>;
export function pauseCluster(dir: string): Promise<void>;
export function resumeCluster(dir: string): Promise<void>;
