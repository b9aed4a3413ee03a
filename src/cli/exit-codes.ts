/**
 * The CLI's exit codes (documented in docs/cli.md) and the one error type commands throw to
 * choose one. Scripts switch on these, so they never change meaning:
 *
 *   0  success
 *   1  the server or the network failed (any RPC error other than the auth ones)
 *   2  usage: bad flags or arguments, an unknown or ambiguous group name
 *   3  authentication or authorization: UNAUTHENTICATED, PERMISSION_DENIED, no usable token
 */
export const EXIT = {
  ok: 0,
  failure: 1,
  usage: 2,
  auth: 3,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** An error the CLI reports as one block on stderr and turns into `exitCode`. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: ExitCode,
  ) {
    super(message);
    this.name = "CliError";
  }
}

/** A usage error (exit 2): bad flags, bad arguments, names that resolve to nothing or to many. */
export function usageError(message: string): CliError {
  return new CliError(message, EXIT.usage);
}

/** An authentication error (exit 3): no token, an expired login, a refused exchange. */
export function authError(message: string): CliError {
  return new CliError(message, EXIT.auth);
}

/**
 * Ends the program with `status` and prints nothing more: for a command that has already
 * reported its own outcome with its own documented statuses (`trellis import`, docs/import.md).
 */
export class ExitStatus extends Error {
  constructor(readonly status: number) {
    super(`exit status ${status}`);
    this.name = "ExitStatus";
  }
}
