/**
 * `trellis version`: this client's version and, when the server answers, the server's
 * (`GET {api}/version`, public). An unreachable server is not an error here: the client's
 * version is still the answer, and the server line says why it is missing.
 */
import type { Command } from "commander";
import { stringify as toYaml } from "yaml";
import { apiUrl, type GlobalOptions } from "../client.js";
import { CliError } from "../exit-codes.js";
import type { Io } from "../io.js";
import { httpGet } from "../network.js";
import { resolveFormat } from "../output.js";
import { trellisVersion } from "../../version.js";

export function registerVersion(program: Command, io: Io): void {
  program
    .command("version")
    .description("print the client's version and the server's (when it answers)")
    .action(async (_o: unknown, cmd: Command) => {
      const opts = cmd.optsWithGlobals<GlobalOptions>();
      const api = apiUrl(opts, io.env);
      const format = resolveFormat(opts.output, io.stdoutIsTty);
      let server: string | null = null;
      let why = "";
      try {
        const res = await httpGet(new URL("/version", api), {}, 5_000);
        const body = res.ok ? ((await res.json().catch(() => ({}))) as { version?: unknown }) : {};
        if (typeof body.version === "string") server = body.version;
        else why = `${api} answered HTTP ${res.status} without a version (is it a Trellis server?)`;
      } catch (err) {
        why = err instanceof CliError ? err.message : String(err);
      }
      const value = { client: trellisVersion(), server, api };
      if (format === "json") io.out(`${JSON.stringify(value, null, 2)}\n`);
      else if (format === "yaml") io.out(toYaml(value));
      else if (format === "id") io.out(`${value.client}\n`);
      else io.out(`client: ${value.client}\nserver: ${server ?? "unknown"} (${api})\n`);
      if (server === null) io.err(`note: no server version: ${why}\n`);
    });
}
