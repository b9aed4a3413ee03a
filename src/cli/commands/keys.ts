/**
 * `trellis keys rotate|list` and `trellis tokens revoke` (docs/cli.md "Keys and token
 * revocation").
 *
 * - `keys list|rotate [--data DIR | --database URL]` work on the database, not through the API:
 *   keys are the operator's, and only someone who can open the database may touch them (the same
 *   trust as `trellis auth token --local`). They write beside a running server, which picks
 *   the change up on its next call (src/auth/key-admin.ts).
 * - `tokens revoke --identity UID [--jti JTI]` calls TokensService.RevokeTokens with the usual
 *   client options; with `--local` it writes the revocation into the database instead
 *   (for the operator, e.g. when the server's address is not at hand).
 */
import { type Command, Option } from "commander";
import { TokensService } from "../../../gen/trellis/iam/v1/tokens_pb.js";
import type { KeyInfo, RotateWhich } from "../../auth/key-admin.js";
import { CliError, EXIT, usageError } from "../exit-codes.js";
import type { Io } from "../io.js";
import { type OutputFormat, resolveFormat, table } from "../output.js";
import { stringify as toYaml } from "yaml";
import { revocationProblems } from "../../auth/revocation-request.js";
import { clientAction, DATA_FLAG_HELP, DATABASE_FLAG_HELP, type StoreFlags, storeTargetOf } from "./common.js";

const iso = (ms: number | undefined) => (ms === undefined ? "" : new Date(ms).toISOString());

function printKeys(io: Io, format: OutputFormat, keys: readonly KeyInfo[]): void {
  switch (format) {
    case "id":
      io.out(keys.map((k) => `${k.id}\n`).join(""));
      return;
    case "json":
    case "yaml": {
      const values = keys.map((k) => ({
        use: k.use,
        id: k.id,
        status: k.status,
        createTime: iso(k.createTime),
        ...(k.retireTime === undefined ? {} : { retireTime: iso(k.retireTime) }),
      }));
      io.out(format === "json" ? `${JSON.stringify(values, null, 2)}\n` : toYaml(values));
      return;
    }
    case "table":
      io.out(
        table(
          [
            { header: "USE", cell: (k: KeyInfo) => k.use },
            { header: "ID", cell: (k: KeyInfo) => k.id },
            { header: "STATUS", cell: (k: KeyInfo) => k.status },
            { header: "CREATED", cell: (k: KeyInfo) => iso(k.createTime) },
            { header: "RETIRES", cell: (k: KeyInfo) => iso(k.retireTime) },
          ],
          keys,
        ),
      );
  }
}

/** Errors from the data directory are plain messages for the operator: exit 1. */
async function local<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw new CliError((err as Error).message, EXIT.failure);
  }
}

export function registerKeys(program: Command, io: Io): void {
  const keys = program.command("keys").description("the server's token-signing and page-token keys (on the database; operator only)");

  keys
    .command("list")
    .description("list the keys: use, id (the JWKS kid for signing keys), status, created, when it retires")
    .option("--data <dir>", DATA_FLAG_HELP)
    .option("--database <url>", DATABASE_FLAG_HELP)
    .action(async (o: StoreFlags, cmd: Command) => {
      const { listKeys } = await import("../../auth/key-admin.js");
      const format = resolveFormat(cmd.optsWithGlobals<{ output?: string }>().output, io.stdoutIsTty);
      printKeys(io, format, await local(() => listKeys(storeTargetOf(o, io))));
    });

  keys
    .command("rotate")
    .description("make a new key active; older keys keep verifying until every token they signed has expired")
    .option("--data <dir>", DATA_FLAG_HELP)
    .option("--database <url>", DATABASE_FLAG_HELP)
    .addOption(new Option("--only <keys>", "rotate only these keys").choices(["signing", "page-tokens"]))
    .option("--drop-previous", "remove every older key now (a leaked key): tokens it signed fail from the next call")
    .action(async (o: StoreFlags & { only?: "signing" | "page-tokens"; dropPrevious?: boolean }, cmd: Command) => {
      const { rotateKeys } = await import("../../auth/key-admin.js");
      const format = resolveFormat(cmd.optsWithGlobals<{ output?: string }>().output, io.stdoutIsTty);
      const which: RotateWhich = o.only ?? "all";
      printKeys(io, format, await local(() => rotateKeys(storeTargetOf(o, io), { which, dropPrevious: o.dropPrevious === true })));
    });

  const tokens = program.command("tokens").description("API tokens: revoke them before they expire");
  tokens
    .command("revoke")
    .description("revoke one token of an identity (--jti), or every token it holds now and its refresh tokens")
    .requiredOption("--identity <uid>", "whose tokens: an identity uid, or operator:NAME for operator tokens")
    .option("--jti <jti>", "only the token with this jti claim")
    .option("--local", "write the revocation into the database instead of calling the API (operator)")
    .option("--data <dir>", `with --local: ${DATA_FLAG_HELP}`)
    .option("--database <url>", `with --local: ${DATABASE_FLAG_HELP}`)
    .action(async (o: StoreFlags & { identity: string; jti?: string; local?: boolean }, cmd: Command) => {
      const what = o.jti === undefined ? `every token of ${o.identity}` : `token ${o.jti} of ${o.identity}`;
      const problems = revocationProblems(o.identity, o.jti ?? "");
      if (problems.length > 0) throw usageError(problems.map((p) => `--${p.field} ${p.description}`).join("; "));
      if (o.local) {
        const { revokeLocally } = await import("../../auth/key-admin.js");
        const revocation = o.jti === undefined ? { subject: o.identity } : { subject: o.identity, jti: o.jti };
        await local(() => revokeLocally(storeTargetOf(o, io), revocation));
      } else {
        await clientAction(io, async (ctx) => {
          await ctx.client(TokensService).revokeTokens({ identity: o.identity, jti: o.jti ?? "" });
        })(o, cmd);
      }
      io.err(`revoked ${what}\n`);
    });
}
