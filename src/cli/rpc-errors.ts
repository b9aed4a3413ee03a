/**
 * Turns a failed call into the one readable block the CLI prints, and its exit code.
 *
 * The server's errors follow AIP-193: a ConnectError whose details carry google.rpc.ErrorInfo
 * (the reason scripts switch on), BadRequest field violations and PreconditionFailure
 * violations. They are decoded with the generated google.rpc types; any other detail is
 * ignored (the message still says what went wrong).
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { BadRequestSchema, ErrorInfoSchema, PreconditionFailureSchema } from "../../gen/google/rpc/error_details_pb.js";
import { CliError, EXIT, type ExitCode } from "./exit-codes.js";

/** Exit code for a gRPC status: 3 for the two auth codes, 1 for everything else. */
export function exitCodeFor(code: Code): ExitCode {
  return code === Code.Unauthenticated || code === Code.PermissionDenied ? EXIT.auth : EXIT.failure;
}

/** The stderr block for any error thrown by a command, and the exit code to end with. */
export function describeError(err: unknown): { text: string; exitCode: ExitCode } {
  if (err instanceof CliError) return { text: `error: ${err.message}`, exitCode: err.exitCode };
  if (err instanceof ConnectError) return describeConnectError(err);
  const message = err instanceof Error ? err.message : String(err);
  return { text: `error: ${message}`, exitCode: EXIT.failure };
}

function describeConnectError(err: ConnectError): { text: string; exitCode: ExitCode } {
  const lines = [`error: ${err.rawMessage || Code[err.code]}`, `  code: ${codeName(err.code)}`];
  for (const info of err.findDetails(ErrorInfoSchema)) {
    lines.push(`  reason: ${info.reason}${info.domain ? ` (${info.domain})` : ""}`);
  }
  for (const bad of err.findDetails(BadRequestSchema)) {
    for (const v of bad.fieldViolations) lines.push(`  field ${v.field}: ${v.description}`);
  }
  for (const pre of err.findDetails(PreconditionFailureSchema)) {
    for (const v of pre.violations) {
      lines.push(`  precondition ${v.type}${v.subject ? ` ${v.subject}` : ""}: ${v.description}`);
    }
  }
  if (err.code === Code.Unauthenticated) lines.push("  hint: run `trellis auth login` or pass --token");
  return { text: lines.join("\n"), exitCode: exitCodeFor(err.code) };
}

/** UPPER_SNAKE gRPC code name (`INVALID_ARGUMENT`), the form the spec and server docs use. */
function codeName(code: Code): string {
  return (Code[code] ?? String(code)).replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase();
}
