/**
 * `trellis auth login|token|logout|status`: getting, caching and printing API tokens.
 *
 * - `auth login`: browser login (authorization code + PKCE through a loopback redirect) at
 *   the user IdP the server names in its discovery document, or `--device` for the device
 *   flow; then the exchange at `{api}/sts/exchange` for an API token. With `--identity UID
 *   --identity-token FILE` it assumes an identity with the IdP token in FILE instead (CI).
 * - `auth token [--audience HOST]`: prints only a valid token, renewing it when needed.
 * - `auth logout`: forgets the cached login for the API. `auth status`: what is cached.
 *
 * - `auth token --local [--data DIR | --database URL] [--subject NAME] [--ttl SECONDS]`: an
 *   operator token minted from the database's signing key (src/auth/local-token.ts, docs/auth.md).
 */
import fs from "node:fs";
import { type Command, InvalidArgumentError, Option } from "commander";
import { apiUrl, connect, type GlobalOptions } from "../client.js";
import { authError, CliError, EXIT, usageError } from "../exit-codes.js";
import type { Io } from "../io.js";
import { InvitesService } from "../../../gen/trellis/iam/v1/invites_pb.js";
import { positiveInt } from "../list-walk.js";
import { DATA_FLAG_HELP, DATABASE_FLAG_HELP, print, storeTargetOf } from "./common.js";
import { roleBindingView } from "./iam-role-bindings.js";
import { apiAudience, discoverUserIdps, exchange } from "../login/exchange.js";
import { apiToken, tokenForAudience } from "../login/session.js";
import { resolveFormat } from "../output.js";
import { cacheFile, isFresh, readLogin, removeLogin, writeLogin } from "../token-cache.js";
import { stringify as toYaml } from "yaml";
import { MAX_API_TOKEN_TTL_S } from "../../auth/token-lifetime.js";

interface LoginOptions {
  device?: boolean;
  browser: boolean;
  issuer?: string;
  identity?: string;
  identityToken?: string;
  invite?: string;
}

interface TokenOptions {
  audience?: string;
  local?: boolean;
  data?: string;
  database?: string;
  subject?: string;
  ttl?: number;
}

const iso = (exp: number) => new Date(exp * 1000).toISOString();
const nowSeconds = () => Math.floor(Date.now() / 1000);

export function registerAuth(program: Command, io: Io): void {
  const auth = program.command("auth").description("log in and print API tokens");
  const api = (cmd: Command) => apiUrl(cmd.optsWithGlobals<GlobalOptions>(), io.env);

  auth
    .command("login")
    .description("log in through the browser (or --device), or assume an identity with --identity")
    .option("--device", "use the device flow: enter a code on another device (when the IdP offers it)")
    .option("--no-browser", "do not try to open a browser; just print the login URL")
    .option("--issuer <url>", "the user IdP to use when the server trusts several")
    .option("--identity <uid>", "assume this identity instead of logging in as a user")
    .option("--identity-token <file>", "file holding the IdP token that may assume --identity (re-read on renewal)")
    .option("--invite <code>", "after logging in, redeem this group invite: join its group with its role")
    .action(async (o: LoginOptions, cmd: Command) => {
      const url = api(cmd);
      if (o.invite !== undefined && o.identity !== undefined) {
        throw usageError("--invite is for people logging in as themselves; an assumed identity cannot redeem an invite");
      }
      if (o.invite !== undefined && !/^[A-Za-z0-9_-]{1,256}$/.test(o.invite)) {
        throw usageError("--invite must be the code `trellis iam invites create` printed");
      }
      if ((o.identity === undefined) !== (o.identityToken === undefined)) {
        throw usageError("--identity and --identity-token must be given together");
      }
      if (o.identity !== undefined && o.identityToken !== undefined) {
        let tokenFile: string;
        let idpToken: string;
        try {
          tokenFile = fs.realpathSync.native(o.identityToken);
          idpToken = fs.readFileSync(tokenFile, "utf8").trim();
        } catch (err) {
          throw usageError(`cannot read --identity-token ${o.identityToken}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
        }
        if (!idpToken) throw usageError(`${o.identityToken} is empty`);
        const token = await exchange(url, idpToken, apiAudience(url), o.identity);
        writeLogin(url, { source: { kind: "identity", identity: o.identity, tokenFile }, token }, io.env);
        io.err(`Logged in to ${url} as identity ${o.identity} (token valid until ${iso(token.exp)})\n`);
        return;
      }
      // openid-client is loaded only by the commands that talk to the IdP.
      const { browserLogin, deviceLogin, idpConfiguration, supportsDevice } = await import("../login/oidc.js");
      const idps = await discoverUserIdps(url);
      const idp = o.issuer ? idps.find((i) => i.issuer === o.issuer) : idps[0];
      if (!idp) throw usageError(`${url} does not trust ${o.issuer}; it trusts: ${idps.map((i) => i.issuer).join(", ")}`);
      const config = await idpConfiguration(idp);
      const log = (line: string) => io.err(`${line}\n`);
      if (o.device && !supportsDevice(config)) throw usageError(`${idp.issuer} does not offer the device flow; log in without --device`);
      const tokens = o.device
        ? await deviceLogin(config, log)
        : await browserLogin(config, { openBrowser: o.browser, offerDevice: supportsDevice(config), log });
      const token = await exchange(url, tokens.idToken.token, apiAudience(url));
      writeLogin(url, { source: { kind: "user", issuer: idp.issuer, clientId: idp.clientId, ...tokens }, token }, io.env);
      io.err(`Logged in to ${url} (token valid until ${iso(token.exp)})\n`);
      if (o.invite !== undefined) {
        // With the new login's own token, whatever --token or TRELLIS_TOKEN say.
        const ctx = await connect(cmd, io, token.token);
        const binding = await ctx.client(InvitesService).redeemGroupInvite({ code: o.invite });
        io.err(`Joined ${binding.group?.name ?? binding.group?.uid ?? "the group"} as ${binding.role?.name ?? "its role"}\n`);
        print(ctx, roleBindingView, [binding], true);
      }
    });

  auth
    .command("token")
    .description('print a valid API token (only the token), e.g. for curl -H "Authorization: Bearer $(trellis auth token)"')
    .option("--audience <host>", "a token for another audience, such as the registry host")
    .addOption(new Option("--local", "an operator token minted from the server's database (no login)"))
    .addOption(new Option("--data <dir>", `with --local: ${DATA_FLAG_HELP}`).implies({ local: true }))
    .addOption(new Option("--database <url>", `with --local: ${DATABASE_FLAG_HELP}`).implies({ local: true }))
    .addOption(new Option("--subject <name>", "with --local: names the operator (sub operator:NAME)").implies({ local: true }))
    .addOption(
      new Option("--ttl <seconds>", `with --local: lifetime in seconds (default 3600, at most ${MAX_LOCAL_TOKEN_TTL_S})`)
        .argParser(localTtl)
        .implies({ local: true }),
    )
    .action(async (o: TokenOptions, cmd: Command) => {
      if (o.local) {
        io.out(`${await localToken(o, io)}\n`);
        return;
      }
      const url = api(cmd);
      if (o.audience === undefined || o.audience === apiAudience(url)) {
        const bearer = await apiToken(url, cmd.optsWithGlobals<GlobalOptions>().token, io.env);
        if (!bearer) throw authError(`not logged in to ${url}; run \`trellis auth login\``);
        io.out(`${bearer.token}\n`);
        return;
      }
      const login = readLogin(url, io.env);
      if (!login) throw authError(`not logged in to ${url}; run \`trellis auth login\` (a token for --audience needs a login)`);
      io.out(`${(await tokenForAudience(url, login, o.audience, io.env)).token}\n`);
    });

  auth
    .command("logout")
    .description("forget the cached login for the API")
    .action((_o: object, cmd: Command) => {
      const url = api(cmd);
      io.err(removeLogin(url, io.env) ? `Logged out of ${url}\n` : `Not logged in to ${url}\n`);
    });

  auth
    .command("status")
    .description("show the cached login for the API (exit 3 when there is none or it cannot be renewed)")
    .action((_o: object, cmd: Command) => {
      const opts = cmd.optsWithGlobals<GlobalOptions>();
      const url = api(cmd);
      const format = resolveFormat(opts.output, io.stdoutIsTty);
      const login = readLogin(url, io.env);
      const source = opts.token ? "--token" : io.env.TRELLIS_TOKEN ? "TRELLIS_TOKEN" : login ? "login cache" : "none";
      const fresh = login !== undefined && isFresh(login.token, nowSeconds());
      const renewable =
        login !== undefined && (login.source.kind === "identity" || isFresh(login.source.idToken, nowSeconds()) || login.source.refreshToken !== undefined);
      const status = {
        api: url,
        tokenSource: source,
        cache: cacheFile(io.env),
        loggedIn: login !== undefined,
        ...(login && {
          as: login.source.kind === "identity" ? `identity ${login.source.identity}` : `user at ${login.source.issuer}`,
          tokenExpires: iso(login.token.exp),
          tokenValid: fresh,
          renewable,
        }),
      };
      if (format === "json") io.out(`${JSON.stringify(status, null, 2)}\n`);
      else if (format === "yaml") io.out(toYaml(status));
      else
        io.out(
          Object.entries(status)
            .map(([k, v]) => `${k}: ${String(v)}\n`)
            .join(""),
        );
      if (source === "none" && !login) throw authError(`not logged in to ${url}`);
      if (source === "login cache" && !fresh && !renewable) throw authError("the cached login has expired; run `trellis auth login`");
    });
}

/**
 * The longest an operator token may live: it owns everything, so a leaked one must expire
 * soon even if nobody notices to revoke it. Key rotation keeps an old key exactly this long
 * (src/auth/token-lifetime.ts), so the two must stay one constant.
 */
export const MAX_LOCAL_TOKEN_TTL_S = MAX_API_TOKEN_TTL_S;

function localTtl(value: string): number {
  const seconds = positiveInt(value);
  if (seconds > MAX_LOCAL_TOKEN_TTL_S) {
    throw new InvalidArgumentError(
      `at most ${MAX_LOCAL_TOKEN_TTL_S} seconds (24 hours): an operator token owns everything, so it must expire soon; mint a new one when it expires`,
    );
  }
  return seconds;
}

/** An operator token from the database; the server must have started on it once. */
async function localToken(o: TokenOptions, io: Io): Promise<string> {
  const store = storeTargetOf(o, io);
  // Loaded on use: it opens SQLite, which the client commands never need.
  const { mintLocalOperatorToken } = await import("../../auth/local-token.js");
  try {
    return await mintLocalOperatorToken({ store, subject: o.subject, ttlSeconds: o.ttl });
  } catch (err) {
    throw new CliError((err as Error).message, EXIT.failure);
  }
}
