/**
 * Global client options and what they build: the API URL, the transport (Connect or gRPC
 * through connect-node, with the generated service descriptors from gen/), the bearer token
 * and the output format. Every resource command starts from `connect(cmd, io)`.
 */
import type { DescService } from "@bufbuild/protobuf";
import { type Client, createClient, type Interceptor, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import type { Command } from "commander";
import { usageError } from "./exit-codes.js";
import type { Io } from "./io.js";
import { apiToken } from "./login/session.js";
import { plainNetworkErrors, retryReads, tlsOptions } from "./network.js";
import { type OutputFormat, resolveFormat } from "./output.js";

export const DEFAULT_API = "http://127.0.0.1:8080";
export const PROTOCOLS = ["connect", "grpc"] as const;

/** The options every client command inherits from the program. */
export interface GlobalOptions {
  readonly api?: string;
  readonly token?: string;
  readonly protocol?: (typeof PROTOCOLS)[number];
  readonly output?: string;
  readonly caCert?: string;
}

/** Everything a resource command needs to call the server and print. */
export interface CliContext {
  readonly api: string;
  readonly transport: Transport;
  readonly format: OutputFormat;
  /** `-o` as given (undefined: the default for this stdout was chosen). */
  readonly formatFlag: string | undefined;
  readonly io: Io;
  client<S extends DescService>(service: S): Client<S>;
}

/** `--api`, else TRELLIS_API, else http://127.0.0.1:8080; a usage error if it is no http(s) URL. */
export function apiUrl(opts: GlobalOptions, env: NodeJS.ProcessEnv): string {
  const api = opts.api ?? env.TRELLIS_API ?? DEFAULT_API;
  let url: URL;
  try {
    url = new URL(api);
  } catch {
    throw usageError(`--api must be a URL such as ${DEFAULT_API} (got ${JSON.stringify(api)})`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw usageError("--api must be an http:// or https:// URL");
  return api.replace(/\/+$/, "");
}

/**
 * Builds the context for a command from its (inherited) options. `token` overrides the
 * usual sources (a login that has just been made calls with its own new token).
 */
export async function connect(cmd: Command, io: Io, token?: string): Promise<CliContext> {
  const opts = cmd.optsWithGlobals<GlobalOptions>();
  const api = apiUrl(opts, io.env);
  const format = resolveFormat(opts.output, io.stdoutIsTty);
  const bearer = token !== undefined ? { token } : await apiToken(api, opts.token, io.env);
  // Outermost first: a read is retried as a whole, after its failure was made plain.
  const origin = new URL(api).origin;
  const interceptors: Interceptor[] = [retryReads(io.env), plainNetworkErrors(origin)];
  if (bearer) {
    // The token travels in the Authorization header only, never in a URL (docs/published-api.md "Credentials").
    interceptors.push((next) => (req) => {
      req.header.set("authorization", `Bearer ${bearer.token}`);
      return next(req);
    });
  }
  const transport =
    opts.protocol === "grpc"
      ? createGrpcTransport({ baseUrl: api, interceptors, nodeOptions: tlsOptions() })
      : createConnectTransport({ baseUrl: api, httpVersion: "1.1", useBinaryFormat: true, interceptors, nodeOptions: tlsOptions() });
  return { api, transport, format, formatFlag: opts.output, io, client: (service) => createClient(service, transport) };
}
